"""The DSP cores' int8 average (tvm_ext.kernels.window_sums.rounded_average, a floor by an unsigned
division) equals the generic kernel's rounded quotient (tvm_ext.kernels.pool.rounded_quotient, TFLite's rounding half
away from zero) on every sum of int8 taps: the expression compiled for llvm for every count up to PAIR_TAPS (256, the
largest window it serves), and the TIR expressions of both, evaluated on constants, for the counts of small windows
and global pools."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tvm
from tvm import te, tirx
from tvm.sym import Analyzer

from tvm_ext.kernels.fixed_point import Rounding
from tvm_ext.kernels.window_sums import PAIR_TAPS, lane_scale, rounded_average
from tvm_ext.kernels.pool import rounded_quotient
from tvm_ext.kernels.quant_params import ActivationRange

FULL = ActivationRange(-128, 127)


def _tflite_average(total: np.ndarray, count: int) -> np.ndarray:
    """TFLite's int8 average of the sums ``total`` of ``count`` taps: the quotient rounded half away from zero."""
    half = count // 2
    return np.where(total >= 0, (total + half) // count, -((-total + half) // count))


def test_the_average_expression_rounds_every_sum_of_int8_taps_as_tflite_does():
    """rounded_average itself, compiled for llvm, for every count a window's sums take (up to PAIR_TAPS) and every
    sum of that many int8 taps; one PrimFunc of one stage a count, on the sums of the largest window."""
    counts = range(1, PAIR_TAPS + 1)
    sums = np.arange(-128 * PAIR_TAPS, 127 * PAIR_TAPS + 1, dtype=np.int32)
    total = te.placeholder((len(sums),), "int32", name="total")

    def average(count: int) -> te.Tensor:
        return te.compute(total.shape, lambda i: rounded_average(total[i], count=count, activation=FULL),
                          name=f"average_{count}")

    averages = [average(count) for count in counts]
    built = tvm.tirx.build(te.create_prim_func([total, *averages]), target="llvm")
    arrays = [tvm.runtime.tensor(sums), *(tvm.runtime.tensor(np.zeros(len(sums), np.int8)) for _ in counts)]
    built(*arrays)
    for count, result in zip(counts, arrays[1:]):
        int8_sums = (sums >= -128 * count) & (sums <= 127 * count)
        np.testing.assert_array_equal(result.numpy()[int8_sums], _tflite_average(sums[int8_sums], count),
                                      err_msg=f"count {count}")


def _value(expr: tirx.PrimExpr, analyzer: Analyzer) -> int:
    constant = analyzer.simplify(expr)
    assert isinstance(constant, tirx.IntImm), constant
    return int(constant.value)


@pytest.mark.parametrize("count", [1, 2, 4, 9, 16, 25, 64, 125, 256])
def test_the_average_expression_equals_the_generic_rounded_quotient(count: int):
    """Of the full int8 range: the average itself (a narrower activation clamps both the same way, clamp_to_type)."""
    analyzer = Analyzer()
    edges = {-128 * count, 127 * count, 0, -1, 1}
    ties = {k * count + sign * (count // 2) for k in range(-3, 4) for sign in (-1, 1)}
    values = sorted(v + d for v in edges | ties for d in (-1, 0, 1) if -128 * count <= v + d <= 127 * count)
    values += list(np.random.default_rng(count).integers(-128 * count, 127 * count, 200, endpoint=True))
    for value in values:
        total = tirx.const(int(value), "int32")
        ours = rounded_average(total, count=count, activation=FULL)
        generic = tirx.Cast("int8", rounded_quotient(total, tirx.const(count, "int32")))
        assert _value(ours, analyzer) == _value(generic, analyzer), value


def _tflite_mean(total: np.ndarray, count: int, input_zero_point: int, output_zero_point: int, multiplier: int,
                 shift: int) -> np.ndarray:
    """TFLite Micro's int8 MEAN output of the sums ``total`` of ``count`` taps: MultiplyByQuantizedMultiplier of the
    centred sum (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT by -shift), plus the output zero point,
    clamped to int8; gemmlowp's steps in int64."""
    product = (total - input_zero_point * count).astype(np.int64) * multiplier
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = np.sign(nudged) * (np.abs(nudged) // (1 << 31))  # truncated toward zero
    exponent = -shift
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (high < 0)
    rounded = (high >> exponent) + ((high & mask) > threshold)
    return np.clip(rounded + output_zero_point, -128, 127)


@pytest.mark.parametrize("count", [1, 2, 4, 9])
def test_scaled_lanes_give_tflite_mean_on_every_sum(count: int):
    """A MEAN's output from its 16-bit half where it lies (`lane_scale`: one SMLAWB or SMLAWT, the sign bit, one
    SSAT; the op modelled here as its contract, floor(multiplier * half / 2^16) + addend, tests/c/test_pool_scale.c
    the helper against it) equals TFLite Micro's on every sum of int8 taps, for zero points at both ends of int8 and
    between, multipliers at both ends of [2^30, 2^31) and right shifts 0..16: the lanes taken wherever their addend
    fits int32 (all but large shifts of far zero points), both forms (the sign bit taken off or not) among them."""
    sums = np.arange(-128 * count, 127 * count + 1, dtype=np.int64)
    cases, signs = 0, set()
    for input_zp, output_zp, multiplier, shift in itertools.product(
            (-128, -20, 0, 3, 127), (-128, 0, 21, 127), (1 << 30, 1325759844, (1 << 31) - 1), (0, -1, -2, -9, -16)):
        scale = lane_scale(count, input_zp, output_zp, multiplier, shift, Rounding.DOUBLE)
        if scale is None:  # only where the addend leaves int32: a large right shift of a zero point far from 0
            assert -shift >= 9 and output_zp != 0, (input_zp, output_zp, multiplier, shift)
            continue
        signs.add(scale.signed)
        half = sums + scale.lift  # the half's value: the centred sum
        assert np.all(np.abs(half) < 1 << 15)
        scaled = (multiplier * half) >> 16  # numpy's >> of int64 is a floor
        scaled = scaled + scale.addend - (np.where(half < 0, 1 << 15, 0) if scale.signed else 0)
        assert np.all(np.abs(scaled) < 1 << 31)
        ours = np.clip(scaled >> scale.shift, -128, 127)
        np.testing.assert_array_equal(ours, _tflite_mean(sums, count, input_zp, output_zp, multiplier, shift),
                                      err_msg=str((count, input_zp, output_zp, multiplier, shift, scale)))
        cases += 1
    assert cases >= 200 and signs == {False, True}, (cases, signs)


def test_scaled_lanes_refuse_what_their_proof_does_not_cover():
    """SINGLE rounding, a left shift, a right shift past 16 (SSAT's shift), and |centred sum| >= 2^15."""
    assert lane_scale(4, -128, 0, 1 << 30, -1, Rounding.SINGLE) is None
    assert lane_scale(4, -128, 0, 1 << 30, 1, Rounding.DOUBLE) is None
    assert lane_scale(4, -128, 0, 1 << 30, -17, Rounding.DOUBLE) is None
    assert lane_scale(129, -128, 0, 1 << 30, -1, Rounding.DOUBLE) is None
