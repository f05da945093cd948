"""An RV32 FULLY_CONNECTED over several int8 rows (its weights not paired: a transformer's token rows) takes its
weights as tiled rows (`tvm_ext.kernels.dense.tile_rows`) and runs its row pairs' channel tiles as one call each of the
fused pair helper over them (`<prefix>_pair_tiles_tiled_s8x8`, backends/riscv/schedules/mac.py `tiled_pair_tiles`;
its `_part` form where the last tile stores fewer channels), not a copy of the two-pixel int8 MAC inlined in the
kernel; bit-exact against TFLite Micro on QEMU virt."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_models import fully_connected_model  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402


def six_row_model(folder):
    """FULLY_CONNECTED of 6 rows of 120 inputs to 16 units, per-channel weights: 11,520 MACs, enough for the MAC
    helpers (backends.riscv.schedules.HELPER_MIN_MACS)."""
    path = folder / "fc_rows6.tflite"
    path.write_bytes(fully_connected_model((6, 120), 16, keep_num_dims=False, seed=3, per_channel=True))
    return path


def test_riscv_rows_of_a_fully_connected_call_the_fused_tiled_pairs(compiled) -> None:
    model, kernels = virt_kernels(compiled, six_row_model)
    assert f"{model}_pair_tiles_tiled_s8x8" in kernels, kernels
    assert f"{model}_mac_s8x2x8_row(" not in kernels and f"{model}_mac_s8x2x8_tiled(" not in kernels, kernels


def padded_units_model(folder):
    """As `six_row_model` with 30 units: output channels padded to whole tiles of 8, the last tile's epilogue one
    call storing 6 channels (requantize_epilogue partial_stores)."""
    path = folder / "fc_rows6_30.tflite"
    path.write_bytes(fully_connected_model((6, 120), 30, keep_num_dims=False, seed=5, per_channel=True))
    return path


def test_riscv_rows_of_a_fully_connected_with_a_padded_last_tile_compile_bit_exact(compiled) -> None:
    # The pair tiles read the last tile's bound off its epilogue call and asked for the family's partial pair
    # tiles, which RV32 had none of: every such model (a ViT of 30 dimensions) was an internal error. The tiled
    # pairs' `_part` form stores the last tile's 6 channels.
    model, kernels = virt_kernels(compiled, padded_units_model)
    assert f"{model}_pair_tiles_tiled_part_s8x8" in kernels, kernels
