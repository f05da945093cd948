"""TIR expression builders for TFLite's fixed-point integer arithmetic.

Every helper takes and returns int32 TIR expressions and computes internally in int64, so TVM's C
codegen writes plain integer C (no extern calls, no float). The semantics are TFLite's
(tensorflow/lite/kernels/internal/common.{h,cc}) and gemmlowp's fixedpoint.h, re-derived here:

- ``saturating_rounding_doubling_high_mul(a, b)``: (a*b + nudge) / 2^31 truncated toward zero, with
  nudge = 2^30 for a non-negative product and 1 - 2^30 otherwise; INT32_MAX when a == b == INT32_MIN.
- ``rounding_divide_by_pot(x, e)``: x / 2^e rounded to nearest, ties away from zero.
- ``multiply_by_quantized_multiplier(x, m, shift, rounding)``: DOUBLE rounding is TFLite's default
  (the two helpers above in sequence), SINGLE rounding is TFLITE_SINGLE_ROUNDING / CMSIS-NN:
  (x*m + 2^(30-shift)) >> (31-shift). It is one call of an operator of ours (`REQUANTIZE_OPS`), so that
  a bundle's C calls one `static inline` helper (`packager.fixed_point_c`) instead of repeating the
  arithmetic in every kernel: TVM's LowerIntrin expands the call into the arithmetic below on every
  target, except in C generated inside `calls_to_c_helpers(prefix)`, where it becomes a call of
  `<prefix>_requantize_<rounding>`.

No expression shifts a negative value left, which C leaves undefined: scaling up by 2^e is a multiplication.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
from collections.abc import Callable, Iterator
from typing import Optional, Union

import numpy as np
import tvm
from tvm import tirx

from packager.fixed_point_c import (COUNT_LEADING_ZEROS, COUNT_LEADING_ZEROS_OP, DOUBLING_HIGH_MUL, REQUANTIZE_16X8,
                                    REQUANTIZE_16X8_OP,
                                    REQUANTIZE_HELPERS, REQUANTIZE_OPS, RIGHT_SHIFT_ONLY, SATURATE_INT8,
                                    SATURATE_INT8_OP, SATURATE_INT16, SATURATE_INT16_OP, SMALL_ACCUMULATOR_LIMIT,
                                    SMALL_RIGHT_SHIFT, requantize_helper_name)
from tvm.ir.expr import Expr as PrimExpr

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

IntExpr = Union[int, PrimExpr]


class Rounding(enum.Enum):
    """How requantization rounds: TFLite's default DOUBLE rounding or SINGLE rounding."""

    DOUBLE = "double"
    SINGLE = "single"


def _i64(x: IntExpr) -> PrimExpr:
    return tirx.const(x, "int64") if isinstance(x, int) else tirx.Cast("int64", x)


def _i32(x: IntExpr) -> PrimExpr:
    return tirx.const(x, "int32") if isinstance(x, int) else tirx.Cast("int32", x)


def _select(cond: PrimExpr, then: IntExpr, other: IntExpr, dtype: str) -> PrimExpr:
    cast = _i64 if dtype == "int64" else _i32
    return tirx.Select(cond, cast(then), cast(other))


def saturating_rounding_doubling_high_mul(a: IntExpr, b: IntExpr) -> PrimExpr:
    """gemmlowp SaturatingRoundingDoublingHighMul of two int32 values (int32 result)."""
    ab = _i64(a) * _i64(b)
    nudge = _select(ab >= 0, 1 << 30, 1 - (1 << 30), "int64")
    high = _i32(tirx.truncdiv(ab + nudge, tirx.const(1 << 31, "int64")))
    if isinstance(b, int) and b != INT32_MIN or isinstance(a, int) and a != INT32_MIN:
        return high
    # Compared in int64 so that the simplifier's rewrites (e.g. x + c == INT32_MIN) cannot overflow int32.
    overflow = tirx.all(_i64(a) == _i64(b), _i64(a) == tirx.const(INT32_MIN, "int64"))
    return tirx.Select(overflow, tirx.const(INT32_MAX, "int32"), high)


def rounding_divide_by_pot(x: IntExpr, exponent: IntExpr) -> PrimExpr:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, nearest, ties away from zero (0 <= exponent <= 31)."""
    if isinstance(exponent, int) and exponent == 0:
        return _i32(x)
    x64 = _i64(x)
    mask = (tirx.const(1, "int64") << _i64(exponent)) - 1
    remainder = x64 & mask
    threshold = (mask >> 1) + _select(x64 < 0, 1, 0, "int64")
    return _i32((x64 >> _i64(exponent)) + _select(remainder > threshold, 1, 0, "int64"))


def saturating_left_shift(x: IntExpr, exponent: int) -> PrimExpr:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive compile-time exponent."""
    threshold = (1 << (31 - exponent)) - 1
    x32 = _i32(x)
    shifted = _i32(_i64(x32) * (1 << exponent))
    return tirx.Select(
        x32 > threshold,
        tirx.const(INT32_MAX, "int32"),
        tirx.Select(x32 < -threshold, tirx.const(INT32_MIN, "int32"), shifted),
    )


def wrapping_left_shift(x: IntExpr, exponent: IntExpr) -> PrimExpr:
    """int32 ``x * (1 << exponent)`` with two's-complement wrap-around, as the C reference computes it.

    A multiplication in int64, not ``x << exponent``: shifting a negative value left is undefined in C.
    """
    if isinstance(exponent, int) and exponent == 0:
        return _i32(x)
    return _i32(_i64(x) * (tirx.const(1, "int64") << _i64(exponent)))


def _positive_part(shift: IntExpr) -> IntExpr:
    return max(shift, 0) if isinstance(shift, int) else tirx.max(shift, 0)


def expand_multiply_by_quantized_multiplier(
    x: IntExpr, multiplier: IntExpr, shift: IntExpr, rounding: Rounding
) -> PrimExpr:
    """TFLite MultiplyByQuantizedMultiplier(int32 x, int32 multiplier >= 0, shift) -> int32, as arithmetic."""
    if rounding is Rounding.SINGLE:
        total_shift = 31 - shift if isinstance(shift, int) else 31 - _i64(shift)
        round_term = tirx.const(1, "int64") << (_i64(total_shift) - 1)
        return _i32((_i64(x) * _i64(multiplier) + round_term) >> _i64(total_shift))
    left_shift = _positive_part(shift)
    right_shift = _positive_part(-shift)
    high = saturating_rounding_doubling_high_mul(wrapping_left_shift(x, left_shift), multiplier)
    return rounding_divide_by_pot(high, right_shift)




def multiply_by_quantized_multiplier(
    x: IntExpr, multiplier: IntExpr, shift: IntExpr, rounding: Rounding, right_shift_only: bool = False,
    small_input: bool = False,
) -> PrimExpr:
    """TFLite MultiplyByQuantizedMultiplier(int32 x, int32 multiplier >= 0, shift) -> int32, as one call.

    ``right_shift_only``: the caller guarantees shift < 0 and multiplier != INT32_MIN (every channel of a
    layer, known at compile time), so double rounding may call its cheaper variant (same results).
    ``small_input``: the caller also guarantees -2^30 <= x < 2^30 (`SMALL_ACCUMULATOR_LIMIT`), which
    makes that variant cheaper still.
    """
    helper = rounding.value
    if right_shift_only and rounding is Rounding.DOUBLE:
        helper = SMALL_RIGHT_SHIFT if small_input else RIGHT_SHIFT_ONLY
    return tirx.call_intrin("int32", REQUANTIZE_OPS[helper], _i32(x), _i32(multiplier), _i32(shift))


def fits_small_input(low: int, high: int) -> bool:
    """Whether every integer in [low, high] is a ``small_input`` of `multiply_by_quantized_multiplier`."""
    return -SMALL_ACCUMULATOR_LIMIT <= low and high < SMALL_ACCUMULATOR_LIMIT


def largest_centered(dtype: str, zero_point: int) -> int:
    """The largest |x - zero_point| of a value x of the integer type ``dtype``."""
    limits = np.iinfo(str(dtype))
    return max(abs(int(limits.min) - zero_point), abs(int(limits.max) - zero_point))


def shifts_right_only(multipliers, shifts) -> bool:
    """Whether every shift (an int or an array of them) is < 0 and no multiplier is INT32_MIN: the contract of
    `multiply_by_quantized_multiplier`'s ``right_shift_only``."""
    return bool(np.all(np.asarray(shifts) < 0) and np.all(np.asarray(multipliers) != INT32_MIN))


def multiply_by_constant_quantized_multiplier(
    x: IntExpr, multiplier: int, shift: int, rounding: Rounding, largest: int
) -> PrimExpr:
    """`multiply_by_quantized_multiplier` with compile-time ``multiplier`` and ``shift`` of an ``x`` known to
    satisfy |x| <= ``largest``: the cheapest helper whose contract the constants and the bound meet."""
    multiplier, shift = int(multiplier), int(shift)
    return multiply_by_quantized_multiplier(x, multiplier, shift, rounding, shifts_right_only(multiplier, shift),
                                            fits_small_input(-largest, largest))


def quantized_multiplier_bound(largest: int, multiplier: int, shift: int) -> int:
    """An upper bound of |MultiplyByQuantizedMultiplier(x, multiplier >= 0, shift)| for |x| <= ``largest``:
    |x| * multiplier * 2^(shift - 31), rounded up, plus one for either rounding."""
    numerator = int(largest) * int(multiplier) * 2 ** max(int(shift), 0)
    return -(-numerator // 2 ** (31 + max(-int(shift), 0))) + 1


@dataclasses.dataclass
class _HelperCalls:
    """While C is generated for a bundle: its helpers' prefix, and the roundings whose helper it calls."""

    prefix: str
    used: set[str]


_HELPER_CALLS: contextvars.ContextVar[Optional[_HelperCalls]] = contextvars.ContextVar(
    "tvm_ext_helper_calls", default=None
)


@contextlib.contextmanager
def calls_to_c_helpers(prefix: str) -> Iterator[set[str]]:
    """Within this block, C code generation calls `<prefix>_requantize_<helper>` for each requantization.

    Yields the set of helpers (`packager.fixed_point_c.HELPERS`) the generated C calls (filled in as code
    is generated).
    """
    calls = _HelperCalls(prefix, set())
    token = _HELPER_CALLS.set(calls)
    try:
        yield calls.used
    finally:
        _HELPER_CALLS.reset(token)


def _python_int(x: PrimExpr) -> IntExpr:
    """A constant argument as a Python int, so that the expansion specializes on it as it did in TE."""
    return int(x.value) if isinstance(x, tirx.IntImm) else x


def bundle_helper_call(helper: str, call: PrimExpr) -> Optional[PrimExpr]:
    """`call` as a call of the bundle's C helper `helper` (one of `packager.fixed_point_c.HELPERS`, recorded as
    used) with `call`'s arguments and type, in C generated inside `calls_to_c_helpers`; None anywhere else (a
    user's C build: no helper is defined there)."""
    calls = _HELPER_CALLS.get()
    if calls is None:
        return None
    calls.used.add(helper)
    return tirx.call_pure_extern(str(call.ty.dtype), requantize_helper_name(calls.prefix, helper), *call.args)


def register_helper_op(name: str, helper: str, expand: Optional[Callable[[PrimExpr], PrimExpr]]) -> None:
    """The operator `name`: a call of the bundle's C helper `helper` in C generated inside
    `calls_to_c_helpers`, and `expand(call)` (its arithmetic) everywhere else. With `expand` None only
    that C helper implements it: lowering it anywhere else raises RuntimeError at once (a bug of tvm_ext:
    no bundle lowers it elsewhere)."""

    def elsewhere(call: PrimExpr) -> PrimExpr:
        if expand is None:
            raise RuntimeError(f"operator {name} is implemented only by the C code generation of a bundle (its "
                               f"{helper} helper), not for another target nor in C outside a bundle")
        return expand(call)

    def to_c(call: PrimExpr) -> PrimExpr:
        if any(str(arg.ty.dtype) == "int64" for arg in call.args):
            return elsewhere(call)  # TVM widened the arguments (int64 index arithmetic): the helpers take int32
        helper_call = bundle_helper_call(helper, call)
        return elsewhere(call) if helper_call is None else helper_call

    tvm.ir.register_op_attr(name, "TCallEffectKind", tirx.CallEffectKind.Pure.value)
    tvm.ir.register_op_attr(name, "TScriptPrinterName", name.replace(".", "_"))
    tirx.register_intrin_lowering(name, "default", f=elsewhere)
    tirx.register_intrin_lowering(name, "c", f=to_c)


def _register_requantize_op(helper: str) -> None:
    rounding = Rounding.SINGLE if helper == Rounding.SINGLE.value else Rounding.DOUBLE

    def expand(call: PrimExpr) -> PrimExpr:
        x, multiplier, shift = (_python_int(a) for a in call.args)
        return expand_multiply_by_quantized_multiplier(x, multiplier, shift, rounding)

    register_helper_op(REQUANTIZE_OPS[helper], helper, expand)


for _helper in REQUANTIZE_HELPERS:
    _register_requantize_op(_helper)
register_helper_op(SATURATE_INT8_OP, SATURATE_INT8,
                   lambda call: tirx.Cast("int32", tirx.max(tirx.min(call.args[0], 127), -128)))
register_helper_op(SATURATE_INT16_OP, SATURATE_INT16,
                   lambda call: tirx.Cast("int32", tirx.max(tirx.min(call.args[0], 32767), -32768)))


def _expand_count_leading_zeros(call: PrimExpr) -> PrimExpr:
    """32 minus the bit length of the uint32 argument, as comparisons (the C helper is one CLZ)."""
    x = call.args[0]
    bit_length = sum(tirx.Select(x >= tirx.const(1 << k, "uint32"), 1, 0) for k in range(32))
    return 32 - bit_length


register_helper_op(COUNT_LEADING_ZEROS_OP, COUNT_LEADING_ZEROS, _expand_count_leading_zeros)


DOUBLING_HIGH_MUL_OP = "tvm_ext.doubling_high_mul"
register_helper_op(DOUBLING_HIGH_MUL_OP, DOUBLING_HIGH_MUL,
                   lambda call: saturating_rounding_doubling_high_mul(*(_python_int(a) for a in call.args)))


def doubling_high_mul(a: IntExpr, b: IntExpr) -> PrimExpr:
    """``saturating_rounding_doubling_high_mul(a, b)`` as one call: the bundle's C helper in its C, the
    arithmetic everywhere else (for two int32 values that are not both compile-time constants)."""
    return tirx.call_intrin("int32", DOUBLING_HIGH_MUL_OP, _i32(a), _i32(b))


def count_leading_zeros(x: IntExpr) -> PrimExpr:
    """TFLite's CountLeadingZeros(static_cast<uint32_t>(x)) of an int32 ``x``, as one call (int32 result):
    32 for 0, 0 for a negative ``x``."""
    return tirx.call_intrin("int32", COUNT_LEADING_ZEROS_OP, tirx.Cast("uint32", _i32(x)))


def multiply_by_quantized_multiplier_int64(x: PrimExpr, multiplier: IntExpr, shift: IntExpr) -> PrimExpr:
    """TFLite MultiplyByQuantizedMultiplier(int64 x, int32 multiplier >= 0, shift) -> int32, the 16x8 MAC
    operators' requantization (the same with either rounding): the multiplier rounded to 15 bits, then one
    rounding right shift by 15 - shift of the int64 product (x within +-2^47, so nothing overflows)."""
    reduced = _select(_i64(multiplier) < 0x7FFF0000, (_i64(multiplier) + (1 << 15)) >> 16, 0x7FFF, "int64")
    total_shift = 15 - shift if isinstance(shift, int) else 15 - _i64(shift)
    return multiply_by_reduced_multiplier(x, reduced, total_shift)


def multiply_by_reduced_multiplier(x: PrimExpr, reduced: IntExpr, total_shift: IntExpr) -> PrimExpr:
    """The end of `multiply_by_quantized_multiplier_int64` from its reduced multiplier and total shift (>= 1):
    (x * reduced + 2^(total_shift - 1)) >> total_shift in int64, narrowed to int32."""
    round_term = tirx.const(1, "int64") << (_i64(total_shift) - 1)
    return _i32((_i64(x) * _i64(reduced) + round_term) >> _i64(total_shift))


def reduce_16x8_multipliers(multipliers, shifts) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's reduced multiplier ((m + 2^15) >> 16, 0x7FFF from 0x7FFF0000 on) and total shift (15 - shift)
    of int64 MultiplyByQuantizedMultiplier, computed at compile time (int64 arrays)."""
    multipliers = np.asarray(multipliers, np.int64)
    reduced = np.where(multipliers < 0x7FFF0000, (multipliers + (1 << 15)) >> 16, 0x7FFF)
    return reduced, 15 - np.asarray(shifts, np.int64)


def high_mul_16x8_multipliers(reduced: np.ndarray, total_shift: np.ndarray) -> Optional[np.ndarray]:
    """The multipliers of the "16x8" helper (reduced * 2^(32 - total_shift), int64 array), or None unless every
    channel's total shift is in [1, 32] and its multiplier below 2^31 (then, for an int32 x,
    (x * reduced + 2^(t-1)) >> t = (x * multiplier + 2^31) >> 32 exactly)."""
    reduced, total_shift = np.asarray(reduced, np.int64), np.asarray(total_shift, np.int64)
    if np.any(total_shift < 1) or np.any(total_shift > 32):
        return None
    high = reduced << (32 - total_shift)
    return high if np.all(high <= INT32_MAX) else None


INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
register_helper_op(REQUANTIZE_16X8_OP, REQUANTIZE_16X8, lambda call: tirx.max(tirx.min(
    _i32((_i64(call.args[0]) * _i64(call.args[1]) + (1 << 31)) >> 32), INT16_MAX), INT16_MIN))


def requantize_16x8(x: IntExpr, multiplier: IntExpr) -> PrimExpr:
    """int64 MultiplyByQuantizedMultiplier of an int32 ``x`` with a multiplier of `high_mul_16x8_multipliers`,
    saturated to int16, as one call (the bundle's "16x8" helper in its C, the arithmetic everywhere else)."""
    return tirx.call_intrin("int32", REQUANTIZE_16X8_OP, _i32(x), _i32(multiplier))


def saturate_int16(x: IntExpr) -> PrimExpr:
    """An int32 value clamped to [-32768, 32767], as one call (the bundle's SSAT helper in its C)."""
    return tirx.call_intrin("int32", SATURATE_INT16_OP, _i32(x))


def clamp_to_int8(x: IntExpr, act_min: int, act_max: int) -> PrimExpr:
    """Clamp an int32 value to [act_min, act_max] (a subrange of int8) and narrow it to int8."""
    return clamp_to_type(x, act_min, act_max, "int8")


def clamp_to_type(x: IntExpr, low: int, high: int, dtype: str) -> PrimExpr:
    """Clamp an int32 value to [low, high] (a subrange of the integer type `dtype`) and narrow it to `dtype`.
    The whole int8 range is one call of the bundle's saturation helper (one SSAT on Arm)."""
    if dtype == "int8" and (low, high) == (-128, 127):
        return tirx.Cast(dtype, tirx.call_intrin("int32", SATURATE_INT8_OP, _i32(x)))
    return tirx.Cast(dtype, tirx.max(tirx.min(_i32(x), high), low))


def saturate_to_type(x: IntExpr, dtype: str) -> PrimExpr:
    """An int32 value saturated to the whole range of the integer type `dtype` and narrowed to it."""
    limits = np.iinfo(str(dtype))
    return clamp_to_type(x, int(limits.min), int(limits.max), str(dtype))
