"""Operations on one row of eight values (an NLM layer's channels) inside a contiguous array, for the numba kernels
of :mod:`tnlib.learning.nlm_kernels`, each as a few vector instructions.

numba compiles with LLVM's SLP vectoriser off, and the kernels' loops of eight iterations came out as scalar code
(reports/speed.md, part 2); nor may LLVM move one row's loads before another row's stores when it cannot tell the
two arrays apart. These intrinsics load, compute and store the whole row at once:
the same operations lane by lane as the scalar loop they replace (a multiply, then an add; no fused multiply-add),
so the same numbers bit for bit. A row is named by its array (C-contiguous, any number of dimensions) and the flat
index of its first element, not by a view (a kernel handing views to these calls ran slower than its scalar loops).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
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
