"""TE definitions of TFLite Micro's int8 activation kernels RELU, RELU6 (micro/kernels/activations_common.cc),
LEAKY_RELU (reference_ops::QuantizeLeakyRelu, int8 or int16) and ABS (elementwise.cc, int8 or int16); HARD_SWISH is
a table lookup (``int8_tables``, ``lookup``)."""

from __future__ import annotations

from typing import Optional

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_int8, clamp_to_type, multiply_by_quantized_multiplier
from .quant_params import ActivationRange


def relu_int8(
    data: te.Tensor, *, input_zero_point: int, output_zero_point: int, multiplier: tuple[int, int],
    activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM(x - in_zp, multiplier) + out_zp) to ``activation`` (TFLM's ReluQuantized: a rescale
    to the output quantization, clamped at the output's zero)."""

    def value(*index):
        out = multiply_by_quantized_multiplier(_centered(data, index, input_zero_point), *multiplier, rounding)
        return clamp_to_int8(out + output_zero_point, activation.low, activation.high)

    return te.compute([int(d) for d in data.shape], value, name="relu_int8")


def _centered(data: te.Tensor, index, zero_point: int) -> PrimExpr:
    return data(*index).astype("int32") - zero_point


def leaky_relu_int8(
    data: te.Tensor, *, input_zero_point: int, output_zero_point: int, identity: tuple[int, int],
    alpha: tuple[int, int], rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM(x', identity if x' >= 0 else alpha) + out_zp), x' = x - in_zp (QuantizeLeakyRelu), in the
    input's type: int8, or int16 (TFLite Micro's 16x8 LEAKY_RELU: the same arithmetic, saturated to int16)."""
    limits = ActivationRange.of_dtype(str(data.dtype))

    def value(*index):
        centered = _centered(data, index, input_zero_point)
        scaled = tirx.Select(centered >= 0, multiply_by_quantized_multiplier(centered, *identity, rounding),
                             multiply_by_quantized_multiplier(centered, *alpha, rounding))
        return clamp_to_type(scaled + output_zero_point, limits.low, limits.high, str(data.dtype))

    return te.compute([int(d) for d in data.shape], value, name="leaky_relu_int8")


def relu6_int8(data: te.Tensor, *, bounds: ActivationRange) -> te.Tensor:
    """out = clamp(x, bounds): TFLM's Relu6Quantized clamps in the INPUT's quantized units and writes them
    unchanged (no rescale to the output's quantization)."""
    return te.compute([int(d) for d in data.shape],
                      lambda *index: clamp_to_int8(data(*index), bounds.low, bounds.high), name="relu6_int8")


def abs_integer(data: te.Tensor, *, input_zero_point: int, output_zero_point: int,
                multiplier: Optional[tuple[int, int]], rounding: Rounding) -> te.Tensor:
    """out = clamp(|x - in_zp| + out_zp), |x - in_zp| first rescaled by ``multiplier`` (MBQM) when the input's and
    output's scales differ (None when they are equal), in the input's type: TFLM's AbsEvalQuantized."""
    limits = ActivationRange.of_dtype(str(data.dtype))

    def value(*index):
        magnitude = tirx.abs(_centered(data, index, input_zero_point))
        if multiplier is not None:
            magnitude = multiply_by_quantized_multiplier(magnitude, *multiplier, rounding)
        return clamp_to_type(magnitude + output_zero_point, limits.low, limits.high, str(data.dtype))

    return te.compute([int(d) for d in data.shape], value, name="abs_integer")
