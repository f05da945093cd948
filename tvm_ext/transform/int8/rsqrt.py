"""RSQRT: ``q(rsqrt(dq(x)))`` -> TFLite Micro's integer RSQRT (its own fixed-point 1/sqrt, elementwise.cc): of an
int8 input a lookup in the 256-entry table of its outputs (``kernels.int8_tables.rsqrt_table``); of an int16 one
(16x8: zero points 0) TFLM's arithmetic per element (``kernels.rsqrt_int16``)."""

from __future__ import annotations

from typing import Union

from tvm import relax

from ...kernels.int8_tables import rsqrt_table
from ...kernels.quant_params import rsqrt_multiplier
from ...kernels.rsqrt_int16 import rsqrt_int16
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, ends_float_operator, float_operator_mismatch
from .tables import lookup_call, table_constant

_PATTERN = QuantizedUnary("relax.rsqrt")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = _PATTERN.match(quantize, ctx)
    if isinstance(unary, Mismatch):
        return unary
    multiplier = rsqrt_multiplier(unary.data.quant.scale, unary.out.scale, ctx.rounding)
    dtypes = (str(unary.data.tensor.ty.dtype), str(quantize.ty.dtype))
    core = unary.matched[_PATTERN.core]
    if dtypes == ("int16", "int16") and unary.data.quant.zero_point == unary.out.zero_point == 0:
        return FixedCall(KernelCall("RSQRT", core, rsqrt_int16, (unary.data.tensor,),
                                    {"multiplier": multiplier, "rounding": ctx.rounding}))
    if dtypes != ("int8", "int8"):
        return float_operator_mismatch(quantize, ctx)
    table = table_constant(rsqrt_table, unary.data.quant.zero_point, unary.out.zero_point, multiplier, ctx.rounding)
    return FixedCall(lookup_call("RSQRT", core, unary.data.tensor, table))


LOWERING = Lowering(frozenset({"RSQRT"}), ends_float_operator, match)
