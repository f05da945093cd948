"""RSQRT: ``q(rsqrt(dq(x)))`` -> TFLite Micro's int8 RSQRT (its own fixed-point 1/sqrt, elementwise.cc), a lookup
of the int8 input in the 256-entry table of its outputs (``kernels.int8_tables.rsqrt_table``)."""

from __future__ import annotations

from typing import Union

from tvm import relax

from ...kernels.int8_tables import rsqrt_table
from ...kernels.quant_params import rsqrt_multiplier
from .lowering import FixedCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, ends_float_operator
from .tables import lookup_call, table_constant

_PATTERN = QuantizedUnary("relax.rsqrt")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = _PATTERN.match(quantize, ctx)
    if isinstance(unary, Mismatch):
        return unary
    multiplier = rsqrt_multiplier(unary.data.quant.scale, unary.out.scale, ctx.rounding)
    table = table_constant(rsqrt_table, unary.data.quant.zero_point, unary.out.zero_point, multiplier, ctx.rounding)
    return FixedCall(lookup_call("RSQRT", unary.matched[_PATTERN.core], unary.data.tensor, table))


LOWERING = Lowering(frozenset({"RSQRT"}), ends_float_operator, match)
