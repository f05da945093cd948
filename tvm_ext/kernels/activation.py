"""TE definitions of TFLite Micro's int8 activation kernels RELU, RELU6 (micro/kernels/activations_common.cc),
LEAKY_RELU (reference_ops::QuantizeLeakyRelu) and HARD_SWISH (reference_ops::HardSwish)."""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_int8, multiply_by_quantized_multiplier, rounding_divide_by_pot
from .quant_params import ActivationRange, HardSwishParams


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
    """out = clamp(MBQM(x', identity if x' >= 0 else alpha) + out_zp), x' = x - in_zp (QuantizeLeakyRelu)."""

    def value(*index):
        centered = _centered(data, index, input_zero_point)
        scaled = tirx.Select(centered >= 0, multiply_by_quantized_multiplier(centered, *identity, rounding),
                             multiply_by_quantized_multiplier(centered, *alpha, rounding))
        return clamp_to_int8(scaled + output_zero_point, -128, 127)

    return te.compute([int(d) for d in data.shape], value, name="leaky_relu_int8")


def relu6_int8(data: te.Tensor, *, bounds: ActivationRange) -> te.Tensor:
    """out = clamp(x, bounds): TFLM's Relu6Quantized clamps in the INPUT's quantized units and writes them
    unchanged (no rescale to the output's quantization)."""
    return te.compute([int(d) for d in data.shape],
                      lambda *index: clamp_to_int8(data(*index), bounds.low, bounds.high), name="relu6_int8")


INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


def _int16_rounding_doubling_high_mul(a: PrimExpr, b: int) -> PrimExpr:
    """gemmlowp SaturatingRoundingDoublingHighMul on int16 values (held in int32), b a compile-time
    multiplier other than INT16_MIN (so the one saturating case cannot occur)."""
    product = a * b
    nudge = tirx.Select(product >= 0, tirx.const(1 << 14, "int32"), tirx.const(1 - (1 << 14), "int32"))
    return tirx.truncdiv(product + nudge, 1 << 15)


def _int16_saturating_left_shift(value: PrimExpr, amount: int) -> PrimExpr:
    """TFLite's int16 SaturatingLeftShift: value * 2^amount clamped to int16 (computed in int64)."""
    shifted = value.astype("int64") * (1 << amount)
    return tirx.max(tirx.min(shifted, INT16_MAX), INT16_MIN).astype("int32")


def hard_swish_int8(data: te.Tensor, *, input_zero_point: int, output_zero_point: int,
                    params: HardSwishParams) -> te.Tensor:
    """TFLite's int8 HardSwish (reference_ops::HardSwish): x * relu6(x + 3) / 6 in int16 fixed point. The
    input on a 2^7 finer scale is rescaled twice: onto the output scale (before its final shift), and onto
    the "relu-ish" scale where 3.0 is 2^15, saturated to [-1, 1] and mapped to [0, 1]; their product
    (truncating doubling high mul) is shifted onto the output scale. Each step is a stage of its own: as one
    expression, the steps' repeated operands made `te.create_prim_func` take 3.7 s for one kernel whose
    relu-ish exponent is negative (0.01 s in stages; the schedule inlines or computes them per element)."""

    shape = [int(d) for d in data.shape]
    hires = te.compute(shape, lambda *index: (data(*index).astype("int32") - input_zero_point) * (1 << 7),
                       name="hires_input")

    def reluish_0_1(*index):
        exponent = params.reluish_exponent
        reluish = _int16_saturating_left_shift(hires(*index), exponent - 1) if exponent > 0 else hires(*index)
        reluish = _int16_rounding_doubling_high_mul(reluish, params.reluish_multiplier)
        if exponent > 0:
            reluish = _int16_saturating_left_shift(reluish, 1)
        elif exponent < 0:
            reluish = rounding_divide_by_pot(reluish, -exponent)
        return (reluish + (1 << 15)) >> 1

    reluish = te.compute(shape, reluish_0_1, name="reluish_0_1")
    preshift_output_scale = te.compute(
        shape, lambda *index: _int16_rounding_doubling_high_mul(hires(*index), params.output_multiplier),
        name="preshift_output_scale")
    preshift = te.compute(shape, lambda *index: tirx.truncdiv(reluish(*index) * preshift_output_scale(*index),
                                                              1 << 15), name="preshift")

    def value(*index):
        out = rounding_divide_by_pot(preshift(*index), -params.output_exponent) + output_zero_point
        return clamp_to_int8(out, -128, 127)

    return te.compute(shape, value, name="hard_swish_int8")
