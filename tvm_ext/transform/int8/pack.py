"""PACK of int8 activations: ``stack([x0, x1, ...], axis)`` of the int8 tensors themselves (our frontend's
converter, ``tvm_ext.frontend.tflite_ops.pack``) -> a copy kernel, as TFLite Micro's kernel copies the stored values."""

from __future__ import annotations

from tvm import relax, topi

from .graph import is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext


def _values(stack: relax.Expr, ctx: LoweringContext) -> list[relax.Expr]:
    """The stacked tensors (empty when ``stack`` is not a stack, or one of them is not an int8 activation)."""
    if not is_call_to(stack, "relax.stack"):
        return []
    values = ctx.graph.value_of(stack.args[0])
    if not isinstance(values, relax.Tuple) or any(value not in ctx.lowered for value in values.fields):
        return []
    return [ctx.lowered[value] for value in values.fields]


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return bool(_values(value, ctx))


def _match(stack: relax.Call, ctx: LoweringContext) -> FixedCall:
    axis = int(stack.attrs.axis) % len(stack.ty.shape)
    return FixedCall(KernelCall("PACK", stack, topi.stack, (_values(stack, ctx),), {"axis": axis}))


LOWERING = Lowering(frozenset({"PACK"}), _completes, _match)
