"""TE definition of TFLite Micro's 16x8 SOFTMAX (``reference_ops::SoftmaxInt16``): int16 input and output of
zero point 0, the output's 32768 levels over [0, 1).

Per row: the difference to the row maximum, rescaled so that [-65535, 0] reads [-10, 0] and centred on int16,
goes through the exp table (Q0.15); the sum of those (Q16.15) is normalised by its leading zeros, centred, and
goes through the 1/(1+x) table; each exp times that reciprocal, shifted back by the normalisation, is the
output. The tables are the kernel's int16 operands (``softmax_int16_luts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import te, tirx

from .fixed_point import Rounding, count_leading_zeros, multiply_by_quantized_multiplier
from .lut_int16 import exp_float32, lut_lookup, populate_lut_int16
from .quant_params import quantize_multiplier

INPUT_RANGE = 65535  # int16 max - min: the exp table's input covers [-10, 0] over it
EXP_TABLE_RANGE = 10.0


@dataclass(frozen=True)
class SoftmaxInt16Luts:
    """The two tables TFLite Micro's Prepare() fills for a 16x8 SOFTMAX (any input scale)."""

    exp: np.ndarray  # exp over [-10, 0], Q0.15
    one_over_one_plus_x: np.ndarray  # 1/(1+x) over [0, 1], Q0.15


def softmax_int16_luts() -> SoftmaxInt16Luts:
    """The tables of ``SoftmaxPrepare`` (softmax_common.cc), in float32 as it computes them."""
    step = np.float32(1.0) / np.float32(INPUT_RANGE)
    exp = populate_lut_int16(exp_float32, np.float32(EXP_TABLE_RANGE) / np.float32(INPUT_RANGE), 32767,
                             np.float32(2.0) / np.float32(INPUT_RANGE), 0)
    reciprocal = populate_lut_int16(lambda x: np.float32(1.0) / (np.float32(1.0) + x), step, -32768,
                                    np.float32(2.0) / np.float32(INPUT_RANGE), 0)
    return SoftmaxInt16Luts(exp, reciprocal)


def softmax_int16_multiplier(beta: float, input_scale: np.float32, rounding: Rounding) -> tuple[int, int]:
    """(multiplier, shift) rescaling an input difference so that [-65535, 0] reads [-10, 0]."""
    return quantize_multiplier(float(input_scale) * float(beta) / (EXP_TABLE_RANGE / INPUT_RANGE), rounding)


def _saturated_int16(value) -> tirx.PrimExpr:
    return tirx.max(tirx.min(value, 32767), -32768)


def softmax_int16(data: te.Tensor, exp_lut: te.Tensor, one_over_one_plus_x_lut: te.Tensor, *, multiplier: int,
                  shift: int, rounding: Rounding) -> te.Tensor:
    """Softmax over the last axis of an int16 tensor (zero point 0) into int16 of scale 1/32768, zero point 0."""
    shape = [int(d) for d in data.shape]
    rows, depth = shape[:-1], shape[-1]
    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute(rows, lambda *r: te.max(data(*r, k), axis=k), name="row_max")
    centred = te.compute(shape, lambda *i: _saturated_int16(multiply_by_quantized_multiplier(
        data(*i).astype("int32") - row_max(*i[:-1]).astype("int32"), multiplier, shift, rounding) + 32767
    ).astype("int16"), name="centred_scaled_diff")  # int16, as TFLite stores it: half the scratch of int32
    exps = te.compute(shape, lambda *i: lut_lookup(exp_lut, centred(*i)), name="exp_q0_15")
    j = te.reduce_axis((0, depth), "j")
    sum_of_exps = te.compute(rows, lambda *r: te.sum(exps(*r, j), axis=j), name="sum_of_exps_q16_15")
    headroom = te.compute(rows, lambda *r: count_leading_zeros(sum_of_exps(*r)), name="headroom_plus_one")

    def centred_sum(*r):
        normalised = (sum_of_exps(*r).astype("int64") << (headroom(*r) - 1).astype("int64")) + (1 << 13)
        return _saturated_int16((normalised >> 14).astype("int32") - ((1 << 15) + (1 << 16)))

    centred_sums = te.compute(rows, centred_sum, name="centred_sum")
    reciprocal = te.compute(rows, lambda *r: lut_lookup(one_over_one_plus_x_lut, centred_sums(*r)),
                            name="reciprocal_q0_15")

    def output(*i):
        right_shift = (31 - headroom(*i[:-1])).astype("int64")
        product = exps(*i).astype("int64") * reciprocal(*i[:-1]).astype("int64")
        rounded = ((product + (tirx.const(1, "int64") << (right_shift - 1))) >> right_shift).astype("int32")
        return tirx.Cast("int16", tirx.max(tirx.min(rounded, 32767), 0))

    return te.compute(shape, output, name="softmax_int16")
