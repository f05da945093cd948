"""The LSTM's gate activations interpolate TFLite's sigmoid table laid out over signed inputs
(tvm_ext.kernels.lstm.signed_sigmoid_table): for every int16 gate input (and a cell state's inputs scaled up
and down), one interpolation of the signed value, its sign's -1 added before the final shift, gives what
TFLite's int16 LOGISTIC and TANH give by interpolating |x| and reflecting a negative x's result, saturation
included (TANH's input clamped at 255 table steps)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")
from tvm_ext.kernels.lstm import SIGMOID_TABLE, SIGNED_TABLE_ZERO, signed_sigmoid_table  # noqa: E402

TABLE = SIGMOID_TABLE.astype(np.int64)
SIGNED = signed_sigmoid_table().astype(np.int64)


def _tflite(x: np.ndarray, bits: int, saturated: int, tanh: bool) -> np.ndarray:
    """TFLite's reference: |x| interpolated (``saturated`` from index 255 on), a negative x's result reflected."""
    magnitude = np.abs(x)
    index = np.minimum(magnitude >> bits, 254)
    v = np.where(magnitude >> bits >= 255, saturated,
                 (TABLE[index] << bits) + (magnitude & ((1 << bits) - 1)) * (TABLE[index + 1] - TABLE[index]))
    if tanh:
        return np.where(x >= 0, v - (1 << 23) + (1 << 7), (1 << 23) - v + (1 << 7) - 1) >> 8
    return np.where(x >= 0, v + (1 << 9), (1 << 25) - v + (1 << 9) - 1) >> 10


def _signed(x: np.ndarray, bits: int, tanh: bool) -> np.ndarray:
    """The kernel's arithmetic: clamp (TANH), the floor's entry and the next, one rounding for both signs."""
    limit = 255 << bits
    x = np.clip(x, -limit, limit)
    index = (x >> bits) + SIGNED_TABLE_ZERO
    v = (SIGNED[index] << bits) + (x & ((1 << bits) - 1)) * (SIGNED[index + 1] - SIGNED[index])
    sign = x >> 63  # -1 for a negative x
    return (v - (1 << 23) + (1 << 7) + sign) >> 8 if tanh else (v + (1 << 9) + sign) >> 10


INT16 = np.arange(-32768, 32768, dtype=np.int64)


def test_sigmoid_of_every_int16_gate_input() -> None:
    np.testing.assert_array_equal(_signed(3 * INT16, 9, tanh=False), _tflite(3 * INT16, 9, 0x7FFF << 10, tanh=False))


@pytest.mark.parametrize("scaled", [3 * INT16, 48 * INT16, (3 << 10) * INT16, (3 * INT16 + 4) >> 3],
                         ids=["gate", "cell-shifted-left", "cell-far-left", "cell-shifted-right"])
def test_tanh_of_every_int16_input_scaled(scaled: np.ndarray) -> None:
    np.testing.assert_array_equal(_signed(scaled, 8, tanh=True), _tflite(scaled, 8, 0xFFFF << 8, tanh=True))
