"""RangeMethod.MSE: the activation range whose int8 grid has the smallest squared error over the values seen,
which clips a long tail that MINMAX would spend most of the grid on."""

from __future__ import annotations

import numpy as np


def _mse(values: np.ndarray, low: float, high: float) -> float:
    from tvm_ext.quantize import ActivationQuant

    quant = ActivationQuant.of_range(low, high)
    return float(np.mean((quant.dequantize(quant.quantize(values)).astype(np.float64) - values) ** 2))


def test_mse_range_clips_a_long_tail_and_beats_minmax():
    from tvm_ext.quantize.ranges import _smallest_mse_range

    rng = np.random.default_rng(4)
    values = rng.standard_t(2, 200_000)  # heavy tails: min -394, max 241, most values within +-3
    low, high = _smallest_mse_range(values)
    assert low > 0.9 * values.min() and high < 0.9 * values.max(), (low, high)
    # Measured: 0.357 against MINMAX's 0.471.
    assert _mse(values, low, high) < 0.85 * _mse(values, values.min(), values.max())


def test_mse_range_keeps_the_full_range_of_uniform_values():
    from tvm_ext.quantize.ranges import _smallest_mse_range

    values = np.linspace(-1.0, 3.0, 10_001)  # no tail: clipping only costs
    assert _smallest_mse_range(values) == (-1.0, 3.0)
