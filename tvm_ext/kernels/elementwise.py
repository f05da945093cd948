"""TE definition of TFLite's int8 ADD (with numpy-style broadcasting of equal-rank inputs)."""

from __future__ import annotations

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import Rounding, clamp_to_int8, multiply_by_quantized_multiplier, wrapping_left_shift
from .quant_params import ActivationRange, AddParams


def _broadcast_read(tensor: te.Tensor, index) -> PrimExpr:
    return tensor(*(0 if int(d) == 1 else i for d, i in zip(tensor.shape, index)))


def add_int8(
    lhs: te.Tensor, rhs: te.Tensor, *, lhs_zero_point: int, rhs_zero_point: int, output_zero_point: int,
    params: AddParams, activation: ActivationRange, rounding: Rounding,
) -> te.Tensor:
    """out = clamp(MBQM(MBQM(lhs'<<20) + MBQM(rhs'<<20)) + out_zp), lhs' = lhs - lhs_zp (TFLite AddFunc)."""
    shape = [max(int(a), int(b)) for a, b in zip(lhs.shape, rhs.shape)]

    def rescaled(tensor: te.Tensor, zero_point: int, multiplier_shift: tuple[int, int], name: str) -> te.Tensor:
        def value(*index):
            centered = _broadcast_read(tensor, index).astype("int32") - zero_point
            return multiply_by_quantized_multiplier(
                wrapping_left_shift(centered, params.left_shift), *multiplier_shift, rounding
            )

        return te.compute(shape, value, name=name)

    # Separate stages keep each TIR expression small (one fixed-point multiply each).
    lhs_scaled = rescaled(lhs, lhs_zero_point, params.input1, "lhs_scaled")
    rhs_scaled = rescaled(rhs, rhs_zero_point, params.input2, "rhs_scaled")

    def value(*index):
        raw_sum = lhs_scaled(*index) + rhs_scaled(*index)
        out = multiply_by_quantized_multiplier(raw_sum, *params.output, rounding) + output_zero_point
        return clamp_to_int8(out, activation.low, activation.high)

    return te.compute(shape, value, name="add_int8")
