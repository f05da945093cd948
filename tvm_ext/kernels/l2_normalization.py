"""TE definition of TFLite's int8 L2_NORMALIZATION (``reference_integer_ops::L2Normalization``), last axis.

Per row: acc = sum((x - zp)^2) in int32, then TFLite's GetInvSqrtQuantizedMultiplierExp(acc) at run time
(normalise acc into [2^27, 2^29) by pairs of bits, five Newton-Raphson steps of gemmlowp fixed point
with 3 integer bits, times sqrt(2)/2), and out = clamp(MBQM(x - zp, multiplier, shift + 7)): int8 in 1/128
units with zero point 0. The multiplier is one call of an operator of ours, which a bundle's C makes a call of
its `<prefix>_inv_sqrt_multiplier` helper (`packager.fixed_point_c`). Only that helper implements it: lowering
the operator for any other target (or C outside a bundle) raises at once (`fixed_point.register_helper_op`):
its arithmetic as TIR did not finish an llvm build in 12 minutes, and no bundle needs it.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from packager.fixed_point_c import INV_SQRT_MULTIPLIER

from .fixed_point import (Rounding, clamp_to_int8, count_leading_zeros, multiply_by_quantized_multiplier,
                          register_helper_op)
from .softmax import rowwise

OUTPUT_FRACTION_BITS = 7  # the output is in 1/128 units
_LARGE = 1 << 29  # acc at or above it is divided by 4 first (once: acc < 2^31)
INV_SQRT_MULTIPLIER_OP = "tvm_ext.inv_sqrt_multiplier"


def _normalised(acc: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """(input in [2^27, 2^29), right shift) of GetInvSqrtQuantizedMultiplierExp for acc > 1, before Newton."""
    large = acc >= _LARGE
    reduced = tirx.Select(large, tirx.truncdiv(acc, 4), acc)
    shift = tirx.Select(large, tirx.const(12, "int32"), tirx.const(11, "int32"))
    pairs = tirx.truncdiv(count_leading_zeros(reduced) - 1, 2) - 1  # left_shift_bit_pairs
    return reduced * (tirx.const(1, "int32") << (2 * pairs)), shift - pairs


register_helper_op(INV_SQRT_MULTIPLIER_OP, INV_SQRT_MULTIPLIER, None)


def inv_sqrt_left_shift(acc: PrimExpr) -> PrimExpr:
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
    left_shift = te.compute(shape[:-1], lambda *row: inv_sqrt_left_shift(squares(*row)), name="inv_sqrt_shift")

    def value(*index):
        row = index[:-1]
        shift = left_shift(*row) + OUTPUT_FRACTION_BITS
        scaled = multiply_by_quantized_multiplier(centred(*index), multiplier(*row), shift, rounding)
        return clamp_to_int8(scaled, -128, 127)

    return te.compute(shape, value, name="l2_normalization_int8")
