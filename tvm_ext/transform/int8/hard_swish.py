"""HARD_SWISH: the TFLite frontend's ``q(x * clip(x + 3, 0, 6) / 6)`` (ONNX's: ``q(x * (clip(x + 3, 0, 6) / 6))``)
with ``x = dq(a)`` -> TFLite's integer
HARD_SWISH kernel, a lookup of the int8 input in the 256-entry table of its outputs (``kernels.int8_tables``)."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from ...kernels.int8_tables import hard_swish_table
from ...kernels.quant_params import hard_swish_params
from .lowering import FixedCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary
from .tables import lookup_call, table_constant

_INPUT = DequantizedActivation()
_PLUS_THREE = is_op("relax.add")(_INPUT.pattern, is_const())
_RELU6 = is_op("relax.clip")(_PLUS_THREE, wildcard(), wildcard())
_DIVIDED = is_op("relax.divide")(is_op("relax.multiply")(_INPUT.pattern, _RELU6), is_const())
_SCALED = is_op("relax.divide")(_RELU6, is_const())  # ONNX's HardSwish: x * (clip(x + 3, 0, 6) / 6)
_MULTIPLIED = is_op("relax.multiply")(_INPUT.pattern, _SCALED)
_RESULT = is_op("relax.quantize")(_DIVIDED | _MULTIPLIED, is_const(), is_const())


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = match_unary(_RESULT, _INPUT, quantize, ctx)
    if unary is None:
        return float_operator_mismatch(quantize, ctx)
    matched = unary.matched
    divide, result = (matched[_DIVIDED],) * 2 if _DIVIDED in matched else (matched[_SCALED], matched[_MULTIPLIED])
    constants = (ctx.graph.constant(matched[_PLUS_THREE].args[1]), ctx.graph.constant(divide.args[1]))
    bounds = tuple(float(arg.value) for arg in matched[_RELU6].args[1:3])
    params = hard_swish_params(unary.data.quant.scale, unary.out.scale, ctx.rounding)
    if [float(c) for c in constants] != [3.0, 6.0] or bounds != (0.0, 6.0) or params.output_exponent > 0:
        return float_operator_mismatch(quantize, ctx)
    table = table_constant(hard_swish_table, unary.data.quant.zero_point, unary.out.zero_point, params)
    return FixedCall(lookup_call("HARD_SWISH", result, unary.data.tensor, table))


LOWERING = Lowering(frozenset({"HARD_SWISH"}), ends_float_operator, match)
