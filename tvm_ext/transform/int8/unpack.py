"""UNPACK of an int8 activation: each output ``take(x, i, axis)`` (our frontend's converter,
``tvm_ext.frontend.tflite_ops.unpack``) -> a copy kernel of that slice, as TFLite Micro's kernel copies the stored values;
an input whose axis has size one (UNPACK into one output) is only reshaped, a view."""

from __future__ import annotations

from tvm import relax, topi

from ...kernels.unpack import unpack_piece
from .graph import is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    """Whether ``value`` takes one constant index of an int8 activation already lowered."""
    return (is_call_to(value, "relax.take") and value.args[0] in ctx.lowered
            and ctx.graph.constant(value.args[1]) is not None and ctx.graph.constant(value.args[1]).ndim == 0)


def _match(take: relax.Call, ctx: LoweringContext) -> FixedCall:
    data = ctx.lowered[take.args[0]]
    axis = int(take.attrs.axis) % len(take.args[0].ty.shape)
    if int(take.args[0].ty.shape[axis]) == 1:
        shape = [int(size) for size in take.ty.shape]
        return FixedCall(KernelCall("UNPACK", take, topi.reshape, (data,), {"newshape": shape}))
    index = int(ctx.graph.constant(take.args[1]))
    return FixedCall(KernelCall("UNPACK", take, unpack_piece, (data,), {"axis": axis, "index": index}))


LOWERING = Lowering(frozenset({"UNPACK"}), _completes, _match)
