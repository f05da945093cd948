"""ARG_MAX and ARG_MIN: ``astype(argmax|argmin(x, axis), int32|int64)`` on an int8 tensor already lowered
(tvm_ext/frontend/tflite_ops/arg_max.py) -> TFLite's ARG_MAX / ARG_MIN kernel, ties to the first index."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_op, wildcard

from ...kernels.arg_max import arg_max_int8
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch


def _lowering(kind: str, relax_op: str, largest: bool) -> Lowering:
    reduction = is_op(relax_op)(wildcard())
    result = is_op("relax.astype")(reduction)

    def completes(value: relax.Expr, ctx: LoweringContext) -> bool:
        """The cast of an argmax (argmin) of an int8 tensor already lowered."""
        matched = result.extract_matched_expr(value, ctx.graph.var2val)
        return matched is not None and matched[reduction].args[0] in ctx.lowered

    def match(cast: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        reduced = result.extract_matched_expr(cast, ctx.graph.var2val)[reduction]
        output_dtype = str(cast.attrs.dtype)
        if output_dtype not in ("int32", "int64") or reduced.attrs.axis is None or bool(reduced.attrs.keepdims):
            return Mismatch(f"{relax_op} to {output_dtype}")
        rank = len(reduced.args[0].ty.shape)
        return FixedCall(KernelCall(kind, reduced, arg_max_int8, (ctx.lowered[reduced.args[0]],),
                                    {"axis": int(reduced.attrs.axis) % rank, "output_dtype": output_dtype,
                                     "largest": largest}))

    return Lowering(frozenset({kind}), completes, match)


ARG_MAX = _lowering("ARG_MAX", "relax.argmax", largest=True)
ARG_MIN = _lowering("ARG_MIN", "relax.argmin", largest=False)
