"""ABS: ``q(abs(dq(x)))`` of int8 (or int16: 16x8, zero points 0 as TFLite Micro requires) -> TFLite Micro's
quantized ABS (elementwise.cc AbsEvalQuantized)."""

from __future__ import annotations

from typing import Union

from tvm import relax

from ...kernels.activation import abs_integer
from ...kernels.quant_params import abs_multiplier
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, ends_float_operator

_PATTERN = QuantizedUnary("relax.abs")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = _PATTERN.match(quantize, ctx)
    if isinstance(unary, Mismatch):
        return unary
    data, out = unary.data, unary.out
    if str(quantize.ty.dtype) == "int16" and (data.quant.zero_point, out.zero_point) != (0, 0):
        return Mismatch("ABS of int16 with a zero point (TFLite Micro requires 0)")
    return FixedCall(KernelCall("ABS", unary.matched[_PATTERN.core], abs_integer, (data.tensor,),
                                {"input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                                 "multiplier": abs_multiplier(data.quant.scale, out.scale, ctx.rounding),
                                 "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"ABS"}), ends_float_operator, match)
