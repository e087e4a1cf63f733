"""Operations on one row of eight values (an NLM layer's channels) inside a contiguous array, for the numba kernels
of :mod:`tnlib.learning.nlm_kernels`, each as a few vector instructions.

numba compiles with LLVM's SLP vectoriser off, and its loop vectoriser leaves a loop of eight iterations scalar
(its vector body starts at two or more vectors' worth); nor may LLVM move one row's loads before another row's
stores when it cannot tell the two arrays apart. These intrinsics load, compute and store the whole row at once:
the same operations lane by lane as the scalar loop they replace (a multiply, then an add; no fused multiply-add),
so the same numbers bit for bit. A row is named by its array (C-contiguous, any number of dimensions) and the flat
index of its first element, not by a view: a view passed to a call holds a reference the kernel must count.
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
def widen_row(typingctx, target, at, source, source_at):
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
