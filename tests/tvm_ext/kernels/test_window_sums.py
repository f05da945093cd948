"""The DSP cores' int8 average (tvm_ext.kernels.window_sums.rounded_average, a floor by an unsigned
division) equals the generic kernel's rounded quotient (tvm_ext.kernels.pool.rounded_quotient, TFLite's rounding half
away from zero) on every sum of int8 taps: its rule in integers for every count up to 1,024, and the TIR expressions
of both, evaluated on constants, for the counts of small windows and global pools."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx
from tvm.sym import Analyzer

from tvm_ext.kernels.window_sums import AVERAGE_BIAS, rounded_average
from tvm_ext.kernels.pool import rounded_quotient
from tvm_ext.kernels.quant_params import ActivationRange

FULL = ActivationRange(-128, 127)


def test_the_floor_rule_rounds_every_sum_of_int8_taps_as_tflite_does():
    for count in range(1, 1025):
        total = np.arange(-128 * count, 127 * count + 1, dtype=np.int64)
        half = count // 2
        tflite = np.where(total >= 0, (total + half) // count, -((-total + half) // count))
        lifted = total + half + AVERAGE_BIAS * count + (np.where(total < 0, -1, 0) if count % 2 == 0 else 0)
        assert lifted.min() >= 0, count  # the unsigned division's operand
        np.testing.assert_array_equal(lifted // count - AVERAGE_BIAS, tflite, err_msg=f"count {count}")


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
