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
core: packager/templates/fused_multiply_add.h.in), for onnxruntime's fused multiply-adds. "float32" is
onnxruntime's float32 requantization of an int32 sum (float32(acc) * multiplier, clamped, ties to even) in
integer arithmetic, bit for bit, for cores without a floating-point unit
(packager/templates/fixed_point_requantize_float32.h.in). "expf", "logf", "tanhf" and "erff" are the bundle's own
e^x, natural logarithm, hyperbolic tangent and error function of a float (`FLOAT_MATH_HELPERS`:
packager/templates/float_math_*.h.in, their shared bits and contraction guard in "float_bits"; tanhf and erff
call expf): within 1 ULP (tanhf 1.5) and the same bits on every core, where the C libraries' functions round
differently (glibc's on the host, newlib's or picolibc's on a board), so a float bundle computes one answer
everywhere; `tvm_ext.codegen.libm_lowering` makes a bundle's kernels call them.

The C is hand-written: packager/templates/fixed_point_<helper>.h.in (`${prefix}` the bundle's prefix; the
helper's contract in the file's leading comment, which bundles do not copy); this module names the helpers and
selects the templates a bundle defines.

The integer helpers use int32 arithmetic with one 64-bit multiply; no undefined behaviour: scaling up is a multiplication (never a
left shift of a negative value), and a negative value is divided by a power of two through its complement
(`~(~v >> e)` equals the floor of v / 2^e), so nothing shifts a negative value either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from packager.template_files import helper_template_c

# The requantization helpers: one per rounding, and double rounding's right-shift-only variants.
REQUANTIZE_HELPERS = ("double", "double_right_shift", "double_small", "single")
RIGHT_SHIFT_ONLY = "double_right_shift"
SMALL_RIGHT_SHIFT = "double_small"
SMALL_RIGHT_SHIFT_MULH = "double_small_mulh"
"""SMALL_RIGHT_SHIFT's form (the same C name, contract and results) for cores without SMMULR that multiply to a
high word in one instruction (RV32IM's MULH): a backend's `rounding_forms` names it in place of SMALL_RIGHT_SHIFT."""
SMALL_ACCUMULATOR_LIMIT = 2**30
"""The small variant's accumulators lie in [-SMALL_ACCUMULATOR_LIMIT, SMALL_ACCUMULATOR_LIMIT)."""
REQUANTIZE_16X8 = "16x8"
SATURATE_INT8 = "saturate_int8"
SATURATE_INT16 = "saturate_int16"
COUNT_LEADING_ZEROS = "count_leading_zeros"
DOUBLING_HIGH_MUL = "doubling_high_mul"
INV_SQRT_MULTIPLIER = "inv_sqrt_multiplier"
FUSED_MULTIPLY_ADD = "fma"
REQUANTIZE_FLOAT32 = "float32"
ROUND_HALF_EVEN_SMALL = "round_half_even_small"
SATURATE_HALF_EVEN = "saturate_half_even"
FLOAT_BITS = "float_bits"
EXPF = "expf"
LOGF = "logf"
TANHF = "tanhf"
ERFF = "erff"
FLOAT_MATH_HELPERS = (EXPF, LOGF, TANHF, ERFF)
"""The portable single-precision functions, each named as the C99 function it replaces."""
REQUANTIZE_FLOAT32_OP = "tvm_ext.requantize_float32"
ROUND_HALF_EVEN_SMALL_OP = "tvm_ext.round_half_even_small"
SATURATE_HALF_EVEN_OP = "tvm_ext.saturate_half_even"
# The operators the kernels call these helpers through (tvm_ext.kernels.fixed_point registers them): one per
# requantization helper, the saturations and the leading-zero count. Their names are here, beside the helpers,
# so that a backend's schedules recognise them without importing the kernels.
REQUANTIZE_OPS = {helper: f"tvm_ext.multiply_by_quantized_multiplier_{helper}" for helper in REQUANTIZE_HELPERS}
SATURATE_INT8_OP = "tvm_ext.saturate_int8"
SATURATE_INT16_OP = "tvm_ext.saturate_int16"
REQUANTIZE_16X8_OP = "tvm_ext.requantize_16x8"
COUNT_LEADING_ZEROS_OP = "tvm_ext.count_leading_zeros"
# Every helper of this module, in the order a header defines them (a helper after those it calls).
HELPERS = (*REQUANTIZE_HELPERS, REQUANTIZE_16X8, SATURATE_INT8, SATURATE_INT16, COUNT_LEADING_ZEROS, DOUBLING_HIGH_MUL,
           INV_SQRT_MULTIPLIER, FUSED_MULTIPLY_ADD, REQUANTIZE_FLOAT32, FLOAT_BITS, *FLOAT_MATH_HELPERS,
           ROUND_HALF_EVEN_SMALL, SATURATE_HALF_EVEN)
HELPER_DEPENDENCIES = {INV_SQRT_MULTIPLIER: ("double", COUNT_LEADING_ZEROS),
                       SATURATE_HALF_EVEN: (ROUND_HALF_EVEN_SMALL,),
                       **{helper: (FLOAT_BITS,) for helper in FLOAT_MATH_HELPERS}, TANHF: (FLOAT_BITS, EXPF),
                       ERFF: (FLOAT_BITS, EXPF)}
"""The helpers each helper calls."""
FORMS = {SMALL_RIGHT_SHIFT_MULH: SMALL_RIGHT_SHIFT}
"""Each other form of a helper: its helper (whose C name, contract and place in HELPERS' order it takes)."""


def requantize_helper_name(prefix: str, rounding: str) -> str:
    """The C name of the helper for `rounding` (one of HELPERS, or of FORMS: its helper's) in the bundle `prefix`."""
    rounding = FORMS.get(rounding, rounding)
    requantizes = rounding in REQUANTIZE_HELPERS or rounding in (REQUANTIZE_16X8, REQUANTIZE_FLOAT32)
    return f"{prefix}_requantize_{rounding}" if requantizes else f"{prefix}_{rounding}"


_TEMPLATES = {
    "double": "fixed_point_requantize_double.h.in", RIGHT_SHIFT_ONLY: "fixed_point_requantize_double_right_shift.h.in",
    SMALL_RIGHT_SHIFT: "fixed_point_requantize_double_small.h.in",
    SMALL_RIGHT_SHIFT_MULH: "fixed_point_requantize_double_small_mulh.h.in",
    "single": "fixed_point_requantize_single.h.in",
    REQUANTIZE_16X8: "fixed_point_requantize_16x8.h.in", SATURATE_INT8: "fixed_point_saturate_int8.h.in",
    SATURATE_INT16: "fixed_point_saturate_int16.h.in",
    COUNT_LEADING_ZEROS: "fixed_point_count_leading_zeros.h.in", DOUBLING_HIGH_MUL: "fixed_point_doubling_high_mul.h.in",
    INV_SQRT_MULTIPLIER: "fixed_point_inv_sqrt_multiplier.h.in", FUSED_MULTIPLY_ADD: "fused_multiply_add.h.in",
    REQUANTIZE_FLOAT32: "fixed_point_requantize_float32.h.in", FLOAT_BITS: "float_math_bits.h.in",
    **{helper: f"float_math_{helper}.h.in" for helper in FLOAT_MATH_HELPERS},
    ROUND_HALF_EVEN_SMALL: "round_half_even_small.h.in", SATURATE_HALF_EVEN: "saturate_half_even.h.in",
}
"""The file of packager/templates/ that holds each helper's C."""


def requantize_helpers_c(prefix: str, roundings: Iterable[str]) -> str:
    """The C definitions of the helpers for `roundings` (each one of HELPERS or of FORMS) and of those they call,
    in a fixed order (a form in its helper's place)."""
    wanted = set(roundings)
    wanted.update(*(HELPER_DEPENDENCIES.get(r, ()) for r in tuple(wanted)))
    in_order = (form for helper in HELPERS for form in (helper, *(f for f, of in FORMS.items() if of == helper)))
    return "\n".join(helper_template_c("packager", _TEMPLATES[r], prefix) for r in in_order if r in wanted)
