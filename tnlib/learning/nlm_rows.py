"""Operations on one row of eight values (an NLM layer's channels) inside a contiguous array, for the numba kernels
of :mod:`tnlib.learning.nlm_kernels`, each as a few vector instructions.

numba compiles with LLVM's SLP vectoriser off, and the kernels' loops of eight iterations came out as scalar code
(reports/speed.md, part 2); nor may LLVM move one row's loads before another row's stores when it cannot tell the
two arrays apart. These intrinsics load, compute and store the whole row at once:
the same operations lane by lane as the scalar loop they replace (a multiply, then an add; no fused multiply-add),
so the same numbers bit for bit. A row is named by its array (C-contiguous, any number of dimensions) and the flat
index of its first element, not by a view (a kernel handing views to these calls ran slower than its scalar loops).
Two take a run of rows, so that a row the run keeps updating (a running max, a gradient row) stays in registers
between its steps instead of being stored and loaded straight back.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

ROW = 8


def _is_float_array(array_type) -> bool:
    return isinstance(array_type, types.Array) and array_type.layout == "C" and isinstance(array_type.dtype,
                                                                                          types.Float)


def _row_pointer(context, builder, array_type, array, index_type, index):
    """A pointer to the vector of ``ROW`` elements that starts at flat index ``index`` of the array."""
    data = context.make_array(array_type)(context, builder, array).data
    offset = context.cast(builder, index, index_type, types.intp)
    element = context.get_data_type(array_type.dtype)
    return builder.bitcast(builder.gep(data, [offset]), ir.VectorType(element, ROW).as_pointer())


def _alignment(array_type) -> int:
    return array_type.dtype.bitwidth // 8  # a row starts at any element


@intrinsic
def add_scaled_row(typingctx, target, at, source, source_at, scale):
    """``target.flat[at + k] += scale * source.flat[source_at + k]`` for k < 8, in target's dtype (source's must be
    the same)."""
    if not (_is_float_array(target) and _is_float_array(source) and target.dtype == source.dtype):
        return None

    def codegen(context, builder, signature, args):
        target_type, at_type, source_type, source_at_type, scale_type = signature.args
        align = _alignment(target_type)
        into = _row_pointer(context, builder, target_type, args[0], at_type, args[1])
        read = builder.load(_row_pointer(context, builder, source_type, args[2], source_at_type, args[3]),
                            align=align)
        vector = ir.VectorType(context.get_data_type(target_type.dtype), ROW)
        lanes = builder.insert_element(ir.Constant(vector, ir.Undefined),
                                       context.cast(builder, args[4], scale_type, target_type.dtype),
                                       ir.Constant(ir.IntType(32), 0))
        factor = builder.shuffle_vector(lanes, ir.Constant(vector, ir.Undefined),
                                        ir.Constant(ir.VectorType(ir.IntType(32), ROW), [0] * ROW))
        builder.store(builder.fadd(builder.load(into, align=align), builder.fmul(factor, read)), into, align=align)
        return context.get_dummy_value()

    return types.void(target, at, source, source_at, scale), codegen


@intrinsic
def copy_row(typingctx, target, at, source, source_at):
    """``target.flat[at + k] = source.flat[source_at + k]`` for k < 8, converted to target's (wider or equal)
    float dtype."""
    if not (_is_float_array(target) and _is_float_array(source) and target.dtype.bitwidth >= source.dtype.bitwidth):
        return None

    def codegen(context, builder, signature, args):
        target_type, at_type, source_type, source_at_type = signature.args
        read = builder.load(_row_pointer(context, builder, source_type, args[2], source_at_type, args[3]),
                            align=_alignment(source_type))
        if target_type.dtype.bitwidth > source_type.dtype.bitwidth:
            read = builder.fpext(read, ir.VectorType(context.get_data_type(target_type.dtype), ROW))
        builder.store(read, _row_pointer(context, builder, target_type, args[0], at_type, args[1]),
                      align=_alignment(target_type))
        return context.get_dummy_value()

    return types.void(target, at, source, source_at), codegen


@intrinsic
def sum_rows(typingctx, target, at, first, first_at, second, second_at, third, third_at, fourth, fourth_at):
    """``target.flat[at + k] = ((first + second) + third) + fourth``, each read at its flat index plus k, for
    k < 8 (every array of one dtype)."""
    arrays = (target, first, second, third, fourth)
    if not all(_is_float_array(array) and array.dtype == target.dtype for array in arrays):
        return None

    def codegen(context, builder, signature, args):
        align = _alignment(signature.args[0])
        rows = [builder.load(_row_pointer(context, builder, signature.args[i], args[i], signature.args[i + 1],
                                          args[i + 1]), align=align) for i in (2, 4, 6, 8)]
        total = builder.fadd(builder.fadd(builder.fadd(rows[0], rows[1]), rows[2]), rows[3])
        builder.store(total, _row_pointer(context, builder, signature.args[0], args[0], signature.args[1], args[1]),
                      align=align)
        return context.get_dummy_value()

    return types.void(target, at, first, first_at, second, second_at, third, third_at, fourth, fourth_at), codegen


@intrinsic
def extrema_row(typingctx, most, most_at, least, least_at, source, source_at):
    """``most.flat[most_at + k] = max(most.flat[most_at + k], v)`` and ``least``'s with ``min``, v the source's
    value at ``source_at + k``, for k < 8: v replaces the kept value where it is larger (smaller), as numba's
    ``max(kept, v)`` and ``min(kept, v)`` do, NaNs and signed zeros included."""
    if not all(_is_float_array(array) and array.dtype == source.dtype for array in (most, least, source)):
        return None

    def codegen(context, builder, signature, args):
        align = _alignment(signature.args[4])
        value = builder.load(_row_pointer(context, builder, signature.args[4], args[4], signature.args[5], args[5]),
                             align=align)
        for index, operator in ((0, ">"), (2, "<")):
            pointer = _row_pointer(context, builder, signature.args[index], args[index], signature.args[index + 1],
                                   args[index + 1])
            kept = builder.load(pointer, align=align)
            builder.store(builder.select(builder.fcmp_ordered(operator, value, kept), value, kept), pointer,
                          align=align)
        return context.get_dummy_value()

    return types.void(most, most_at, least, least_at, source, source_at), codegen


def _load_row(context, builder, array_type, array, index_type=types.intp, index=None):
    """The row of ``ROW`` elements at flat index ``index`` (0 when None) of the array, loaded as a vector."""
    index = context.get_constant(types.intp, 0) if index is None else index
    return builder.load(_row_pointer(context, builder, array_type, array, index_type, index),
                        align=_alignment(array_type))


def _store_row(context, builder, array_type, array, value, index_type=types.intp, index=None):
    """Store the vector ``value`` as the row at flat index ``index`` (0 when None) of the array."""
    index = context.get_constant(types.intp, 0) if index is None else index
    builder.store(value, _row_pointer(context, builder, array_type, array, index_type, index),
                  align=_alignment(array_type))


@intrinsic
def count_ties_row(typingctx, ties_most, ties_least, source, source_at, most, least):
    """``ties_most[k] += 1`` where the source's value at ``source_at + k`` equals ``most[k]``, and ``ties_least``
    likewise with ``least``, for k < 8 (counts in the arrays' float dtype; these rows start at index 0)."""
    arrays = (ties_most, ties_least, source, most, least)
    if not all(_is_float_array(array) and array.dtype == source.dtype for array in arrays):
        return None

    def codegen(context, builder, signature, args):
        kinds = signature.args
        value = _load_row(context, builder, kinds[2], args[2], kinds[3], args[3])
        one, zero = ir.Constant(value.type, [1.0] * ROW), ir.Constant(value.type, [0.0] * ROW)
        for ties, extremum in ((0, 4), (1, 5)):
            equal = builder.fcmp_ordered("==", value, _load_row(context, builder, kinds[extremum], args[extremum]))
            counted = builder.fadd(_load_row(context, builder, kinds[ties], args[ties]),
                                   builder.select(equal, one, zero))
            _store_row(context, builder, kinds[ties], args[ties], counted)
        return context.get_dummy_value()

    return types.void(ties_most, ties_least, source, source_at, most, least), codegen


@intrinsic
def add_tied_shares_row(typingctx, target, at, source, source_at, most, least, share_most, share_least):
    """``target.flat[at + k] += (share_most[k] if v == most[k] else 0) + (share_least[k] if v == least[k] else 0)``
    for k < 8, v the source's value at ``source_at + k``: the extrema's gradient at their ties (the extrema and
    shares rows start at index 0)."""
    arrays = (target, source, most, least, share_most, share_least)
    if not all(_is_float_array(array) and array.dtype == source.dtype for array in arrays):
        return None

    def codegen(context, builder, signature, args):
        kinds = signature.args
        value = _load_row(context, builder, kinds[2], args[2], kinds[3], args[3])
        zero = ir.Constant(value.type, [0.0] * ROW)
        shares = []
        for extremum, share in ((4, 6), (5, 7)):
            equal = builder.fcmp_ordered("==", value, _load_row(context, builder, kinds[extremum], args[extremum]))
            shares.append(builder.select(equal, _load_row(context, builder, kinds[share], args[share]), zero))
        total = builder.fadd(_load_row(context, builder, kinds[0], args[0], kinds[1], args[1]),
                             builder.fadd(shares[0], shares[1]))
        _store_row(context, builder, kinds[0], args[0], total, kinds[1], args[1])
        return context.get_dummy_value()

    return types.void(target, at, source, source_at, most, least, share_most, share_least), codegen


@intrinsic
def sum_rows_with_extrema(typingctx, target, at, first, first_at, second, third, third_at, fourth, fourth_at, count,
                          extrema, extrema_at):
    """For t < count: ``sum_rows`` of row t (``target``, ``first``, ``third`` and ``fourth`` read ``t * ROW`` past
    their indices, ``second`` the same row each time), and ``extrema_row`` of the sum into the rows at
    ``extrema_at`` (max) and ``extrema_at + ROW`` (min) -- the same operations in the same order, the running max
    and min kept in registers between rows instead of stored and loaded back each row (a store then a load of the
    same row: one forwarding delay a row)."""
    arrays = (target, first, second, third, fourth, extrema)
    if not all(_is_float_array(array) and array.dtype == target.dtype for array in arrays):
        return None

    def codegen(context, builder, signature, args):
        kinds = signature.args
        indices = [context.cast(builder, args[i], kinds[i], types.intp) for i in (1, 3, 6, 8, 11)]
        at, first_at, third_at, fourth_at, extrema_at = indices
        row = context.get_constant(types.intp, ROW)
        most_at = extrema_at
        least_at = builder.add(extrema_at, row)
        most = _load_row(context, builder, kinds[10], args[10], types.intp, most_at)
        least = _load_row(context, builder, kinds[10], args[10], types.intp, least_at)
        carried_most = cgutils.alloca_once_value(builder, most)
        carried_least = cgutils.alloca_once_value(builder, least)
        base = _load_row(context, builder, kinds[4], args[4])
        count = context.cast(builder, args[9], kinds[9], types.intp)
        with cgutils.for_range(builder, count) as loop:
            offset = builder.mul(loop.index, row)
            rows = [_load_row(context, builder, kinds[i], args[i], types.intp, builder.add(index, offset))
                    for i, index in ((2, first_at), (5, third_at), (7, fourth_at))]
            total = builder.fadd(builder.fadd(builder.fadd(rows[0], base), rows[1]), rows[2])
            _store_row(context, builder, kinds[0], args[0], total, types.intp, builder.add(at, offset))
            for carried, operator in ((carried_most, ">"), (carried_least, "<")):
                kept = builder.load(carried)
                builder.store(builder.select(builder.fcmp_ordered(operator, total, kept), total, kept), carried)
        _store_row(context, builder, kinds[10], args[10], builder.load(carried_most), types.intp, most_at)
        _store_row(context, builder, kinds[10], args[10], builder.load(carried_least), types.intp, least_at)
        return context.get_dummy_value()

    return types.void(target, at, first, first_at, second, third, third_at, fourth, fourth_at, count, extrema,
                      extrema_at), codegen


def _element(context, builder, array_type, array, index):
    """The element at flat index ``index`` (intp) of a C-contiguous array."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.load(builder.gep(data, [index]))


def _splat(builder, value, vector_type):
    """``value`` in every lane of a vector of ``ROW`` elements."""
    lanes = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(lanes, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), ROW), [0] * ROW))


@intrinsic
def scatter_source_row(typingctx, grad_x, x_at, x, w, grad_w, pre, channels, count, first_row):
    """A source row's part of a sparse backward's scatter: for e < count, c = ``channels[e]``, s = ``pre[c]`` and
    weight row ``first_row + c``: ``add_scaled_row(grad_x, x_at, w, row * ROW, s)`` and ``add_scaled_row(grad_w,
    row * ROW, x's row at x_at widened to grad_w's dtype, s widened)`` -- the same operations in the same order,
    with x's widened row and grad_x's row kept in registers across the channels instead of stored and loaded back
    for each (``x``, ``w``, ``grad_x`` and ``pre`` of one dtype, ``grad_w`` of the same or a wider one)."""
    floats = (grad_x, x, w, grad_w, pre)
    if not (all(_is_float_array(array) for array in floats) and grad_x.dtype == x.dtype == w.dtype == pre.dtype
            and grad_w.dtype.bitwidth >= x.dtype.bitwidth and isinstance(channels, types.Array)
            and channels.layout == "C" and isinstance(channels.dtype, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        kinds = signature.args
        x_at, count, first_row = (context.cast(builder, args[i], kinds[i], types.intp) for i in (1, 7, 8))
        narrow, wide = (context.get_data_type(kinds[i].dtype) for i in (0, 4))
        narrow_row, wide_row = ir.VectorType(narrow, ROW), ir.VectorType(wide, ROW)
        x_row = _load_row(context, builder, kinds[2], args[2], types.intp, x_at)
        wide_x = builder.fpext(x_row, wide_row) if wide != narrow else x_row
        grad_x_row = cgutils.alloca_once_value(builder, _load_row(context, builder, kinds[0], args[0], types.intp,
                                                                  x_at))
        row_size = context.get_constant(types.intp, ROW)
        with cgutils.for_range(builder, count) as loop:
            channel = context.cast(builder, _element(context, builder, kinds[6], args[6], loop.index),
                                   kinds[6].dtype, types.intp)
            share = _element(context, builder, kinds[5], args[5], channel)
            at = builder.mul(builder.add(first_row, channel), row_size)
            weighted = builder.fmul(_splat(builder, share, narrow_row),
                                    _load_row(context, builder, kinds[3], args[3], types.intp, at))
            builder.store(builder.fadd(builder.load(grad_x_row), weighted), grad_x_row)
            wide_share = builder.fpext(share, wide) if wide != narrow else share
            updated = builder.fadd(_load_row(context, builder, kinds[4], args[4], types.intp, at),
                                   builder.fmul(_splat(builder, wide_share, wide_row), wide_x))
            _store_row(context, builder, kinds[4], args[4], updated, types.intp, at)
        _store_row(context, builder, kinds[0], args[0], builder.load(grad_x_row), types.intp, x_at)
        return context.get_dummy_value()

    return types.void(grad_x, x_at, x, w, grad_w, pre, channels, count, first_row), codegen
