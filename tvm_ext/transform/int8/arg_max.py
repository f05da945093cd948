"""ARG_MAX: ``astype(argmax(x, axis), int32|int64)`` on an int8 tensor already lowered (tvm_ext/frontend/tflite_ops/arg_max.py)
-> TFLite's ARG_MAX kernel, ties to the first index."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_op, wildcard

from ...kernels.arg_max import arg_max_int8
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch

_ARG_MAX = is_op("relax.argmax")(wildcard())
_RESULT = is_op("relax.astype")(_ARG_MAX)


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    """The cast of an argmax of an int8 tensor already lowered."""
    matched = _RESULT.extract_matched_expr(value, ctx.graph.var2val)
    return matched is not None and matched[_ARG_MAX].args[0] in ctx.lowered


def _match(cast: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    arg_max = _RESULT.extract_matched_expr(cast, ctx.graph.var2val)[_ARG_MAX]
    output_dtype = str(cast.attrs.dtype)
    if output_dtype not in ("int32", "int64") or arg_max.attrs.axis is None or bool(arg_max.attrs.keepdims):
        return Mismatch(f"relax.argmax to {output_dtype}")
    rank = len(arg_max.args[0].ty.shape)
    return FixedCall(KernelCall("ARG_MAX", arg_max, arg_max_int8, (ctx.lowered[arg_max.args[0]],),
                                {"axis": int(arg_max.attrs.axis) % rank, "output_dtype": output_dtype}))


LOWERING = Lowering(frozenset({"ARG_MAX"}), _completes, _match)
