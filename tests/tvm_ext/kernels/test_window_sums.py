"""The DSP cores' int8 average (tvm_ext.kernels.window_sums.rounded_average, a floor by an unsigned
division) equals the generic kernel's rounded quotient (tvm_ext.kernels.pool.rounded_quotient, TFLite's rounding half
away from zero) on every sum of int8 taps: the expression compiled for llvm for every count up to PAIR_TAPS (256, the
largest window it serves), and the TIR expressions of both, evaluated on constants, for the counts of small windows
and global pools."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import te, tirx
from tvm.sym import Analyzer

from tvm_ext.kernels.window_sums import PAIR_TAPS, rounded_average
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
