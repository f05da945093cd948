"""Compile-time lookup tables of the int8 kernels whose per-element work depends on one int8 value.

An int8 input has 256 values, so TFLite Micro's fixed-point LOGISTIC and TANH (reference_integer_ops::Logistic,
::Tanh), HARD_SWISH (reference_ops::HardSwish) and LEAKY_RELU (reference_ops::QuantizeLeakyRelu), and its int8 ADD,
SUB and MUL of an activation and a constant scalar, are, for one input quantization (and output quantization,
rounding, constant), a 256-byte table of outputs; the exp term of its int8
SOFTMAX (reference_ops::Softmax) depends only on the difference of the input to its row maximum, an integer in
[-255, 0], so it is a table of 256 int32 values. Each table is computed here with the same integer functions
(``fixed_point_numpy``) and becomes a constant operand (a weight, in flash) of its kernel.
"""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

from . import fixed_point_numpy as fp
from .fixed_point import Rounding
from .quant_params import (LOGISTIC_INPUT_INTEGER_BITS, SOFTMAX_SCALED_DIFF_INTEGER_BITS, ActivationRange, AddParams,
                           HardSwishParams, LeakyReluParams, LogisticParams, MulParams, SoftmaxParams)

INT8_VALUES = np.arange(-128, 128, dtype=np.int64)  # the table index is the input value + 128
TABLE_SIZE = len(INT8_VALUES)
LOGISTIC_OUTPUT_ZERO_POINT = -128
LOGISTIC_OUTPUT_INTEGER_BITS = 8  # the Q0.31 result is divided by 2^(31 - 8): 256 levels over [0, 1)
TANH_OUTPUT_INTEGER_BITS = 7  # 2^(31 - 7): 128 levels over [0, 1), zero point 0

Q0_31Function = Callable[[np.ndarray, int], np.ndarray]  # (raw values, integer bits) -> Q0.31


def _saturating_function_table(params: LogisticParams, rounding: Rounding, function: Q0_31Function,
                               output_integer_bits: int, output_zero_point: int) -> np.ndarray:
    """The int8 output for each int8 input (index: input + 128) of TFLM's int8 LOGISTIC/TANH: the centered
    input rescaled into Q4.27, ``function`` of it rounded to the output, -128 / 127 beyond the input radius."""
    centered = INT8_VALUES - params.input_zero_point
    input_q4_27 = fp.multiply_by_quantized_multiplier(centered, params.input_multiplier, params.input_left_shift,
                                                      rounding)
    value = fp.rounding_divide_by_pot(function(input_q4_27, LOGISTIC_INPUT_INTEGER_BITS), 31 - output_integer_bits)
    output = np.clip(value + output_zero_point, -128, 127)
    output = np.where(centered <= -params.input_range_radius, -128, output)
    return np.where(centered >= params.input_range_radius, 127, output).astype(np.int8)


def logistic_table(params: LogisticParams, rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLM's int8 LOGISTIC of input ``index - 128``; output scale 1/256, zero point -128."""
    return _saturating_function_table(params, rounding, fp.logistic, LOGISTIC_OUTPUT_INTEGER_BITS,
                                      LOGISTIC_OUTPUT_ZERO_POINT)


def tanh_table(params: LogisticParams, rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLM's int8 TANH of input ``index - 128``; output scale 1/128, zero point 0."""
    return _saturating_function_table(params, rounding, fp.tanh, TANH_OUTPUT_INTEGER_BITS, 0)


def softmax_exp_table(params: SoftmaxParams, rounding: Rounding) -> np.ndarray:
    """int32[256]: the Q0.31 exp term of TFLM's int8 SOFTMAX for an input ``index`` below its row maximum:
    exp of the difference -index rescaled into Q5.26 (beta and the input scale are in ``params``), 0 where the
    difference is below ``params.diff_min`` (TFLM leaves those out of the sum and writes -128 for them)."""
    difference = -np.arange(TABLE_SIZE, dtype=np.int64)
    scaled = fp.multiply_by_quantized_multiplier(difference, params.input_multiplier, params.input_left_shift,
                                                 rounding)
    exp = fp.exp_on_negative_values(scaled, SOFTMAX_SCALED_DIFF_INTEGER_BITS)
    return np.where(difference >= params.diff_min, exp, 0).astype(np.int32)


PAIR_DIFFERENCES = 2 * TABLE_SIZE - 1
"""The entries of `softmax_pair_table`: one per difference of two int8 values, -255..255."""


def softmax_pair_table(params: SoftmaxParams, rounding: Rounding, out_dtype: str = "int8") -> np.ndarray:
    """int8[511] (``out_dtype`` "int16": int16[511]): TFLM's int8 SOFTMAX of a row of two, the output of an element
    ``index - 255`` above the other (a row of two is a function of its one difference: the larger element's exp
    term is the table's term 0, the other's term ``k`` for a difference ``k``). Each entry is the row's arithmetic
    (``softmax_exp_table``'s terms, their Q12.19 sum, its gemmlowp reciprocal, each output scaled to 1/256 and
    offset by -128, or for TFLM's int8-in, int16-out softmax to 1/65536 and offset by -32768) in int64 numpy."""
    bits = np.iinfo(out_dtype).bits
    low, high = int(np.iinfo(out_dtype).min), int(np.iinfo(out_dtype).max)
    terms = softmax_exp_table(params, rounding).astype(np.int64)
    table = np.empty(PAIR_DIFFERENCES, out_dtype)
    for k in range(TABLE_SIZE):
        larger, smaller = terms[0], terms[k]
        total = int(fp.rounding_divide_by_pot(larger, 12) + fp.rounding_divide_by_pot(smaller, 12))
        headroom = 32 - total.bit_length()
        reciprocal = fp.one_over_one_plus_x(np.int64((total << headroom) - (1 << 31)))
        exponent = 12 - headroom + 31 - bits  # the sum's bits over the unit + 31 - the output's bits
        for index, term in ((TABLE_SIZE - 1 + k, larger), (TABLE_SIZE - 1 - k, smaller)):
            value = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(reciprocal, term), exponent)
            table[index] = np.clip(int(value) + low, low, high)
    return table


def hard_swish_table(input_zero_point: int, output_zero_point: int, params: HardSwishParams) -> np.ndarray:
    """int8[256]: TFLM's int8 HARD_SWISH of input ``index - 128``, x * relu6(x + 3) / 6 in int16 fixed point.

    The centered input on a 2^7 finer scale is rescaled twice: onto the output scale (before its final shift),
    and onto the "relu-ish" scale where 3.0 is 2^15, saturated to [-1, 1] and mapped to [0, 1]; their product
    (truncating doubling high mul) is shifted onto the output scale (``params.output_exponent`` <= 0)."""
    hires = (INT8_VALUES - input_zero_point) * (1 << 7)
    exponent = params.reluish_exponent
    reluish = fp.int16_saturating_left_shift(hires, exponent - 1) if exponent > 0 else hires
    reluish = fp.int16_rounding_doubling_high_mul(reluish, params.reluish_multiplier)
    if exponent > 0:
        reluish = fp.int16_saturating_left_shift(reluish, 1)
    elif exponent < 0:
        reluish = fp.rounding_divide_by_pot(reluish, -exponent)
    reluish_0_1 = (reluish + (1 << 15)) >> 1
    preshift_output = fp.int16_rounding_doubling_high_mul(hires, params.output_multiplier)
    preshift = fp.truncating_divide_by_pot(reluish_0_1 * preshift_output, 15)
    output = fp.rounding_divide_by_pot(preshift, -params.output_exponent) + output_zero_point
    return np.clip(output, -128, 127).astype(np.int8)


def leaky_relu_table(input_zero_point: int, output_zero_point: int, params: LeakyReluParams,
                     rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLM's int8 LEAKY_RELU of input ``index - 128`` (QuantizeLeakyRelu): the centered input
    rescaled by ``params.identity`` where it is >= 0, by ``params.alpha`` where it is negative, plus the output
    zero point, saturated to int8."""
    centered = INT8_VALUES - input_zero_point
    rescaled = np.where(centered >= 0, fp.multiply_by_quantized_multiplier(centered, *params.identity, rounding),
                        fp.multiply_by_quantized_multiplier(centered, *params.alpha, rounding))
    return np.clip(rescaled + output_zero_point, -128, 127).astype(np.int8)


def binary_scalar_table(kind: str, input_zero_point: int, constant: int, constant_zero_point: int,
                        input_is_lhs: bool, output_zero_point: int, params: Union[AddParams, MulParams],
                        activation: ActivationRange, rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLite's int8 ADD, SUB (add_common.cc, sub_common.cc: both centered operands shifted left by
    ``params.left_shift``, rescaled to a common scale, added or subtracted, the sum rescaled) or MUL
    (mul_common.cc: the product of the centered operands rescaled) of input ``index - 128`` and the int8
    ``constant`` (a scalar; the left operand where not ``input_is_lhs``), plus the output zero point, clamped
    to ``activation``."""
    centered, other = INT8_VALUES - input_zero_point, np.int64(constant - constant_zero_point)
    lhs, rhs = (centered, other) if input_is_lhs else (other, centered)
    if kind == "MUL":
        raw = lhs * rhs
    else:
        scaled_lhs = fp.multiply_by_quantized_multiplier(lhs << params.left_shift, *params.input1, rounding)
        scaled_rhs = fp.multiply_by_quantized_multiplier(rhs << params.left_shift, *params.input2, rounding)
        raw = scaled_lhs + scaled_rhs if kind == "ADD" else scaled_lhs - scaled_rhs
    output = fp.multiply_by_quantized_multiplier(raw, *params.output, rounding) + output_zero_point
    return np.clip(output, activation.low, activation.high).astype(np.int8)


def gated_product_table(gate: str, gate_params: LogisticParams, input_zero_point: int, output_zero_point: int,
                        params: MulParams, activation: ActivationRange, rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLite's int8 MUL (mul_common.cc) of input ``index - 128`` and the int8 ``gate`` ("LOGISTIC" or
    "TANH") of that same input, as TFLM computes the gate (``logistic_table``, ``tanh_table`` of ``gate_params``, its
    output quantization TFLite's fixed one): a swish x * sigmoid(x) is a function of one int8 value. Plus the output
    zero point, clamped to ``activation``."""
    gated = (logistic_table, LOGISTIC_OUTPUT_ZERO_POINT) if gate == "LOGISTIC" else (tanh_table, 0)
    values = gated[0](gate_params, rounding).astype(np.int64) - gated[1]
    raw = (INT8_VALUES - input_zero_point) * values
    output = fp.multiply_by_quantized_multiplier(raw, *params.output, rounding) + output_zero_point
    return np.clip(output, activation.low, activation.high).astype(np.int8)


def rescaled_operand_table(zero_point: int, left_shift: int, multiplier_shift: tuple[int, int], plus: int,
                           rounding: Rounding) -> np.ndarray:
    """int32[256]: an int8 operand of TFLite's ADD, SUB or SQUARED_DIFFERENCE on the operator's common scale,
    MultiplyByQuantizedMultiplier((input - zero_point) << left_shift, multiplier, shift) + ``plus`` (add_common.cc;
    ``elementwise._rescaled``'s value, a function of the one int8 value) of the input whose uint8 bits are the
    index (0..127 the non-negative inputs, 128..255 the negative ones: the kernel indexes by the byte itself)."""
    inputs = np.arange(TABLE_SIZE, dtype=np.uint8).view(np.int8).astype(np.int64)  # the int8 of each index's bits
    centered = (inputs - zero_point) << left_shift
    return (fp.multiply_by_quantized_multiplier(centered, *multiplier_shift, rounding) + plus).astype(np.int32)


def scaled_operand_table(zero_point: int, left_shift: int, multiplier_shift: tuple[int, int], times: int, plus: int,
                         rounding: Rounding) -> np.ndarray:
    """int32[256]: ``times`` an int8 operand's rescaled value of TFLite's ADD, SUB or SQUARED_DIFFERENCE
    (``rescaled_operand_table`` without a constant added) plus ``plus`` (the other operand's zero point term where
    that operand is not tabled), indexed as it: ``times`` 2 or -2 (SUB's subtrahend), values whose sum with the other
    operand's is twice ADD's raw sum, which ``elementwise.add_from_values``' doubling high product takes as it is;
    1 or -1, SQUARED_DIFFERENCE's difference."""
    scaled = times * rescaled_operand_table(zero_point, left_shift, multiplier_shift, 0, rounding).astype(np.int64)
    return (scaled + plus).astype(np.int32)


RSQRT_SHIFT = 20  # TFLM's kShift: 1/sqrt(x) is taken as an integer scaled by 2^20 before the output rescale


def rsqrt_table(input_zero_point: int, output_zero_point: int, multiplier: tuple[int, int],
                rounding: Rounding) -> np.ndarray:
    """int8[256]: TFLM's int8 RSQRT (elementwise.cc, RsqrtEvalQuantized) of input ``index - 128``.

    x = input - input_zero_point; 1/sqrt(x) as GetInvSqrtQuantizedMultiplierExp's multiplier and shift, made an
    integer scaled by 2^20 (MultiplyByQuantizedMultiplier of 1), rescaled by ``multiplier`` (rsqrt_multiplier's
    (multiplier, shift)) over 2^20, plus the output zero point, saturated. x = 0 gives 127. TFLM refuses to run
    on x < 0 (its Invoke fails: "Rsqrt is only defined for positive values"); the table holds 127 there too."""
    centered = INT8_VALUES - input_zero_point
    inv_sqrt, inv_sqrt_shift = fp.inv_sqrt_quantized_multiplier(np.maximum(centered, 0))
    output_multiplier, output_shift = multiplier
    outputs = []
    for x, m, s in zip(centered, inv_sqrt, inv_sqrt_shift):
        if x <= 0:
            outputs.append(127)
            continue
        scaled = fp.multiply_by_quantized_multiplier(np.int64(1), int(m), int(s) + RSQRT_SHIFT, rounding)
        value = fp.multiply_by_quantized_multiplier(scaled, output_multiplier, output_shift - RSQRT_SHIFT, rounding)
        outputs.append(int(value) + output_zero_point)
    return np.clip(outputs, -128, 127).astype(np.int8)


DIVISORS = np.arange(257, dtype=np.int64)  # |x - zero_point| of an int8 divisor: 0 to 256


def reciprocal_tables() -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal(d, 31) of each divisor d of DIVISORS (the index): the Q0.31 multiplier of 1/d
    (int32[257]) and its shift, the bits of d above one (int8[257]). d is normalised into [1, 2) by its leading
    zeros and 1/d taken by gemmlowp's one_over_one_plus_x of the fraction. For d = 0 (TFLite's DCHECK, off in
    release builds) the entry is what TFLite computes on Arm and x86 alike: its uint32 shift by 32 leading
    zeros gives 0 there, a fraction of -1 and a shift of -1."""
    leading_zeros = 32 - np.array([int(d).bit_length() for d in DIVISORS])
    shifted = np.where(leading_zeros < 32, DIVISORS << np.minimum(leading_zeros, 31), 0) & 0xFFFFFFFF
    multipliers = fp.one_over_one_plus_x(shifted - (1 << 31))  # (d << clz) - 1.0 as Q0.31
    return multipliers.astype(np.int32), (31 - leading_zeros).astype(np.int8)
