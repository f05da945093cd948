"""The RV32 FULLY_CONNECTED row helper priced per bundle (backends/riscv/schedules/fc_rows_price.py,
`riscv_bundle_choice`): a bundle of one small layer keeps the layer's own loop over its channel tiles (the helper's
one copy does not pay), bit-exact against TFLite Micro on QEMU virt; a bundle of many such layers takes it."""

from __future__ import annotations

import pytest

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.riscv.schedules.fc_rows_price import (FC_ROWS_CODE_BYTES, FC_ROWS_KERNEL_BYTES, FC_ROWS_SAVED_PER_TILE,
                                                    row_helper_pays)

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_models import fully_connected_model  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402


def two_tile_model(folder):
    """FULLY_CONNECTED of one row of 720 inputs to 16 units (two RV32 tiles), per-tensor weights: 11,520 MACs, enough
    for the MAC helpers (backends.riscv.schedules.HELPER_MIN_MACS)."""
    path = folder / "fc_two_tiles.tflite"
    path.write_bytes(fully_connected_model((1, 720), 16, keep_num_dims=False, seed=5))
    return path


def test_riscv_a_lone_small_fully_connected_keeps_its_own_tile_loop_bit_exactly(compiled) -> None:
    model, kernels = virt_kernels(compiled, two_tile_model)
    assert "_fc_rows_s8x8" not in kernels and f"{model}_mac_s8x8_pairs(" in kernels, kernels


def test_riscv_row_helper_pays_for_many_kernels_or_many_tiles() -> None:
    # kernels alone: the copy's bytes over the bytes each calling kernel saves
    least = -(-FC_ROWS_CODE_BYTES // FC_ROWS_KERNEL_BYTES)
    assert row_helper_pays(least, 0) and not row_helper_pays(least - 1, 0)
    # one kernel: the tiles per inference whose instructions saved pay the rest of the copy at the price
    rest = (FC_ROWS_CODE_BYTES - FC_ROWS_KERNEL_BYTES) * INSTRUCTIONS_PER_BYTE
    tiles = -(-rest // FC_ROWS_SAVED_PER_TILE)
    assert row_helper_pays(1, tiles) and not row_helper_pays(1, tiles - 1)
