"""TE definitions of TFLite's int8 binary elementwise kernels (ADD, SUB, MUL, DIV) with TFLite's broadcasting.

Broadcasting is numpy's (and TFLite's BroadcastBinaryFunction): shapes are aligned on their last axis, a
missing leading axis or an axis of extent 1 is repeated; so a rank-0 (scalar) operand broadcasts everywhere.
"""

from __future__ import annotations

from typing import Optional, Sequence

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from ..tir.broadcast import broadcast_read, broadcast_shape
from .fixed_point import (INT32_MAX, Rounding, clamp_to_int8, clamp_to_type, count_leading_zeros, doubling_high_mul,
                          largest_centered, multiply_by_constant_quantized_multiplier,
                          multiply_by_quantized_multiplier, quantized_multiplier_bound, rounding_divide_by_pot,
                          saturate_to_type, wrapping_left_shift)
from .quant_params import ActivationRange, AddParams, MulParams


def is_halved_operand(multiplier_shift: tuple[int, int], left_shift: int) -> bool:
    """Whether an ADD, SUB or SQUARED_DIFFERENCE operand of (multiplier, shift) ``multiplier_shift`` under the
    operator's ``left_shift`` (in bits) is TFLite's larger-scale operand: multiplier 2^30 with shift 0 (a ratio of
    1/2) and a left shift of at least 1, so that its rescale MBQM(x << left_shift) is x << (left_shift - 1) exactly
    where that does not overflow int32 (the caller's bound)."""
    multiplier, shift = multiplier_shift
    return (int(multiplier), int(shift)) == (1 << 30, 0) and left_shift >= 1


def _rescaled(tensor: te.Tensor, shape: list[int], zero_point: int, left_shift: int,
              multiplier_shift: tuple[int, int], rounding: Rounding, name: str,
              table: Optional[te.Tensor] = None, offset_folded: bool = False) -> tuple[te.Tensor, int]:
    """MBQM((x - zero_point) << left_shift), broadcast to ``shape``: an operand on the common scale of ADD,
    SUB and SQUARED_DIFFERENCE, and the largest magnitude it takes. A stage of its own keeps each TIR
    expression small (one fixed-point multiply each). The larger-scale operand's multiplier is 2^30 with
    shift 0 (a ratio of 1/2): MBQM then halves an even value exactly, one shift by left_shift - 1 (with
    ``offset_folded`` of x alone: its zero point's term is in the other operand's table). With ``table``
    (int32[256], ``int8_tables.rescaled_operand_table``: `rescaled_table_args`) the value is the table's entry
    at (uint8) x: one byte load and one word load where the fixed-point multiply costs about seven instructions
    per element (cortex-m4f)."""
    multiplier, shift = multiplier_shift
    largest = largest_centered(tensor.dtype, zero_point) << left_shift
    halves_exactly = is_halved_operand(multiplier_shift, left_shift) and largest <= INT32_MAX

    def value(*index):
        if table is not None:
            return table[broadcast_read(tensor, index).astype("uint8").astype("int32")]
        if offset_folded:
            return broadcast_read(tensor, index).astype("int32") * (1 << (left_shift - 1))
        centered = broadcast_read(tensor, index).astype("int32") - zero_point
        if halves_exactly:
            return centered * (1 << (left_shift - 1))
        if largest > INT32_MAX:  # the left shift may wrap: the general helper, as TFLite's int32 arithmetic
            return multiply_by_quantized_multiplier(wrapping_left_shift(centered, left_shift), multiplier, shift,
                                                    rounding)
        return multiply_by_constant_quantized_multiplier(centered * (1 << left_shift), multiplier, shift, rounding,
                                                         largest)

    bound = min(quantized_multiplier_bound(largest, multiplier, shift), INT32_MAX)
    if table is not None:  # its entries may hold the other operand's offset term too (|zero point| <= 128)
        bound = min(bound + (128 << max(left_shift - 1, 0)), INT32_MAX)
    if offset_folded:
        bound = 128 << (left_shift - 1)
    return te.compute(shape, value, name=name), bound


TABLED_ELEMENTS = 1024
"""The fewest output elements for which an operand's rescale is tabled: the table's 1,024 bytes of flash at most one
byte per output element (the rule of ``transform.int8.binary.SCALAR_TABLE_KINDS``' tables), for about six
instructions saved per element on cortex-m4f."""

TableArgs = tuple[int, int, tuple[int, int], int]
"""The arguments of ``int8_tables.rescaled_operand_table`` for one operand: zero point, left shift, (multiplier,
shift), and the constant added to each entry."""


def rescaled_table_args(dtype: str, elements: int, params: AddParams, lhs_zero_point: int, rhs_zero_point: int,
                        sign: int) -> tuple[Optional[TableArgs], Optional[TableArgs]]:
    """Per operand of an ADD (``sign`` 1), SUB or SQUARED_DIFFERENCE (-1: the difference) of ``params``, ``dtype``
    operands and an output of ``elements`` elements, the arguments of its rescaled values' table (a 1,024-byte
    weight), or None for an operand computed in the kernel: int8 operands of an output of at least
    TABLED_ELEMENTS elements are tabled, except one of multiplier 1/2 (TFLite's larger-scale operand, whose
    rescale is one shift): its zero point's term, -sign * zero_point * 2^(left_shift - 1), is added to the other
    operand's table instead."""
    if dtype != "int8" or elements < TABLED_ELEMENTS:
        return None, None
    multipliers = tuple((int(m), int(s)) for m, s in (params.input1, params.input2))
    halved = [is_halved_operand(m, params.left_shift) for m in multipliers]
    if halved[0] and halved[1]:  # equal scales: both one shift, nothing to table
        return None, None
    zero_points = (lhs_zero_point, rhs_zero_point)
    args: list[Optional[TableArgs]] = []
    for k in range(2):
        if halved[k]:
            args.append(None)
            continue
        plus = -sign * zero_points[1 - k] * (1 << (params.left_shift - 1)) if halved[1 - k] else 0
        args.append((zero_points[k], params.left_shift, multipliers[k], plus))
    return args[0], args[1]


def add_from_values(largest_sum: int, output: tuple[int, int], output_zero_point: int,
                    rounding: Rounding) -> Optional[tuple[int, int, int]]:
    """TFLite's int8 ADD or SUB output stage on the sum s of its operands' doubled rescaled values
    (``int8_tables.scaled_operand_table``; ``largest_sum`` the largest |s|), or SQUARED_DIFFERENCE's on s twice the
    squared difference, as one rounding high product and a shift: (multiplier, right, bias) with which
    ``(((s * multiplier + 2^31) >> 32) + bias + (s < 0 ? -1 : 0)) >> right`` is
    MBQM(s / 2, *output) + output_zero_point (double rounding), or None where that does not hold in int32 steps.

    With s = 2x, (s * m + 2^31) >> 32 is (x * m + 2^30) >> 31, SaturatingRoundingDoublingHighMul(x, m) (gemmlowp's
    nudge and truncating division round half up; nothing saturates for m >= 0). RoundingDivideByPOT(p, right) plus
    the zero point is (p + 2^(right - 1) + (zero point << right) - (p < 0)) >> right; p < 0 only where s < 0, and
    where s < 0 gives p = 0 the sign term changes nothing (0 is no tie for right >= 1), so the sign is s's. Needs
    double rounding, an output shift of -31..-1 (right 1..31), a multiplier of 0..2^31 - 1, |s| below 2^31 and
    |p| + |bias| + 1 below 2^31."""
    multiplier, shift = (int(v) for v in output)
    right = -shift
    if rounding is not Rounding.DOUBLE or not 1 <= right <= 31 or not 0 <= multiplier <= INT32_MAX \
            or largest_sum > INT32_MAX:
        return None
    bias = (1 << (right - 1)) + (int(output_zero_point) << right)
    largest_product = (largest_sum * multiplier + (1 << 31)) >> 32
    if largest_product + 1 + abs(bias) + 1 > INT32_MAX:  # p's floor below -|s| m / 2^32, the sign term
        return None
    return multiplier, right, bias


def _rescaled_operands(lhs: te.Tensor, rhs: te.Tensor, shape: list[int], lhs_zero_point: int, rhs_zero_point: int,
                       params: AddParams, rounding: Rounding, tables: Sequence[te.Tensor] = (),
                       tabled: tuple[bool, bool] = (False, False)
                       ) -> tuple[tuple[te.Tensor, int], tuple[te.Tensor, int]]:
    """Both operands of a binary operator on their common scale (`_rescaled` with `params`' left shift and each
    operand's multiplier), as stages "lhs_scaled" and "rhs_scaled", each with its largest magnitude; ``tabled``
    says which operands' values are tables (`rescaled_table_args`), ``tables`` those tables, in order. An operand
    not tabled beside a tabled one has its zero point's term in the other's table (`rescaled_table_args`)."""
    if len(tables) != sum(tabled):
        raise ValueError(f"{len(tables)} rescaled-value tables for the tabled operands {tabled}")
    remaining = iter(tables)
    lhs_table, rhs_table = (next(remaining) if operand_tabled else None for operand_tabled in tabled)
    folded = [not operand_tabled and other for operand_tabled, other in zip(tabled, reversed(tabled))]
    return (_rescaled(lhs, shape, lhs_zero_point, params.left_shift, params.input1, rounding, "lhs_scaled", lhs_table,
                      folded[0]),
            _rescaled(rhs, shape, rhs_zero_point, params.left_shift, params.input2, rounding, "rhs_scaled", rhs_table,
                      folded[1]))


def _add_or_sub_int8(
    lhs: te.Tensor, rhs: te.Tensor, sign: int, name: str, tables: Sequence[te.Tensor], *, lhs_zero_point: int,
    rhs_zero_point: int, output_zero_point: int, params: AddParams, activation: ActivationRange, rounding: Rounding,
    lhs_tabled: bool = False, rhs_tabled: bool = False,
) -> te.Tensor:
    """out = clamp(MBQM(MBQM(lhs'<<20) + sign * MBQM(rhs'<<20)) + out_zp), x' = x - x_zp (TFLite AddFunc,
    SubFunc); ``sign`` is 1 for ADD, -1 for SUB; ``tables``: the rescaled-value tables of the operands the lowering
    tabled (``lhs_tabled``, ``rhs_tabled``: `rescaled_table_args`), lhs's first, or none. The output has the
    operands' type (int8, or int16 as TFLite Micro's int16 ADD, whose left shift is 15)."""
    shape = broadcast_shape(lhs, rhs)
    (lhs_scaled, lhs_largest), (rhs_scaled, rhs_largest) = _rescaled_operands(
        lhs, rhs, shape, lhs_zero_point, rhs_zero_point, params, rounding, tables, (lhs_tabled, rhs_tabled))

    def value(*index):
        raw = lhs_scaled(*index) + rhs_scaled(*index) if sign > 0 else lhs_scaled(*index) - rhs_scaled(*index)
        out = multiply_by_constant_quantized_multiplier(raw, *params.output, rounding, lhs_largest + rhs_largest)
        return clamp_to_type(out + output_zero_point, activation.low, activation.high, lhs.dtype)

    return te.compute(shape, value, name=name)


def add_int8(lhs: te.Tensor, rhs: te.Tensor, *tables: te.Tensor, **quantization) -> te.Tensor:
    """TFLite's int8 ADD; ``tables`` and keywords as ``_add_or_sub_int8``."""
    return _add_or_sub_int8(lhs, rhs, 1, "add_int8", tables, **quantization)


def sub_int8(lhs: te.Tensor, rhs: te.Tensor, *tables: te.Tensor, **quantization) -> te.Tensor:
    """TFLite's int8 SUB (lhs - rhs); ``tables`` and keywords as ``_add_or_sub_int8``."""
    return _add_or_sub_int8(lhs, rhs, -1, "sub_int8", tables, **quantization)


def mul_int8(
    lhs: te.Tensor, rhs: te.Tensor, *, lhs_zero_point: int, rhs_zero_point: int, output_zero_point: int,
    params: MulParams, activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM((lhs - lhs_zp) * (rhs - rhs_zp)) + out_zp) (TFLite's MulElementwise), in the operands'
    type: int8, or int16 as TFLite Micro's int16 MUL (zero points 0). The product of two centered values, at most
    255 * 255 (int8) or 32768 * 32768 = 2^30 (int16) in magnitude, fits int32."""
    dtype = str(lhs.dtype)
    largest = largest_centered(dtype, lhs_zero_point) * largest_centered(dtype, rhs_zero_point)

    def value(*index):
        product = ((broadcast_read(lhs, index).astype("int32") - lhs_zero_point)
                   * (broadcast_read(rhs, index).astype("int32") - rhs_zero_point))
        out = multiply_by_constant_quantized_multiplier(product, *params.output, rounding, largest) + output_zero_point
        return clamp_to_type(out, activation.low, activation.high, dtype)

    return te.compute(broadcast_shape(lhs, rhs), value, name="mul_int8")


def maximum_int8(lhs: te.Tensor, rhs: te.Tensor) -> te.Tensor:
    """out = max(lhs, rhs) on the stored int8 (or int16) values: TFLM's MAXIMUM compares the raw values, whatever
    the operands' and output's quantization."""
    return te.compute(broadcast_shape(lhs, rhs),
                      lambda *index: te.max(broadcast_read(lhs, index), broadcast_read(rhs, index)),
                      name="maximum_int8")


def minimum_int8(lhs: te.Tensor, rhs: te.Tensor) -> te.Tensor:
    """out = min(lhs, rhs) on the stored int8 values (TFLM's MINIMUM, as ``maximum_int8``)."""
    return te.compute(broadcast_shape(lhs, rhs),
                      lambda *index: te.min(broadcast_read(lhs, index), broadcast_read(rhs, index)),
                      name="minimum_int8")


def squared_difference_int8(
    lhs: te.Tensor, rhs: te.Tensor, *tables: te.Tensor, lhs_zero_point: int, rhs_zero_point: int,
    output_zero_point: int, params: AddParams, rounding: Rounding, lhs_tabled: bool = False, rhs_tabled: bool = False,
) -> te.Tensor:
    """out = clamp(MBQM(d * d) + out_zp), d = MBQM(lhs'<<s) - MBQM(rhs'<<s) (TFLM's SquaredDifference; s is
    ``params.left_shift``: 7 for int8, 0 for int16; |d| is at most 2^15, so d * d fits int32); the output has the
    operands' type (int8, or int16 with zero points 0); ``tables``, ``lhs_tabled``, ``rhs_tabled`` as
    ``_add_or_sub_int8``'s (the tables of sign -1)."""
    shape = broadcast_shape(lhs, rhs)
    (lhs_scaled, lhs_largest), (rhs_scaled, rhs_largest) = _rescaled_operands(
        lhs, rhs, shape, lhs_zero_point, rhs_zero_point, params, rounding, tables, (lhs_tabled, rhs_tabled))

    def value(*index):
        difference = lhs_scaled(*index) - rhs_scaled(*index)
        out = multiply_by_constant_quantized_multiplier(difference * difference, *params.output, rounding,
                                                        (lhs_largest + rhs_largest) ** 2)
        return saturate_to_type(out + output_zero_point, lhs.dtype)

    return te.compute(shape, value, name="squared_difference_int8")


def div_int8(
    lhs: te.Tensor, rhs: te.Tensor, reciprocals: te.Tensor, reciprocal_shifts: te.Tensor, *, lhs_zero_point: int,
    rhs_zero_point: int, output_zero_point: int, params: tuple[int, int], activation: ActivationRange,
    rounding: Rounding,
) -> te.Tensor:
    """TFLite's int8 DIV (reference_ops::DivElementwise, double rounding): with a = lhs - lhs_zp and d = rhs - rhs_zp
    (both negated when d < 0), the quotient is SRDHM(a << h, ``reciprocals[d]``) with h the leading sign bits of a
    and ``reciprocals`` int32[257] (``int8_tables.reciprocal_tables``), rescaled by ``params`` (multiplier, shift
    <= 21: DIV_LARGEST_SHIFT) and divided by 2^e, e = ``reciprocal_shifts[d]`` + h - shift, plus the output zero
    point, clamped to ``activation``.

    e reaches 32 and more where the quotient is below one output step (a small a over a large d): gemmlowp's
    RoundingDivideByPOT then shifts an int32 by 32 or more, undefined in C; the tflite-micro package (x86, the
    reference) shifts by e - 32 and adds 1 to a non-negative value, and so does this kernel, in defined C."""
    if rounding is not Rounding.DOUBLE:
        raise ValueError("DIV is TFLite's double-rounding arithmetic only")
    multiplier, shift = params
    shape = broadcast_shape(lhs, rhs)

    def operands_at(index) -> tuple[PrimExpr, PrimExpr, PrimExpr]:
        """(numerator, divisor, headroom) at ``index``: the centered operands, negated when the divisor is < 0."""
        numerator = broadcast_read(lhs, index).astype("int32") - lhs_zero_point
        divisor = broadcast_read(rhs, index).astype("int32") - rhs_zero_point
        numerator = tirx.Select(divisor < 0, -numerator, numerator)
        divisor = tirx.Select(divisor < 0, -divisor, divisor)
        return numerator, divisor, count_leading_zeros(tirx.Select(numerator >= 0, numerator, ~numerator)) - 1

    def scaled_at(*index) -> PrimExpr:
        numerator, divisor, headroom = operands_at(index)
        quotient = doubling_high_mul(wrapping_left_shift(numerator, headroom), reciprocals[divisor])
        return doubling_high_mul(quotient, multiplier)

    def exponent_at(*index) -> PrimExpr:
        _, divisor, headroom = operands_at(index)
        return reciprocal_shifts[divisor].astype("int32") + headroom - shift

    # Stages of their own, each read only (and more than once) by the output: its TIR expression stays small.
    scaled = te.compute(shape, scaled_at, name="scaled")
    exponent = te.compute(shape, exponent_at, name="exponent")

    def value(*index):
        x, e = scaled(*index), exponent(*index)
        beyond = (x >> tirx.max(e - 32, 0)) + tirx.Select(x >= 0, 1, 0)
        divided = tirx.Select(e < 32, rounding_divide_by_pot(x, tirx.min(e, 31)), beyond)
        return clamp_to_int8(divided + output_zero_point, activation.low, activation.high)

    return te.compute(broadcast_shape(lhs, rhs), value, name="div_int8")
