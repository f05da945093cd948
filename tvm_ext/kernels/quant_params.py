"""Compile-time quantization parameters, computed the way TFLite Micro's Prepare() computes them.

Pure Python/numpy (no TVM): multipliers and shifts become immediates or int32/int8 constants of the
integer kernels. Facts re-derived from tensorflow/lite/kernels/internal/quantization_util.cc and
tensorflow/lite/kernels/kernel_util.cc; scales are float32 values as stored in the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .fixed_point import INT32_MAX, Rounding

INT8_MIN, INT8_MAX = -128, 127


def quantize_multiplier(real_multiplier: float, rounding: Rounding) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31)."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    q_fixed = _round_half_away(fraction * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if rounding is Rounding.SINGLE and shift > 30:
        return (1 << 31) - 1, 30
    return int(q_fixed), int(shift)


def round_half_away(values: np.ndarray) -> np.ndarray:
    """std::round of each value: the nearest whole number, ties away from zero (float64)."""
    values = np.asarray(values, np.float64)
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def _round_half_away(x: float) -> int:
    """std::round of one value, as an int."""
    return int(round_half_away(x))


def quantize_real(value: float, scale: np.float32, zero_point: int) -> int:
    """TFLite's Quantize() used for activation bounds: zero_point + round(float32(value / scale))."""
    return zero_point + _round_half_away(float(np.float32(value) / np.float32(scale)))


@dataclass(frozen=True)
class ActivationRange:
    """Inclusive bounds of a fused activation (RELU/RELU6 as a clamp), in output quantized units: int8's by
    default, ``of_dtype`` for another output type (int16 in 16x8 operators)."""

    low: int = INT8_MIN
    high: int = INT8_MAX

    @classmethod
    def of_dtype(cls, dtype: str) -> "ActivationRange":
        """No activation: the whole range of the integer output type ``dtype``."""
        info = np.iinfo(dtype)
        return cls(int(info.min), int(info.max))

    def intersect(self, low: int, high: int) -> "ActivationRange":
        return ActivationRange(max(self.low, low), min(self.high, high))

    def with_float_clip(self, low: float, high: float, scale: np.float32, zero_point: int) -> "ActivationRange":
        """Apply a float-domain clip [low, high] (RELU is low=0, high=inf) as TFLite quantizes its bounds."""
        q_low = quantize_real(low, scale, zero_point) if math.isfinite(low) else self.low
        q_high = quantize_real(high, scale, zero_point) if math.isfinite(high) else self.high
        return self.intersect(q_low, q_high)


def conv_multipliers(
    input_scale: np.float32, filter_scales: np.ndarray, output_scale: np.float32, rounding: Rounding
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multiplier, shift) of CONV_2D/DEPTHWISE_CONV_2D and per-channel FULLY_CONNECTED.

    effective = double(input_scale) * double(filter_scale[c]) / double(output_scale).
    """
    pairs = [
        quantize_multiplier(float(input_scale) * float(s) / float(output_scale), rounding)
        for s in np.asarray(filter_scales, dtype=np.float32).reshape(-1)
    ]
    return np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int32)


def fully_connected_multiplier(
    input_scale: np.float32, filter_scale: np.float32, output_scale: np.float32, rounding: Rounding
) -> tuple[int, int]:
    """Per-tensor FULLY_CONNECTED: the scale product is taken in float32 before widening to double."""
    product = np.float32(input_scale) * np.float32(filter_scale)
    return quantize_multiplier(float(product) / float(output_scale), rounding)


@dataclass(frozen=True)
class AddParams:
    """TFLite int8 ADD, SUB, SQUARED_DIFFERENCE: both centered inputs are shifted left by ``left_shift`` bits,
    then rescaled to a common scale; ``output`` rescales the result."""

    left_shift: int
    input1: tuple[int, int]
    input2: tuple[int, int]
    output: tuple[int, int]


def _common_scale_params(scale1: np.float32, scale2: np.float32, left_shift: int,
                         output_real: Callable[[float], float], rounding: Rounding) -> AddParams:
    """Both inputs rescaled to twice the larger input scale; ``output_real(twice_max)`` is the output's ratio."""
    twice_max = 2.0 * float(max(np.float32(scale1), np.float32(scale2)))
    return AddParams(
        left_shift=left_shift,
        input1=quantize_multiplier(float(scale1) / twice_max, rounding),
        input2=quantize_multiplier(float(scale2) / twice_max, rounding),
        output=quantize_multiplier(output_real(twice_max), rounding),
    )


def add_params(scale1: np.float32, scale2: np.float32, output_scale: np.float32, rounding: Rounding) -> AddParams:
    """Multipliers of TFLite's int8 ADD and SUB (micro/kernels/add_common.cc, sub_common.cc)."""
    return _add_params_shifted(scale1, scale2, output_scale, rounding, left_shift=20)


def add_params_int16(scale1: np.float32, scale2: np.float32, output_scale: np.float32,
                     rounding: Rounding) -> AddParams:
    """Multipliers of TFLite Micro's int16 ADD: the int8 arithmetic with a left shift of 15 (add_common.cc)."""
    return _add_params_shifted(scale1, scale2, output_scale, rounding, left_shift=15)


def _add_params_shifted(scale1: np.float32, scale2: np.float32, output_scale: np.float32, rounding: Rounding,
                        left_shift: int) -> AddParams:
    return _common_scale_params(scale1, scale2, left_shift,
                                lambda twice_max: twice_max / ((1 << left_shift) * float(output_scale)), rounding)


def squared_difference_params(scale1: np.float32, scale2: np.float32, output_scale: np.float32,
                              rounding: Rounding) -> AddParams:
    """Multipliers of TFLM's int8 SQUARED_DIFFERENCE: ADD's common scale with a left shift of 7; the output
    ratio undoes both shifts of the squared difference."""
    return _squared_difference_params_shifted(scale1, scale2, output_scale, rounding, left_shift=7)


def squared_difference_params_int16(scale1: np.float32, scale2: np.float32, output_scale: np.float32,
                                    rounding: Rounding) -> AddParams:
    """Multipliers of TFLM's int16 SQUARED_DIFFERENCE (zero points 0): the int8 arithmetic with no left shift, as
    the int16 values already fill 16 bits (squared_difference.cc)."""
    return _squared_difference_params_shifted(scale1, scale2, output_scale, rounding, left_shift=0)


def _squared_difference_params_shifted(scale1: np.float32, scale2: np.float32, output_scale: np.float32,
                                       rounding: Rounding, left_shift: int) -> AddParams:
    # (1 << 2 * left_shift) * output_scale is a float32 product in TFLM (exact: a power of two).
    denominator = float(np.float32((1 << (2 * left_shift)) * np.float32(output_scale)))
    return _common_scale_params(scale1, scale2, left_shift,
                                lambda twice_max: twice_max * twice_max / denominator, rounding)


@dataclass(frozen=True)
class MulParams:
    """TFLite int8 MUL: one rescale of the product of the centered inputs."""

    output: tuple[int, int]


def mul_params(scale1: np.float32, scale2: np.float32, output_scale: np.float32, rounding: Rounding) -> MulParams:
    """Multiplier of TFLite's int8 MUL (micro/kernels/mul_common.cc): scale1 * scale2 / output_scale in double."""
    return MulParams(quantize_multiplier(float(scale1) * float(scale2) / float(output_scale), rounding))


def rescale_multiplier(input_scale: np.float32, output_scale: np.float32, rounding: Rounding) -> tuple[int, int]:
    """(multiplier, shift) of input_scale / output_scale in double (TFLM's CalculateReluOpData)."""
    return quantize_multiplier(float(input_scale) / float(output_scale), rounding)


@dataclass(frozen=True)
class LeakyReluParams:
    """TFLite int8 LEAKY_RELU: the rescale of non-negative and of negative centered inputs."""

    identity: tuple[int, int]
    alpha: tuple[int, int]


def leaky_relu_params(input_scale: np.float32, alpha: np.float32, output_scale: np.float32,
                      rounding: Rounding) -> LeakyReluParams:
    """TFLM's LeakyReluPrepare, both ratios as the tflite-micro package computes them: in double (its source
    divides in float32, but its int16 results on every input of TFLM's own 16x8 LEAKY_RELU models agree only with
    double ratios)."""
    identity = float(np.float32(input_scale)) / float(np.float32(output_scale))
    alpha_ratio = float(np.float32(input_scale)) * float(np.float32(alpha)) / float(np.float32(output_scale))
    return LeakyReluParams(quantize_multiplier(identity, rounding), quantize_multiplier(alpha_ratio, rounding))


def float_to_quantized(value: float, scale: np.float32, zero_point: int, dtype: str) -> int:
    """TFLM's FloatToQuantizedType<int8_t or int16_t>: quantize_real, saturated to the integer type ``dtype``."""
    limits = ActivationRange.of_dtype(dtype)
    return min(max(quantize_real(value, scale, zero_point), limits.low), limits.high)


SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5


@dataclass(frozen=True)
class SoftmaxParams:
    """TFLite int8 SOFTMAX: input scaling into Q5.26 and the smallest difference that still counts."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int


def softmax_params(beta: float, input_scale: np.float32, rounding: Rounding) -> SoftmaxParams:
    """PreprocessSoftmaxScaling + CalculateInputRadius for kScaledDiffIntegerBits = 5."""
    bits = SOFTMAX_SCALED_DIFF_INTEGER_BITS
    max_real = float((1 << 30) - 1) if rounding is Rounding.SINGLE else float((1 << 31) - 1)
    real = min(float(beta) * float(input_scale) * (1 << (31 - bits)), max_real)
    multiplier, left_shift = quantize_multiplier(real, rounding)
    radius = math.floor(((1 << bits) - 1) * (1 << (31 - bits)) / (1 << left_shift))
    return SoftmaxParams(multiplier, left_shift, -radius)


LOGISTIC_INPUT_INTEGER_BITS = 4


@dataclass(frozen=True)
class LogisticParams:
    """TFLite int8 LOGISTIC and TANH: the rescale of the centered input into Q4.27 and the radius beyond
    which the output saturates (in input units)."""

    input_zero_point: int
    input_multiplier: int
    input_left_shift: int
    input_range_radius: int


def logistic_params(input_scale: np.float32, input_zero_point: int) -> LogisticParams:
    """TFLM's CalculateArithmeticOpData (logistic and tanh) for int8: frexp of scale * 2^27, then
    CalculateInputRadius."""
    bits = LOGISTIC_INPUT_INTEGER_BITS
    fraction, left_shift = math.frexp(float(input_scale) * float(1 << (31 - bits)))
    multiplier = _round_half_away(fraction * (1 << 31))
    radius = math.floor(math.ldexp(((1 << bits) - 1) * float(1 << (31 - bits)), -left_shift))
    return LogisticParams(input_zero_point, multiplier, left_shift, radius)


def checked_log2(value: float) -> tuple[int, bool]:
    """TFLite's CheckedLog2 of a float32 ``value``: (log2 computed in float32, rounded half away from zero; whether
    ``value`` is a power of two, the rounding's difference under 1e-3)."""
    log2 = np.float32(np.log(np.float32(value))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    rounded = np.float32(np.sign(log2) * np.floor(np.abs(log2) + np.float32(0.5)))
    return int(rounded), bool(np.abs(np.float32(log2 - rounded)) < np.float32(1e-3))


INT16_SIGMOID_OUTPUT_POWER = -15
"""The output scale TFLite Micro's int16 LOGISTIC and TANH require: 2^-15 (Q0.15), zero point 0."""


@dataclass(frozen=True)
class Int16SigmoidScaling:
    """TFLite Micro's int16 LOGISTIC and TANH input rescale into the sigmoid table's fixed point (3 * 2^12 per
    unit): ``(x * multiplier + 2^(right_shift - 1)) >> right_shift`` (no rounding term for a shift of 0), as their
    Eval computes it (a power-of-two scale's multiplier 0 already replaced by its ``3 << shift``)."""

    multiplier: int
    right_shift: int


INT16_SIGMOID_LARGEST_MULTIPLIER = 32767  # TFLM's bound (a DCHECK): x * multiplier then fits int32


def int16_sigmoid_scaling(input_scale: np.float32, power_of_two_shifts: tuple[int, ...]
                          ) -> Optional[Int16SigmoidScaling]:
    """TFLM's CalculateArithmeticOpData (TANH) and CalculateArithmeticOpDataLogistic for an int16 input of
    ``input_scale``: a power-of-two scale whose left shift 12 + log2(scale) is one of ``power_of_two_shifts``
    (LOGISTIC (0,), TANH (0, 1)) is the multiplier 3 << shift; any other scale is ``scale * 3 * 4096`` in double,
    doubled while at most 32767 / 2 (and the shift at most 30), then truncated. None where the multiplier
    exceeds INT16_SIGMOID_LARGEST_MULTIPLIER (an input scale above 2.67, which TFLM does not check in release)."""
    power, is_power_of_two = checked_log2(input_scale)
    left_shift = 12 + power
    if is_power_of_two and left_shift in power_of_two_shifts:
        return Int16SigmoidScaling(3 << left_shift, 0)
    multiplier, right_shift = float(np.float32(input_scale)) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and right_shift <= 30:
        right_shift += 1
        multiplier *= 2.0
    if int(multiplier) > INT16_SIGMOID_LARGEST_MULTIPLIER:
        return None
    return Int16SigmoidScaling(int(multiplier), right_shift)


@dataclass(frozen=True)
class HardSwishParams:
    """TFLite int8 HARD_SWISH: int16 fixed-point multipliers (Q0.15) and exponents of the two rescales."""

    output_multiplier: int
    output_exponent: int  # <= 0 (TFLite refuses a model needing a left shift here)
    reluish_multiplier: int
    reluish_exponent: int


def _int16_multiplier(multiplier: int) -> int:
    """TFLite's DownScaleInt32ToInt16Multiplier: a Q0.31 multiplier rounded to Q0.15."""
    rounding_offset = 1 << 15
    if multiplier >= INT32_MAX - rounding_offset:
        return (1 << 15) - 1
    return (multiplier + rounding_offset) >> 16


def hard_swish_params(input_scale: np.float32, output_scale: np.float32, rounding: Rounding) -> HardSwishParams:
    """TFLM's HardSwishPrepare: the ratios are float32 quotients, widened to double."""
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(input_scale)
    reluish_scale = np.float32(3.0) / np.float32(32768.0)
    output_multiplier, output_exponent = quantize_multiplier(float(hires_input_scale / np.float32(output_scale)), rounding)
    reluish_multiplier, reluish_exponent = quantize_multiplier(float(hires_input_scale / reluish_scale), rounding)
    return HardSwishParams(_int16_multiplier(output_multiplier), output_exponent,
                           _int16_multiplier(reluish_multiplier), reluish_exponent)


def rsqrt_multiplier(input_scale: np.float32, output_scale: np.float32, rounding: Rounding) -> tuple[int, int]:
    """TFLM's SetRsqrtOutputMultiplier 1 / (sqrt(input_scale) * output_scale) as the tflite-micro package computes
    it: in double (as ``leaky_relu_params``: its source takes the product in float32, but its int16 results on
    every non-negative input agree only with the double one)."""
    product = np.sqrt(float(np.float32(input_scale))) * float(np.float32(output_scale))
    return quantize_multiplier(1.0 / product, rounding)


DIV_LARGEST_SHIFT = 21
"""The largest shift of a DIV's rescale whose exponents (``elementwise.div_int8``) stay >= 0: TFLite would shift
by a negative amount beyond it (a rescale of 2^21 and more)."""


def div_multiplier(scale1: np.float32, scale2: np.float32, output_scale: np.float32,
                   rounding: Rounding) -> tuple[int, int]:
    """TFLM's int8 DIV rescale scale1 / (scale2 * output_scale), as the tflite-micro package computes it: in double
    (its results on every pair of int8 operands of four quantizations, ties included, agree only with that)."""
    return quantize_multiplier(float(scale1) / (float(scale2) * float(output_scale)), rounding)


def abs_multiplier(input_scale: np.float32, output_scale: np.float32, rounding: Rounding) -> Optional[tuple[int, int]]:
    """TFLM's ABS rescale (SetAbsOutputMultiplier) input_scale / output_scale as the tflite-micro package computes
    it: in double (as ``leaky_relu_params``: its int16 results on every input agree only with that); None when the
    scales are equal (TFLM then adds the zero point alone)."""
    if np.float32(input_scale) == np.float32(output_scale):
        return None
    return quantize_multiplier(float(np.float32(input_scale)) / float(np.float32(output_scale)), rounding)
