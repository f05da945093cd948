"""Float constants TVM's C printer would round, rewritten in the TIR into an exact C expression.

TVM 0.27's C code generator prints a float32 or float64 `FloatImm` with `std::scientific` at its default
precision: 7 significant digits. float32 needs up to 9 to name every value, float64 up to 17, so a constant
such as float32 0.023811162 (printed `2.381116e-02f`) would silently become another number in the C.

`exact_float_constants` leaves every constant whose 7-digit decimal names it exactly (`5.000000e-01f`,
`1.000000e-01f`: the C compiler rounds the decimal back to the same value) and rewrites each other one as
`ldexpf((float)M, E)` (`ldexp((double)M, E)` for float64): the value is M * 2**E with M an integer of at
most 24 (53) bits, which the integer-to-float conversion represents exactly, and ldexp scales by a power of
two exactly; an integer value that fits int64 is just `(float)N`. Both are C99 (<math.h>), and GCC folds
the call with constant arguments into the constant itself (no call, no runtime cost: checked at -O0 and at
the profiles' -O2, arm-none-eabi-gcc hard- and soft-float included).

Non-finite constants, which the printer writes as `inff` and `nanf` (no such names in C), come from TVM's own
lowerings (`isinf`, `isfinite`: ONNX Cast from float to an integer, IsInf) and from models: +-Inf becomes
`(+-1.0f / 0.0f)` and NaN `(0.0f / 0.0f)`, IEEE 754's results (C's Annex F, which GCC and Clang implement for
every target and do not count as undefined behaviour under -fsanitize=undefined); GCC folds both into the
constant. (TVM's C printer cannot print the string argument `nanf("")` would need, nor a macro name.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from tvm import tirx

from tvm_ext.tir.tir_walk import map_leaves

PRINTED_SIGNIFICANT_DIGITS = 7
"""How many significant digits TVM's C printer gives a float constant (`std::scientific`, precision 6)."""


@dataclass(frozen=True)
class _FloatFormat:
    """A binary float type: its numpy type and its `ldexp` in C."""

    numpy_type: type
    ldexp: str


_FORMATS = {
    "float32": _FloatFormat(np.float32, "ldexpf"),
    "float64": _FloatFormat(np.float64, "ldexp"),
}


def _rounds_to(decimal: Fraction, value: np.floating) -> bool:
    """Whether the exact positive number `decimal` rounds (to nearest, ties to even) to `value`, a finite
    positive float of its numpy type: `decimal` lies strictly between the midpoints to `value`'s neighbours,
    or on one of them with `value`'s significand even."""
    exact = Fraction(float(value))
    below = Fraction(float(np.nextafter(value, 0, dtype=value.dtype)))
    above = np.nextafter(value, np.inf, dtype=value.dtype) if value < np.finfo(value.dtype).max else None
    # Past the largest finite value the next step up is as long as the step down (same binade).
    high = (exact + Fraction(float(above))) / 2 if above is not None else exact + (exact - below) / 2
    low = (below + exact) / 2
    if low < decimal < high:
        return True
    bits = int(value.view(f"u{value.itemsize}"))
    return decimal in (low, high) and bits % 2 == 0


def printed_exactly(printed: float, value: np.floating) -> bool:
    """Whether the C printer's decimal of `printed` (PRINTED_SIGNIFICANT_DIGITS significant digits) names
    `value` (finite, nonzero), the float it means in its own type."""
    # The decimal has the sign of `value`, and rounding to nearest is symmetric.
    return _rounds_to(abs(Fraction(f"{printed:.{PRINTED_SIGNIFICANT_DIGITS - 1}e}")), abs(value))


def significand_and_exponent(value: float) -> tuple[int, int]:
    """(M, E) with value == M * 2**E exactly and M odd, for a finite nonzero `value`."""
    fraction = Fraction(value)
    if fraction.denominator > 1:  # a power of two, and the numerator odd
        return fraction.numerator, 1 - fraction.denominator.bit_length()
    trailing_zero_bits = (fraction.numerator & -fraction.numerator).bit_length() - 1
    return fraction.numerator >> trailing_zero_bits, trailing_zero_bits


def _integer(value: int) -> tirx.IntImm:
    """`value` as an int32 constant where C types its decimal int (INT32_MIN is the negation of a long),
    else as an int64 one (TVM prints a cast to int64_t)."""
    int32 = np.iinfo(np.int32)
    return tirx.IntImm("int32" if int32.min < value <= int32.max else "int64", value)


def _exact_constant(leaf):
    """A float32/float64 constant the C printer's decimal would change, as `(T)N` of an integer value that
    fits int64, else as `ldexp((T)M, E)`; +-Inf as `(+-1.0 / 0.0)`, NaN as `(0.0 / 0.0)`; any other leaf as it is."""
    float_format = _FORMATS.get(str(leaf.ty.dtype)) if isinstance(leaf, tirx.FloatImm) else None
    if float_format is None:
        return leaf
    dtype = str(leaf.ty.dtype)
    # A float32 FloatImm keeps the double it was made from; what it means is that double in float32.
    value = float_format.numpy_type(leaf.value)
    if value == 0:  # `0.000000e+00` and `-0.000000e+00` are exact; a double below float32's range is zero
        return leaf if leaf.value == 0 else tirx.FloatImm(dtype, float(value))
    if not np.isfinite(value):
        numerator = 0.0 if np.isnan(value) else math.copysign(1.0, value)
        return tirx.Div(tirx.FloatImm(dtype, numerator), tirx.FloatImm(dtype, 0.0))
    if printed_exactly(leaf.value, value):
        return leaf
    if float(value).is_integer() and abs(value) < 2 ** 63:
        return tirx.Cast(dtype, _integer(int(value)))
    significand, exponent = significand_and_exponent(float(value))
    return tirx.call_pure_extern(dtype, float_format.ldexp, tirx.Cast(dtype, _integer(significand)),
                                 tirx.IntImm("int32", exponent))


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.ExactFloatConstants")
def exact_float_constants(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """`func` with every float32/float64 constant TVM's C printer would round written exactly (see the module).
    Runs last (a simplifier would fold the conversions back into constants)."""
    return tirx.PrimFunc(func.params, map_leaves(func.body, _exact_constant), func.ret_type, func.attrs)
