"""MEAN and SUM: ``q(mean|sum(dq(x), axis, keepdims))`` -> TFLite Micro's integer QuantizedMeanOrSum."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax

from ...kernels import Rounding
from ...kernels.reduce import mean_or_sum_int8
from ...kernels.reduce_params import ReduceParams, mean_params, sum_params
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, ends_float_operator

ParamsOf = Callable[[np.float32, np.float32, int, Rounding], ReduceParams]


def _reduce_lowering(kind: str, relax_op: str, params_of: ParamsOf) -> Lowering:
    """The lowering of the TFLite reducer ``kind``, which the frontend writes as ``relax_op`` in QDQ form."""
    pattern = QuantizedUnary(relax_op)

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        unary = pattern.match(quantize, ctx)
        if isinstance(unary, Mismatch):
            return unary
        data, out, core = unary.data, unary.out, unary.matched[pattern.core]
        shape = [int(d) for d in core.args[0].ty.shape]
        axes = sorted({int(a) % len(shape) for a in core.attrs.axis} if core.attrs.axis is not None
                      else range(len(shape)))
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0:
            return Mismatch(f"{relax_op} over an empty axis")
        params = params_of(data.quant.scale, out.scale, count, ctx.rounding)
        return FixedCall(KernelCall(kind, core, mean_or_sum_int8, (data.tensor,),
                                    {"axes": axes, "keepdims": bool(core.attrs.keepdims),
                                     "input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                                     "multiplier": params.multiplier, "shift": params.shift,
                                     "rounding": ctx.rounding}))

    return Lowering(frozenset({kind}), ends_float_operator, match)


MEAN = _reduce_lowering("MEAN", "relax.mean", mean_params)
def _sum_params(input_scale: np.float32, output_scale: np.float32, count: int, rounding: Rounding) -> ReduceParams:
    """SUM's rescale, which does not depend on the element count."""
    del count
    return sum_params(input_scale, output_scale, rounding)


SUM = _reduce_lowering("SUM", "relax.sum", _sum_params)
