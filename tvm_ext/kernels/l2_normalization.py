"""TE definition of TFLite's int8 L2_NORMALIZATION (``reference_integer_ops::L2Normalization``), last axis.

Per row: acc = sum((x - zp)^2) in int32, then TFLite's GetInvSqrtQuantizedMultiplierExp(acc) at run time
(normalise acc into [2^27, 2^29) by pairs of bits, five Newton-Raphson steps of gemmlowp fixed point
with 3 integer bits, times sqrt(2)/2), and out = clamp(MBQM(x - zp, multiplier, shift + 7)): int8 in 1/128
units with zero point 0.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import INT32_MAX, Rounding, clamp_to_int8, multiply_by_quantized_multiplier, rounding_divide_by_pot
from .fixed_point import saturating_left_shift, saturating_rounding_doubling_high_mul as mul
from .softmax import Lets, rowwise

OUTPUT_FRACTION_BITS = 7  # the output is in 1/128 units
_LARGE = 1 << 29  # acc at or above it is divided by 4 first (once: acc < 2^31)
HALF_THREE = (1 << 28) + (1 << 27)  # 1.5 with 3 integer bits
ONE = 1 << 28  # 1.0 with 3 integer bits
HALF_SQRT_2 = 1518500250  # sqrt(2)/2 with 0 integer bits
NEWTON_STEPS = 5


def _log2_floor(x: PrimExpr) -> PrimExpr:
    """floor(log2(x)) for 2 <= x < 2^29, as the count of powers of two it reaches (31 - CountLeadingZeros)."""
    total = tirx.const(0, "int32")
    for bit in range(1, 29):
        total = total + tirx.Select(x >= (1 << bit), tirx.const(1, "int32"), tirx.const(0, "int32"))
    return total


def _normalised(acc: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """(input in [2^27, 2^29), right shift) of GetInvSqrtQuantizedMultiplierExp for acc > 1, before Newton."""
    large = acc >= _LARGE
    reduced = tirx.Select(large, tirx.truncdiv(acc, 4), acc)
    shift = tirx.Select(large, tirx.const(12, "int32"), tirx.const(11, "int32"))
    pairs = tirx.truncdiv(30 - _log2_floor(reduced), 2) - 1  # left_shift_bit_pairs
    return reduced * (tirx.const(1, "int32") << (2 * pairs)), shift - pairs


def _inv_sqrt_multiplier(lets: Lets, acc: PrimExpr) -> PrimExpr:
    """The multiplier of GetInvSqrtQuantizedMultiplierExp(acc) (INT32_MAX for acc <= 1)."""
    normalised, shift = _normalised(acc)
    normalised = lets.bind("normalised", normalised)
    half_input = lets.bind("half_input", rounding_divide_by_pot(tirx.shift_right(normalised, 1), 1))
    x = tirx.const(ONE, "int32")
    for _ in range(NEWTON_STEPS):
        x3 = lets.bind("x3", saturating_left_shift(mul(mul(x, x), x), 6))
        x = lets.bind("x", saturating_left_shift(mul(HALF_THREE, x) - mul(half_input, x3), 3))
    raw = lets.bind("raw", mul(x, HALF_SQRT_2))
    shift = lets.bind("shift", shift)
    scaled = tirx.Select(shift < 0, raw * (tirx.const(1, "int32") << tirx.max(-shift, 0)), raw)
    return tirx.Select(acc <= 1, tirx.const(INT32_MAX, "int32"), scaled)


def _inv_sqrt_left_shift(acc: PrimExpr) -> PrimExpr:
    """The (left) shift of GetInvSqrtQuantizedMultiplierExp(acc): minus its right shift, which is at least 0."""
    _, shift = _normalised(acc)
    return tirx.Select(acc <= 1, tirx.const(0, "int32"), -tirx.max(shift, 0))


def l2_normalization_int8(data: te.Tensor, *, input_zero_point: int, rounding: Rounding) -> te.Tensor:
    """``data`` divided by the L2 norm of its last axis, in 1/128 units (TFLite Micro's integer kernel)."""
    shape = [int(d) for d in data.shape]
    depth = te.reduce_axis((0, shape[-1]), "depth")

    def centred(*index):
        return data(*index).astype("int32") - input_zero_point

    squares = te.compute(shape[:-1], lambda *row: te.sum(centred(*row, depth) * centred(*row, depth), axis=depth),
                         name="sum_of_squares")
    multiplier = rowwise("inv_sqrt_multiplier", shape[:-1], [squares],
                         lambda lets, ins, row: _inv_sqrt_multiplier(lets, ins[0][tuple(row)]))
    left_shift = te.compute(shape[:-1], lambda *row: _inv_sqrt_left_shift(squares(*row)), name="inv_sqrt_shift")

    def value(*index):
        row = index[:-1]
        shift = left_shift(*row) + OUTPUT_FRACTION_BITS
        scaled = multiply_by_quantized_multiplier(centred(*index), multiplier(*row), shift, rounding)
        return clamp_to_int8(scaled, -128, 127)

    return te.compute(shape, value, name="l2_normalization_int8")
