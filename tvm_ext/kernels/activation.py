"""TE definitions of TFLite Micro's integer activation kernels RELU, RELU6 (micro/kernels/activations_common.cc),
LEAKY_RELU (reference_ops::QuantizeLeakyRelu) and ABS (elementwise.cc), each int8 or int16 (16x8); HARD_SWISH is an
int8 table lookup (``int8_tables``, ``lookup``)."""

from __future__ import annotations

from typing import Optional

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_type, multiply_by_quantized_multiplier
from .quant_params import ActivationRange


def relu_int8(
    data: te.Tensor, *, input_zero_point: int, output_zero_point: int, multiplier: tuple[int, int],
    activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM(x - in_zp, multiplier) + out_zp) to ``activation`` (TFLM's ReluQuantized: a rescale
    to the output quantization, clamped at the output's zero), in the input's type (int8, or int16)."""

    def value(*index):
        out = multiply_by_quantized_multiplier(_centered(data, index, input_zero_point), *multiplier, rounding)
        return clamp_to_type(out + output_zero_point, activation.low, activation.high, str(data.dtype))

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
    unchanged (no rescale to the output's quantization), in the input's type (int8, or int16)."""
    return te.compute([int(d) for d in data.shape],
                      lambda *index: clamp_to_type(data(*index), bounds.low, bounds.high, str(data.dtype)),
                      name="relu6_int8")


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
