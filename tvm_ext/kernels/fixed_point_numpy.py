"""gemmlowp's and TFLite's fixed-point functions on numpy arrays, evaluated at compile time.

The int8 kernels whose per-element work depends on one int8 value (LOGISTIC, TANH, the exp term of SOFTMAX)
read a 256-entry table instead of evaluating these per element in C; this module computes such tables. Every
function takes and returns int64 arrays holding int32 values (raw fixed-point numbers) and reproduces the
int32 arithmetic of gemmlowp's fixedpoint.h and TFLite's common.h exactly (products are formed in int64, as
the C does). The run-time TIR forms of the same primitives are in ``fixed_point``.
"""

from __future__ import annotations

import numpy as np

from .fixed_point import INT32_MAX, INT32_MIN, Rounding

# Q0.31 constants of gemmlowp's exp: exp(-1/8), 1/3, and exp(-2^k) for k = -2..4.
EXP_MINUS_ONE_EIGHTH = 1895147668
ONE_THIRD = 715827883
EXP_BARREL_SHIFTER = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                      (2, 39332535), (3, 720401), (4, 242))
# Q2.29 constants of the Newton-Raphson reciprocal: 48/17 and -32/17.
FORTY_EIGHT_SEVENTEENTHS = 1515870810
MINUS_THIRTY_TWO_SEVENTEENTHS = -1010580540


def truncating_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """C's ``x / 2^exponent`` on int64: the quotient truncated toward zero."""
    return np.where(x >= 0, x >> exponent, -((-x) >> exponent))


def saturating_rounding_doubling_high_mul(a: np.ndarray, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul: (a*b + nudge) / 2^31 truncated, INT32_MAX for MIN*MIN."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    high = truncating_divide_by_pot(product + np.where(product >= 0, 1 << 30, 1 - (1 << 30)), 31)
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent to nearest, ties away from zero (0 <= exponent <= 31)."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def saturating_left_shift(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent: x * 2^exponent saturated to int32."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return ((x - INT32_MIN) & 0xFFFFFFFF) + INT32_MIN


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int, rounding: Rounding) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier(int32 x, multiplier >= 0, shift): DOUBLE rounding (left shift with
    int32 wrap-around, doubling high mul, rounding right shift) or SINGLE (one rounding of the 64-bit product)."""
    x = np.asarray(x, np.int64)
    if rounding is Rounding.SINGLE:
        total_shift = 31 - shift
        return (x * multiplier + (1 << (total_shift - 1))) >> total_shift
    high = saturating_rounding_doubling_high_mul(_wrap_int32(x * (1 << max(shift, 0))), multiplier)
    return rounding_divide_by_pot(high, max(-shift, 0))


def _exp_on_interval_between_negative_one_quarter_and_zero(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), both Q0.31: gemmlowp's Taylor expansion around -1/8."""
    mul = saturating_rounding_doubling_high_mul
    x = a + (1 << 28)
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4_over_4 = rounding_divide_by_pot(mul(x2, x2), 2)
    poly = rounding_divide_by_pot(mul(x4_over_4 + x3, ONE_THIRD) + x2, 1)
    return EXP_MINUS_ONE_EIGHTH + mul(EXP_MINUS_ONE_EIGHTH, x + poly)


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values of raw values a <= 0 with ``integer_bits`` integer bits, as Q0.31."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_between_negative_one_quarter_and_zero(saturating_left_shift(a_mod, integer_bits))
    remainder = a_mod - a
    for exponent, multiplier in EXP_BARREL_SHIFTER:
        if exponent < integer_bits:  # else a remainder bit the input cannot have
            bit = 1 << (fractional_bits + exponent)
            result = np.where(remainder & bit, saturating_rounding_doubling_high_mul(result, multiplier), result)
    return np.where(a == 0, INT32_MAX, result)


def _half_denominator_reciprocal(a: np.ndarray) -> np.ndarray:
    """2/(1+a) as Q2.29 for a Q0.31 a in [0, 1]: three Newton-Raphson steps from 48/17 - 32/17 * d,
    d = (1+a)/2 (gemmlowp's RoundingHalfSum of a and one)."""
    mul = saturating_rounding_doubling_high_mul
    total = a + INT32_MAX
    half_denominator = truncating_divide_by_pot(total + np.where(total >= 0, 1, -1), 1)
    x = FORTY_EIGHT_SEVENTEENTHS + mul(half_denominator, MINUS_THIRTY_TWO_SEVENTEENTHS)
    for _ in range(3):  # int32 additions wrap as in C, which only an a outside [0, 1] makes overflow
        x = _wrap_int32(x + saturating_left_shift(mul(x, (1 << 29) - mul(half_denominator, x)), 2))
    return x


def one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 of a Q0.31 a in [0, 1), as Q0.31."""
    return saturating_left_shift(_half_denominator_reciprocal(a), 1)


def one_minus_x_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """gemmlowp one_minus_x_over_one_plus_x_for_x_in_0_1 of a Q0.31 a in [0, 1], as Q0.31."""
    return saturating_left_shift(_half_denominator_reciprocal(a) - (1 << 29), 2)


def logistic(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp logistic of raw values with ``integer_bits`` integer bits, as Q0.31: 1/(1 + exp(-|a|)),
    mirrored as 1 - that for a < 0; exactly 1/2 at 0."""
    on_positive = one_over_one_plus_x(exp_on_negative_values(-np.abs(a), integer_bits))
    return np.where(a == 0, 1 << 30, np.where(a > 0, on_positive, INT32_MAX - on_positive))


def tanh(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp tanh of raw values with ``integer_bits`` integer bits, as Q0.31: (1 - e)/(1 + e) with
    e = exp(-2|a|) (the same raw value read with one more integer bit), negated for a < 0; 0 at 0."""
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(-np.abs(a), integer_bits + 1))
    return np.where(a == 0, 0, np.where(a < 0, -t, t))


INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


def int16_rounding_doubling_high_mul(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul of int16 values, ``b`` a multiplier other than INT16_MIN (the
    one saturating case cannot occur): (a*b + nudge) / 2^15 truncated, nudge 2^14 or 1 - 2^14 by the sign."""
    product = a * b
    return truncating_divide_by_pot(product + np.where(product >= 0, 1 << 14, 1 - (1 << 14)), 15)


def int16_saturating_left_shift(x: np.ndarray, amount: int) -> np.ndarray:
    """TFLite's int16 SaturatingLeftShift: x * 2^amount clamped to int16."""
    return np.clip(x * (1 << amount), INT16_MIN, INT16_MAX)


# Q3.28 constants of TFLite's inverse square root (Newton-Raphson): 3/2, and sqrt(2)/2 in Q0.31.
THREE_HALVES_Q3_28 = (1 << 28) + (1 << 27)
HALF_SQRT_TWO_Q0_31 = 1518500250
INV_SQRT_ITERATIONS = 5


def inv_sqrt_quantized_multiplier(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(x, kReverseShift = -1) of int32 values x >= 0: (multiplier,
    shift) with 1/sqrt(x) ~= multiplier * 2^(shift - 31) (shift <= 0); x <= 1 gives (INT32_MAX, 0).

    x is normalised by pairs of bits into [2^27, 2^29), read as Q3.28 (of half its value), and five
    Newton-Raphson steps x' = 3/2 x - x/2 * x^3 from 1 run in gemmlowp's Q3.28; the result times sqrt(2)/2."""
    x = np.asarray(x, np.int64)
    small = x <= 1
    x = np.where(small, 2, x)
    right_pairs = np.maximum(0, _bit_length(x) - 28) // 2  # TFLite's divisions by 4 while x >= 2^29
    x = x >> (2 * right_pairs)
    left_pairs = (31 - _bit_length(x)) // 2 - 1  # (CountLeadingZeros(x) - 1) / 2 - 1
    x = x << (2 * left_pairs)
    shift = 11 + right_pairs - left_pairs
    mul = saturating_rounding_doubling_high_mul
    half_input = rounding_divide_by_pot(x >> 1, 1)
    estimate = np.full(x.shape, 1 << 28, np.int64)  # 1 in Q3.28
    for _ in range(INV_SQRT_ITERATIONS):
        cube = saturating_left_shift(mul(mul(estimate, estimate), estimate), 6)  # Q9 rescaled to Q3
        estimate = saturating_left_shift(mul(THREE_HALVES_Q3_28, estimate) - mul(half_input, cube), 3)
    multiplier = mul(estimate, HALF_SQRT_TWO_Q0_31)
    multiplier = np.where(shift < 0, _wrap_int32(multiplier << np.maximum(-shift, 0)), multiplier)
    shift = -np.maximum(shift, 0)
    return np.where(small, INT32_MAX, multiplier), np.where(small, 0, shift)


def _bit_length(x: np.ndarray) -> np.ndarray:
    """The bit length of each non-negative int64 value (0 for 0)."""
    x = np.asarray(x, np.int64)
    length = np.zeros(x.shape, np.int64)
    for bit in range(63):
        length = np.where(x >> bit > 0, bit + 1, length)
    return length

