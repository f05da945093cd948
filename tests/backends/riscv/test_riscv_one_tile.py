"""An RV32 FULLY_CONNECTED of one row and exactly one tile of eight units (no tile loop to fuse) runs its tile as one
call of the fused one-pixel tiles (`<prefix>_conv_tiles_s8x8` or `_b16`, tiles 1: backends/riscv/schedules/mac.py
`one_tile_calls`), not the paired MAC's own out-of-line copy and the epilogue's call; bit-exact against TFLite Micro on
QEMU virt."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_models import fully_connected_model  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402


def one_tile_model(folder):
    """FULLY_CONNECTED of one row of 1,440 inputs to 8 units, per-channel weights (ae_512_52_int8's 52 -> 8 layer, its
    row long enough for 11,520 MACs: a model of fewer keeps TVM's loops, backends.riscv.schedules.HELPER_MIN_MACS)."""
    path = folder / "fc_one_tile.tflite"
    path.write_bytes(fully_connected_model((1, 1440), 8, keep_num_dims=False, seed=5, per_channel=True))
    return path


def test_riscv_one_tile_of_a_fully_connected_is_one_call_of_the_fused_tiles(compiled) -> None:
    model, kernels = virt_kernels(compiled, one_tile_model)
    assert f"{model}_conv_tiles_s8x8" in kernels, kernels  # its int32 or int16 biases' form
    assert f"{model}_mac_s8x8_pairs(" not in kernels, kernels
