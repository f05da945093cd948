"""The bundle's requantization helpers: TFLite's MultiplyByQuantizedMultiplier as `static inline` C.

Written once in `<model>_internal.h` and called from every integer kernel as
`<prefix>_requantize_<rounding>(acc, multiplier, shift)` (`tvm_ext.kernels.fixed_point` names the call).
Bit-exact with TFLite (tensorflow/lite/kernels/internal/common.{h,cc}, gemmlowp fixedpoint.h), re-derived:

- "double" (TFLite's default): SaturatingRoundingDoublingHighMul(x * 2^max(shift, 0), multiplier), then
  RoundingDivideByPOT by max(-shift, 0); INT32_MIN * INT32_MIN saturates to INT32_MAX.
- "single" (TFLITE_SINGLE_ROUNDING, CMSIS-NN): (x * multiplier + 2^(30 - shift)) >> (31 - shift).
- "double_right_shift": "double" where the caller guarantees shift < 0 and multiplier != INT32_MIN (a layer
  whose every channel's constants are so, as TFLite's QuantizeMultiplier gives for scales below 1/2): no left
  shift, the high multiply cannot saturate, and the rounding right shift is three instructions on Arm.
- "double_small": "double_right_shift" where the caller also guarantees -2^30 <= acc < 2^30 (known at
  compile time from the weights, bias and input range): 2 * acc is an int32, so the doubling high multiply
  is the high word of a rounding 32x32 multiply (one SMMULR on Arm cores with the DSP instructions).

"16x8" is TFLite's int64 MultiplyByQuantizedMultiplier of the 16x8 MAC operators where the caller guarantees an
int32 acc (acc + bias bounded at compile time) and has prepared the multiplier at compile time
(`tvm_ext.kernels.fixed_point.high_mul_16x8_multipliers`): one rounding 32x32 high multiply (SMMULR), saturated
to int16 (SSAT), which the 16x8 outputs' clamp (zero point 0, a range within int16) then leaves unchanged.

Three more helpers: "saturate_int8" and "saturate_int16" clamp to [-128, 127] and [-32768, 32767] (one SSAT where
the core saturates), and
"count_leading_zeros" is TFLite's CountLeadingZeros of a uint32 (32 for 0; one CLZ on Arm), which softmax
and L2_NORMALIZATION use to normalise their sums. "inv_sqrt_multiplier" is the multiplier of TFLite's
GetInvSqrtQuantizedMultiplierExp (L2_NORMALIZATION's 1/sqrt of a row's sum of squares); it calls "double"
(with shift 0: gemmlowp's SaturatingRoundingDoublingHighMul) and "count_leading_zeros", which a header then
defines too (`HELPER_DEPENDENCIES`). "fma" is float x * y + z rounded once (C99's fmaf, exact on every
core: packager/templates/fused_multiply_add.h.in), for onnxruntime's fused multiply-adds.

The integer helpers use int32 arithmetic with one 64-bit multiply; no undefined behaviour: scaling up is a multiplication (never a
left shift of a negative value), and a negative value is divided by a power of two through its complement
(`~(~v >> e)` equals the floor of v / 2^e), so nothing shifts a negative value either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from string import Template

from packager.template_files import template_text

# The requantization helpers: one per rounding, and double rounding's right-shift-only variants.
REQUANTIZE_HELPERS = ("double", "double_right_shift", "double_small", "single")
RIGHT_SHIFT_ONLY = "double_right_shift"
SMALL_RIGHT_SHIFT = "double_small"
SMALL_ACCUMULATOR_LIMIT = 2**30
"""The small variant's accumulators lie in [-SMALL_ACCUMULATOR_LIMIT, SMALL_ACCUMULATOR_LIMIT)."""
REQUANTIZE_16X8 = "16x8"
SATURATE_INT8 = "saturate_int8"
SATURATE_INT16 = "saturate_int16"
COUNT_LEADING_ZEROS = "count_leading_zeros"
DOUBLING_HIGH_MUL = "doubling_high_mul"
INV_SQRT_MULTIPLIER = "inv_sqrt_multiplier"
FUSED_MULTIPLY_ADD = "fma"
# Every helper of this module, in the order a header defines them (a helper after those it calls).
HELPERS = (*REQUANTIZE_HELPERS, REQUANTIZE_16X8, SATURATE_INT8, SATURATE_INT16, COUNT_LEADING_ZEROS, DOUBLING_HIGH_MUL,
           INV_SQRT_MULTIPLIER, FUSED_MULTIPLY_ADD)
HELPER_DEPENDENCIES = {INV_SQRT_MULTIPLIER: ("double", COUNT_LEADING_ZEROS)}
"""The helpers each helper calls."""


def requantize_helper_name(prefix: str, rounding: str) -> str:
    """The C name of the helper for `rounding` (one of HELPERS) in the bundle `prefix`."""
    requantizes = rounding in REQUANTIZE_HELPERS or rounding == REQUANTIZE_16X8
    return f"{prefix}_requantize_{rounding}" if requantizes else f"{prefix}_{rounding}"


def _floor_shift(value: str, exponent: str, c_type: str) -> str:
    """C for floor(value / 2^exponent) that never shifts a negative value."""
    return f"({value} < 0 ? ({c_type})~(~{value} >> {exponent}) : ({c_type})({value} >> {exponent}))"


_NUDGED_PRODUCT = """    /* SaturatingRoundingDoublingHighMul(scaled, multiplier): TFLite adds 2^30 or 1 - 2^30 by the product's
       sign and truncates toward zero, which for either sign is floor((product + 2^30) / 2^31): bits 31..62
       of the sum, taken in unsigned arithmetic (one SMLAL on Arm). Only INT32_MIN * INT32_MIN = 2^62 gives
       2^31, which wraps to INT32_MIN; every other product's result exceeds INT32_MIN. */
    const uint64_t nudged = (uint64_t)((int64_t)scaled * (int64_t)multiplier) + ((uint64_t)1 << 30);
"""

_ROUNDING_DIVIDE_HIGH = f"""    /* RoundingDivideByPOT(high, right_shift), nearest, ties away from zero: the floor, plus 1 when the
       remainder (0 <= remainder < 2^e) plus 2^(e-1) (2^(e-1) - 1 for a negative high; 0 when e = 0)
       reaches 2^e. The sum stays below 2^32. */
    const uint32_t mask = ((uint32_t)1 << right_shift) - 1u;
    const uint32_t nudge = (mask + 1u - (uint32_t)(high < 0)) >> 1;
    const uint32_t round_up = (((uint32_t)high & mask) + nudge) >> right_shift;
    return {_floor_shift("high", "right_shift", "int32_t")} + (int32_t)round_up;
"""


_ROUNDING_RIGHT_SHIFT = f"""    /* RoundingDivideByPOT(high, e), e = -shift >= 1, is floor((high - neg + 2^(e-1)) / 2^e) (neg: 1 for a
       negative high), which is ceil(t / 2) for t = floor((high - neg) / 2^(e-1)), and ceil(t / 2) = t - floor(t / 2). */
    const int32_t lowered = high - (int32_t)((uint32_t)high >> 31);
    const uint32_t e_minus_1 = (uint32_t)(-1 - shift);
    const int32_t t = {_floor_shift("lowered", "e_minus_1", "int32_t")};
    return t - {_floor_shift("t", "1", "int32_t")};
"""


def _double(prefix: str) -> str:
    return f"""/* TFLite's MultiplyByQuantizedMultiplier, double rounding: round(acc * multiplier * 2^(shift - 31)). */
static inline int32_t {requantize_helper_name(prefix, "double")}(int32_t acc, int32_t multiplier, int32_t shift)
{{
    /* max(shift, 0) and max(-shift, 0) without branches (x & ~(x >> 31) clears a negative x). */
    const uint32_t left_shift = (uint32_t)(shift & ~(shift >> 31));
    const uint32_t right_shift = (uint32_t)(-shift & ~(-shift >> 31));
    /* acc * 2^left_shift, wrapping as TFLite's int32 multiplication does (an unsigned shift: no UB). */
    const int32_t scaled = (int32_t)((uint32_t)acc << left_shift);
{_NUDGED_PRODUCT}    const int32_t wrapped = (int32_t)(uint32_t)(nudged >> 31);
    const int32_t high = wrapped == INT32_MIN ? INT32_MAX : wrapped;  /* the saturation */
{_ROUNDING_DIVIDE_HIGH}}}
"""


def _double_right_shift(prefix: str) -> str:
    return f"""/* As {requantize_helper_name(prefix, "double")}, for shift < 0 and multiplier != INT32_MIN only. */
static inline int32_t {requantize_helper_name(prefix, RIGHT_SHIFT_ONLY)}(int32_t acc, int32_t multiplier, int32_t shift)
{{
    const int32_t scaled = acc;
{_NUDGED_PRODUCT}    const int32_t high = (int32_t)(uint32_t)(nudged >> 31);  /* > INT32_MIN: no saturation */
{_ROUNDING_RIGHT_SHIFT}}}
"""


def _double_small(prefix: str) -> str:
    return f"""/* As {requantize_helper_name(prefix, RIGHT_SHIFT_ONLY)}, for -2^30 <= acc < 2^30 only: then
   SaturatingRoundingDoublingHighMul(acc, multiplier) = floor((acc * multiplier + 2^30) / 2^31)
   = floor((2 * acc * multiplier + 2^31) / 2^32), the high word of a rounding multiply (SMMULR). */
static inline int32_t {requantize_helper_name(prefix, SMALL_RIGHT_SHIFT)}(int32_t acc, int32_t multiplier, int32_t shift)
{{
    const int32_t doubled = acc * 2;
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
    int32_t high;
    __asm__("smmulr %0, %1, %2" : "=r"(high) : "r"(doubled), "r"(multiplier));
#else
    const uint64_t nudged = (uint64_t)((int64_t)doubled * (int64_t)multiplier) + ((uint64_t)1 << 31);
    const int32_t high = (int32_t)(uint32_t)(nudged >> 32);
#endif
{_ROUNDING_RIGHT_SHIFT}}}
"""


def _requantize_16x8(prefix: str) -> str:
    return f"""/* TFLite's MultiplyByQuantizedMultiplier(int64 acc, multiplier, shift) of the 16x8 MAC operators for
   an int32 acc: floor((acc * reduced + 2^(t-1)) / 2^t), reduced the multiplier rounded to 15 bits and t = 15 - shift.
   The caller passes multiplier = reduced * 2^(32 - t) (computed at compile time, where t <= 32 and it stays
   below 2^31), which makes that floor((acc * multiplier + 2^31) / 2^32): the high word of a rounding 32x32
   multiply (one SMMULR on Arm cores with the DSP instructions). |result| < 2^30: TFLite's int32 cast keeps it.
   Returned saturated to [-32768, 32767] (one SSAT), the widest clamp of a 16x8 output (zero point 0). */
static inline int32_t {requantize_helper_name(prefix, REQUANTIZE_16X8)}(int32_t acc, int32_t multiplier)
{{
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
    int32_t high;
    __asm__("smmulr %0, %1, %2" : "=r"(high) : "r"(acc), "r"(multiplier));
#else
    const uint64_t rounded = (uint64_t)((int64_t)acc * (int64_t)multiplier) + ((uint64_t)1 << 31);
    const int32_t high = (int32_t)(uint32_t)(rounded >> 32);
#endif
#if defined(__ARM_FEATURE_SAT) && defined(__GNUC__)
    return (int32_t)__builtin_arm_ssat(high, 16);
#else
    return high < -32768 ? -32768 : (high > 32767 ? 32767 : high);
#endif
}}
"""


def _saturate(bits: int, helper: str) -> Callable[[str], str]:
    """The writer of the helper ``helper``: x clamped to the range of ``bits``-bit signed integers."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def writer(prefix: str) -> str:
        return f"""/* x clamped to [{low}, {high}] (one SSAT where the core has the saturation instructions: the builtin \
behind
   ACLE's __ssat, whose macro gcc 12 warns about under -Wsign-conversion). */
static inline int32_t {requantize_helper_name(prefix, helper)}(int32_t x)
{{
#if defined(__ARM_FEATURE_SAT) && defined(__GNUC__)
    return (int32_t)__builtin_arm_ssat(x, {bits});
#else
    return x < {low} ? {low} : (x > {high} ? {high} : x);
#endif
}}
"""

    return writer


def _count_leading_zeros(prefix: str) -> str:
    return f"""/* TFLite's CountLeadingZeros of a uint32: the zero bits above its highest set bit, 32 for x = 0
   (__builtin_clz, one CLZ on Arm, is undefined for 0). */
static inline int32_t {requantize_helper_name(prefix, COUNT_LEADING_ZEROS)}(uint32_t x)
{{
#if (defined(__GNUC__) || defined(__clang__)) && __SIZEOF_INT__ == 4
    return x == 0u ? 32 : (int32_t)__builtin_clz(x);
#else
    int32_t zeros = 0;
    while (zeros < 32 && (x & 0x80000000u) == 0u) {{
        x <<= 1;
        zeros++;
    }}
    return zeros;
#endif
}}
"""


def _doubling_high_mul(prefix: str) -> str:
    return f"""/* gemmlowp's SaturatingRoundingDoublingHighMul: round(scaled * multiplier / 2^31), ties away from zero;
   INT32_MIN * INT32_MIN saturates to INT32_MAX. The fixed-point products of softmax's row reciprocal. */
static inline int32_t {requantize_helper_name(prefix, DOUBLING_HIGH_MUL)}(int32_t scaled, int32_t multiplier)
{{
{_NUDGED_PRODUCT}    const int32_t wrapped = (int32_t)(uint32_t)(nudged >> 31);
    return wrapped == INT32_MIN ? INT32_MAX : wrapped;
}}
"""


def _inv_sqrt_multiplier(prefix: str) -> str:
    high_mul = requantize_helper_name(prefix, "double")
    shift_left = f"{prefix}_saturating_left_shift"
    return f"""/* gemmlowp's SaturatingRoundingMultiplyByPOT<exponent> for 0 < exponent < 31: x * 2^exponent, saturated. */
static inline int32_t {shift_left}(int32_t x, uint32_t exponent)
{{
    const int32_t threshold = (int32_t)((1u << (31u - exponent)) - 1u);
    if (x > threshold) {{
        return INT32_MAX;
    }}
    if (x < -threshold) {{
        return INT32_MIN;
    }}
    return (int32_t)((uint32_t)x << exponent);
}}

/* The multiplier of TFLite's GetInvSqrtQuantizedMultiplierExp(acc) for acc >= 0 (INT32_MAX for acc <= 1):
   acc normalised into [2^27, 2^29) by pairs of bits, five Newton-Raphson steps of 1/sqrt in gemmlowp fixed
   point with 3 integer bits ({high_mul}(a, b, 0) is SaturatingRoundingDoublingHighMul), times
   sqrt(2)/2, scaled up where the shift is negative (the shift itself is computed by the caller). */
static inline int32_t {requantize_helper_name(prefix, INV_SQRT_MULTIPLIER)}(int32_t acc)
{{
    if (acc <= 1) {{
        return INT32_MAX;
    }}
    int32_t input = acc;
    int32_t shift = 11;
    if (input >= (1 << 29)) {{  /* acc < 2^31: once at most */
        input /= 4;
        shift++;
    }}
    const int32_t pairs = ({requantize_helper_name(prefix, COUNT_LEADING_ZEROS)}((uint32_t)input) - 1) / 2 - 1;
    shift -= pairs;
    input <<= 2 * pairs;  /* positive, below 2^29 */
    const int32_t raw_input = input >> 1;
    const int32_t half_input = (raw_input >> 1) + (raw_input & 1);  /* RoundingDivideByPOT(raw_input, 1) */
    int32_t x = 1 << 28;  /* 1.0 */
    for (int step = 0; step < 5; step++) {{
        const int32_t x3 = {shift_left}({high_mul}({high_mul}(x, x, 0), x, 0), 6u);
        x = {shift_left}({high_mul}((1 << 28) + (1 << 27), x, 0) - {high_mul}(half_input, x3, 0), 3u);
    }}
    const int32_t multiplier = {high_mul}(x, 1518500250, 0);  /* times sqrt(2)/2 */
    return shift < 0 ? (int32_t)((uint32_t)multiplier << (uint32_t)-shift) : multiplier;
}}
"""


def _single(prefix: str) -> str:
    return f"""/* TFLite's MultiplyByQuantizedMultiplier, single rounding: round(acc * multiplier * 2^(shift - 31)). */
static inline int32_t {requantize_helper_name(prefix, "single")}(int32_t acc, int32_t multiplier, int32_t shift)
{{
    const int32_t total_shift = 31 - shift;
    const int64_t rounded = (int64_t)acc * (int64_t)multiplier + ((int64_t)1 << (total_shift - 1));
    return (int32_t){_floor_shift("rounded", "total_shift", "int64_t")};
}}
"""


def _fused_multiply_add(prefix: str) -> str:
    """float x * y + z rounded once (onnxruntime's QLinearAdd on x86-64 fuses its multiply-adds):
    packager/templates/fused_multiply_add.h.in."""
    return Template(template_text("packager", "fused_multiply_add.h.in")).substitute(prefix=prefix)


_WRITERS = {"double": _double, RIGHT_SHIFT_ONLY: _double_right_shift, SMALL_RIGHT_SHIFT: _double_small,
            "single": _single, REQUANTIZE_16X8: _requantize_16x8, SATURATE_INT8: _saturate(8, SATURATE_INT8),
            SATURATE_INT16: _saturate(16, SATURATE_INT16),
            COUNT_LEADING_ZEROS: _count_leading_zeros, DOUBLING_HIGH_MUL: _doubling_high_mul,
            INV_SQRT_MULTIPLIER: _inv_sqrt_multiplier, FUSED_MULTIPLY_ADD: _fused_multiply_add}


def requantize_helpers_c(prefix: str, roundings: Iterable[str]) -> str:
    """The C definitions of the helpers for `roundings` (each one of HELPERS) and of those they call, in a
    fixed order."""
    wanted = set(roundings)
    wanted.update(*(HELPER_DEPENDENCIES.get(r, ()) for r in tuple(wanted)))
    return "\n".join(_WRITERS[r](prefix) for r in HELPERS if r in wanted)
