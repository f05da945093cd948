"""RESHAPE of an int8 tensor: a copy kernel with the new shape (the frontend writes ``reshape(x)``)."""

from __future__ import annotations

from tvm import relax, topi
from tvm.relax.dpl import is_op, wildcard

from .lowering import FixedCall, KernelCall, Lowering, LoweringContext

_RESHAPE = is_op("relax.reshape")(wildcard(), wildcard())


def _ends_reshape(value: relax.Expr, ctx: LoweringContext) -> bool:
    return bool(_RESHAPE.match(value)) and value.args[0] in ctx.lowered


def _match(reshape: relax.Call, ctx: LoweringContext) -> FixedCall:
    shape = [int(d) for d in reshape.ty.shape]
    return FixedCall(KernelCall("RESHAPE", reshape, topi.reshape, (ctx.lowered[reshape.args[0]], shape)))


LOWERING = Lowering(frozenset({"RESHAPE"}), _ends_reshape, _match)
