"""The widened-rows MAC of DSP cores (backends/cortex_m/schedules/stacked_mac.py's wide_mac_replacement,
templates/wide_mac.h.in): an int8 FULLY_CONNECTED of one input row compiled for cortex-m4f, of enough MACs to pay the
widened helpers (backends/cortex_m/schedules/fc_tiles.py: widened_rows_pay), takes its weights as int16 SMLAD pairs
(tvm_ext.kernels.dense.widen_rows) where the profile's flash holds them, and calls the fused widened tiles once (eight
tiles or more) or the widened MAC once a tile, bit-exactly with TFLite Micro under QEMU and on the host (the
helpers' portable C), warning-free; on a board whose flash does not hold the extra byte per weight it keeps the
stacked int8 weights (tvm_ext.kernels.dense.stack_rows), bit-exactly too."""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_dual_mac import OBJDUMP, _functions_with, _strict_build, bit_exact_on_cortex_m4f  # noqa: E402
from tflite_models import fully_connected_model  # noqa: E402

from backends.cortex_m.helpers.dual_mac_c import WIDE_MAC_INPUTS  # noqa: E402
from backends.cortex_m.schedules.fc_tiles import widened_rows_pay  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402
from tvm_ext.kernels.dense import WIDE_GROUP  # noqa: E402


def test_the_helpers_pass_is_the_widened_layouts_group():
    """The matcher (backends, which may not import tvm_ext.kernels: the package import rule) and the layout name the
    group of inputs one pass of wide_mac.h.in reads each in its own constant: they must agree."""
    assert WIDE_MAC_INPUTS == WIDE_GROUP


@pytest.mark.skipif(shutil.which(OBJDUMP) is None, reason="arm-none-eabi binutils are not installed")
# 512 -> 128 (32 tiles: fused), per tensor and per channel; 6,400 -> 8 (two tiles: the widened MAC's call each, its
# row past the stacked MAC's chunk of 508 inputs)
@pytest.mark.parametrize("input_units, units, per_channel", [(512, 128, False), (512, 128, True), (6400, 8, False)])
def test_a_fully_connected_row_of_many_macs_takes_widened_weights_bit_exactly(tmp_path, input_units: int, units: int,
                                                                               per_channel: bool) -> None:
    """Eight tiles or more: one call of the fused widened tiles (per tensor _fc_rows_w16x4, per channel
    _fc_tiles_w16x4), no loop in the kernel; fewer: the widened MAC's call, its out-of-line loop multiplying with
    SMLAD; the weights int16 (twice the int8 bytes), no stacked helper in the bundle."""
    assert widened_rows_pay(input_units * units)
    board = bit_exact_on_cortex_m4f(tmp_path, "dense", fully_connected_model((1, input_units), units,
                                                                            keep_num_dims=False, seed=3,
                                                                            per_channel=per_channel))
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert "_stacked_mac_s8x4(" not in kernels and "_s8x4(" not in kernels.replace("_wide_mac_s8x4(", "")
    if units >= 32:
        helper = "_fc_tiles_w16x4" if per_channel else "_fc_rows_w16x4"
        assert len(re.findall(helper + r"(_b16)?\(", kernels)) == 1 and "for (" not in kernels, kernels
    else:
        helper = "wide_mac_s8x4"
        assert kernels.count("_wide_mac_s8x4(") == 1, kernels
    assert any(helper in name for name in _functions_with(board.out_dir / f"lib{board.plan.model}.a", "smlad"))
    weights = (board.out_dir / f"{board.plan.model}_weights.c").read_text()
    assert re.search(r"int16_t \w+\[%d\]" % (input_units * units), weights), "the widened weights: int16"
    _strict_build(board.out_dir, tmp_path / "arm", [])
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout


TIGHT_FLASH_BYTES = 100_000
"""A board's flash that holds the 512 -> 128 layer's 64 KiB of int8 weights and its code, not 64 KiB more."""


def test_a_flash_that_does_not_hold_the_widened_weights_keeps_them_stacked(tmp_path) -> None:
    """The same 512 -> 128 layer on a cortex-m4f board of TIGHT_FLASH_BYTES: the flash budget refuses the widening,
    the layer keeps its stacked int8 weights and the fused stacked tiles, bit-exactly with TFLite Micro under QEMU."""
    profile = tmp_path / "tight_flash.toml"
    profile.write_text(f'extends = "cortex-m4f"\nname = "tight-flash"\nflash_bytes = {TIGHT_FLASH_BYTES}\n')
    model = tmp_path / "dense.tflite"
    model.write_bytes(fully_connected_model((1, 512), 128, keep_num_dims=False, seed=3))
    board = compile(model, str(profile), tmp_path / "tight")
    assert board.selftest.passed and board.selftest.where.startswith("mps2-"), board.selftest.output
    assert set(board.selftest.max_errors) == {0}
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert len(re.findall(r"_fc_rows_s8x4(_b16)?\(", kernels)) == 1 and "_w16x4" not in kernels, kernels
    weights = (board.out_dir / f"{board.plan.model}_weights.c").read_text()
    assert not re.search(r"int16_t \w+\[%d\]" % (512 * 128), weights)
