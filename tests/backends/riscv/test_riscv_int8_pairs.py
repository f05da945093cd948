"""An RV32 FULLY_CONNECTED over several int8 rows (its weights not paired: a transformer's token rows) runs its row
pairs' channel tiles as one call each of the fused pair helper over the weights as stored
(`<prefix>_pair_tiles_w8_s8x8`, backends/riscv/schedules/mac.py RISCV_PAIR_TILES_W8) where its MACs pay the helper
(`int8_pairs_pay`), not a copy of the two-pixel int8 MAC inlined in the kernel; bit-exact against TFLite Micro on
QEMU virt."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_models import fully_connected_model  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402


def six_row_model(folder):
    """FULLY_CONNECTED of 6 rows of 120 inputs to 16 units, per-channel weights: 11,520 MACs, enough for the MAC
    helpers (backends.riscv.schedules.HELPER_MIN_MACS) and few enough for the fused pairs (`int8_pairs_pay`)."""
    path = folder / "fc_rows6.tflite"
    path.write_bytes(fully_connected_model((6, 120), 16, keep_num_dims=False, seed=3, per_channel=True))
    return path


def test_riscv_rows_of_a_fully_connected_call_the_fused_int8_pairs(compiled) -> None:
    model, kernels = virt_kernels(compiled, six_row_model)
    assert f"{model}_pair_tiles_w8_s8x8" in kernels, kernels
    assert f"{model}_mac_s8x2x8_row(" not in kernels, kernels
