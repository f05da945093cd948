"""RELU and RELU6 of an int8 activation, or an int16 one (16x8, zero points 0 as TFLite Micro requires):
``q(relu(dq(x)))`` and ``q(clip(dq(x), 0, 6))`` -> TFLite Micro's integer kernels (a fused activation of another
operator is part of that operator's pattern instead)."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard

from ...kernels import relu6_int8, relu_int8
from ...kernels.quant_params import ActivationRange, float_to_quantized, rescale_multiplier
from .lowering import ClampedCall, FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary

RELU6_BOUNDS = (0.0, 6.0)  # the float clip the frontend imports RELU6 as

_RELU_INPUT, _RELU6_INPUT = DequantizedActivation(), DequantizedActivation()
_RELU = is_op("relax.nn.relu")(_RELU_INPUT.pattern)
_RELU6 = is_op("relax.clip")(_RELU6_INPUT.pattern, wildcard(), wildcard())


def _quantized(core: DFPattern) -> DFPattern:
    return is_op("relax.quantize")(core, is_const(), is_const())


_RELU_RESULT, _RELU6_RESULT = _quantized(_RELU), _quantized(_RELU6)


def match_relu(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    unary = match_unary(_RELU_RESULT, _RELU_INPUT, quantize, ctx)
    if unary is None:
        return float_operator_mismatch(quantize, ctx)
    data, out, dtype = unary.data, unary.out, str(quantize.ty.dtype)
    if dtype == "int16" and (data.quant.zero_point, out.zero_point) != (0, 0):
        return Mismatch("RELU of int16 with a zero point (TFLite Micro requires 0)")
    call = KernelCall("RELU", unary.matched[_RELU], relu_int8, (data.tensor,),
                      {"input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                       "multiplier": rescale_multiplier(data.quant.scale, out.scale, ctx.rounding),
                       "rounding": ctx.rounding})
    activation = ActivationRange.of_dtype(dtype).with_float_clip(0.0, float("inf"), out.scale, out.zero_point)
    return ClampedCall(call, activation)


def match_relu6(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = match_unary(_RELU6_RESULT, _RELU6_INPUT, quantize, ctx)
    if unary is None or tuple(float(arg.value) for arg in unary.matched[_RELU6].args[1:3]) != RELU6_BOUNDS:
        return float_operator_mismatch(quantize, ctx)
    quant, dtype = unary.data.quant, str(quantize.ty.dtype)
    bounds = ActivationRange(float_to_quantized(0.0, quant.scale, quant.zero_point, dtype),
                             float_to_quantized(6.0, quant.scale, quant.zero_point, dtype))
    return FixedCall(KernelCall("RELU6", unary.matched[_RELU6], relu6_int8, (unary.data.tensor,), {"bounds": bounds}))


RELU = Lowering(frozenset({"RELU"}), ends_float_operator, match_relu)
RELU6 = Lowering(frozenset({"RELU6"}), ends_float_operator, match_relu6)
