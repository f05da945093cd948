"""TE definition of TFLite's int8 L2_NORMALIZATION (``reference_integer_ops::L2Normalization``), last axis.

Per row: acc = sum((x - zp)^2) in int32, then TFLite's GetInvSqrtQuantizedMultiplierExp(acc) at run time
(normalise acc into [2^27, 2^29) by pairs of bits, five Newton-Raphson steps of gemmlowp fixed point
with 3 integer bits, times sqrt(2)/2), and out = clamp(MBQM(x - zp, multiplier, shift + 7)): int8 in 1/128
units with zero point 0. The multiplier is one call of an operator of ours, which a bundle's C makes a call of
its `<prefix>_inv_sqrt_multiplier` helper (`packager.fixed_point_c`) and every other target the arithmetic here.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from packager.fixed_point_c import INV_SQRT_MULTIPLIER

from .fixed_point import (INT32_MAX, Rounding, clamp_to_int8, count_leading_zeros, multiply_by_quantized_multiplier,
                          register_helper_op, rounding_divide_by_pot)
from .softmax import rowwise
from .fixed_point import saturating_left_shift, saturating_rounding_doubling_high_mul as mul

OUTPUT_FRACTION_BITS = 7  # the output is in 1/128 units
_LARGE = 1 << 29  # acc at or above it is divided by 4 first (once: acc < 2^31)
HALF_THREE = (1 << 28) + (1 << 27)  # 1.5 with 3 integer bits
ONE = 1 << 28  # 1.0 with 3 integer bits
HALF_SQRT_2 = 1518500250  # sqrt(2)/2 with 0 integer bits
NEWTON_STEPS = 5
INV_SQRT_MULTIPLIER_OP = "tvm_ext.inv_sqrt_multiplier"


def _normalised(acc: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """(input in [2^27, 2^29), right shift) of GetInvSqrtQuantizedMultiplierExp for acc > 1, before Newton."""
    large = acc >= _LARGE
    reduced = tirx.Select(large, tirx.truncdiv(acc, 4), acc)
    shift = tirx.Select(large, tirx.const(12, "int32"), tirx.const(11, "int32"))
    pairs = tirx.truncdiv(count_leading_zeros(reduced) - 1, 2) - 1  # left_shift_bit_pairs
    return reduced * (tirx.const(1, "int32") << (2 * pairs)), shift - pairs


class _LetChain:
    """Names intermediate values as TIR ``Let`` bindings around one expression (each computed once)."""

    def __init__(self) -> None:
        self._bindings: list[tuple[tirx.Var, PrimExpr]] = []

    def bind(self, name: str, value: PrimExpr) -> PrimExpr:
        var = tirx.Var(name, "int32")
        self._bindings.append((var, value))
        return var

    def around(self, body: PrimExpr) -> PrimExpr:
        for var, value in reversed(self._bindings):
            body = tirx.Let(var, value, body)
        return body


def _expand_inv_sqrt_multiplier(call: PrimExpr) -> PrimExpr:
    """The multiplier of GetInvSqrtQuantizedMultiplierExp(acc) (INT32_MAX for acc <= 1), as arithmetic."""
    acc = call.args[0]
    lets = _LetChain()
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
    return lets.around(tirx.Select(acc <= 1, tirx.const(INT32_MAX, "int32"), scaled))


register_helper_op(INV_SQRT_MULTIPLIER_OP, INV_SQRT_MULTIPLIER, _expand_inv_sqrt_multiplier)


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
    # An extern stage, as the sum it reads must be complete first: a te.compute here is inlined into the
    # output, whose schedule then re-accumulates the sum for every element of the row.
    multiplier = rowwise("inv_sqrt_multiplier", shape[:-1], [squares],
                         lambda lets, ins, row: tirx.call_intrin("int32", INV_SQRT_MULTIPLIER_OP, ins[0][tuple(row)]))
    left_shift = te.compute(shape[:-1], lambda *row: _inv_sqrt_left_shift(squares(*row)), name="inv_sqrt_shift")

    def value(*index):
        row = index[:-1]
        shift = left_shift(*row) + OUTPUT_FRACTION_BITS
        scaled = multiply_by_quantized_multiplier(centred(*index), multiplier(*row), shift, rounding)
        return clamp_to_int8(scaled, -128, 127)

    return te.compute(shape, value, name="l2_normalization_int8")
