"""TE definitions of TFLite Micro's int8 activation kernels RELU and RELU6 (micro/kernels/activations_common.cc)."""

from __future__ import annotations

from tvm import te

from .fixed_point import Rounding, clamp_to_int8, multiply_by_quantized_multiplier
from .quant_params import ActivationRange


def relu_int8(
    data: te.Tensor, *, input_zero_point: int, output_zero_point: int, multiplier: tuple[int, int],
    activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM(x - in_zp, multiplier) + out_zp) to ``activation`` (TFLM's ReluQuantized: a rescale
    to the output quantization, clamped at the output's zero)."""

    def value(*index):
        centered = data(*index).astype("int32") - input_zero_point
        out = multiply_by_quantized_multiplier(centered, *multiplier, rounding) + output_zero_point
        return clamp_to_int8(out, activation.low, activation.high)

    return te.compute([int(d) for d in data.shape], value, name="relu_int8")


def relu6_int8(data: te.Tensor, *, bounds: ActivationRange) -> te.Tensor:
    """out = clamp(x, bounds): TFLM's Relu6Quantized clamps in the INPUT's quantized units and writes them
    unchanged (no rescale to the output's quantization)."""
    return te.compute([int(d) for d in data.shape],
                      lambda *index: clamp_to_int8(data(*index), bounds.low, bounds.high), name="relu6_int8")
