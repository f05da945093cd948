"""The stacked-rows MAC of DSP cores (backends/cortex_m/schedules/stacked_mac.py, templates/stacked_mac.h.in): an int8
FULLY_CONNECTED of one input row compiled for cortex-m4f takes its weights stacked two channels to an int16 half
(tvm_ext.kernels.dense.stack_rows) and calls the fused tiles once (eight tiles or more) or the helper once a tile, bit-exactly with TFLite Micro
under QEMU and on the host (the helper's portable C), warning-free; a layer of channels four does not divide has them padded with zero
weight rows to whole tiles."""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_dual_mac import OBJDUMP, _functions_with, _strict_build, bit_exact_on_cortex_m4f  # noqa: E402
from tflite_models import fully_connected_model  # noqa: E402

from backends.cortex_m.schedules.fc_tiles import FUSED_TILES_MIN  # noqa: E402


@pytest.mark.skipif(shutil.which(OBJDUMP) is None, reason="arm-none-eabi binutils are not installed")
# 12 channels (three tiles); 8 over 1,100 inputs: three of the helper's chunks of 508; 4 (one tile: micro_speech's
# last layer, DualMacSchedules.whole_channel_tile); 32 (eight tiles: fused, FUSED_TILES_MIN) over 16, 36 and 600
# inputs (two chunks); per tensor and per channel (a GRU's gate products)
@pytest.mark.parametrize("input_units, units", [(36, 12), (64, 12), (1100, 8), (36, 4), (16, 32), (36, 32),
                                                (600, 32)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_a_fully_connected_row_calls_the_stacked_mac_bit_exactly(tmp_path, input_units: int, units: int,
                                                                 per_channel: bool) -> None:
    """FUSED_TILES_MIN tiles or more: one call of the fused out-of-line tiles (backends/cortex_m/schedules/fc_tiles.py:
    per tensor _fc_rows_s8x4, per channel _fc_tiles_s8x4), no loop in the kernel, the helper's loop multiplying with
    SMLAD; fewer: the stacked MAC's call, its out-of-line chunk's loop multiplying with SMLAD."""
    board = bit_exact_on_cortex_m4f(tmp_path, "dense", fully_connected_model((1, input_units), units,
                                                                            keep_num_dims=False, seed=7,
                                                                            per_channel=per_channel))
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert "_dual_mac_s8x4(" not in kernels
    if units >= 4 * FUSED_TILES_MIN:
        helper = "_fc_tiles_s8x4" if per_channel else "_fc_rows_s8x4"
        assert len(re.findall(helper + r"(_b16)?\(", kernels)) == 1 and "for (" not in kernels, kernels
    else:
        helper = "stacked_chunk_s8x4"
        assert kernels.count("_stacked_mac_s8x4(") == 1, kernels
    assert any(helper in name for name in _functions_with(board.out_dir / f"lib{board.plan.model}.a", "smlad"))
    _strict_build(board.out_dir, tmp_path / "arm", [])
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout


@pytest.mark.parametrize("units", [10, 6])
def test_channels_four_does_not_divide_are_padded_to_whole_tiles(tmp_path, units: int) -> None:
    """Ten or six output channels (not a multiple of four) over 2,048 inputs, MACs that pay the padded kernel's code
    (backends.cortex_m.schedules.conv_tiles.one_row_padding_pays: a one-row layer of 16 inputs keeps its scalar
    loop): the weights padded with zero rows to whole tiles of four (tvm_ext.transform.int8.fully_connected.
    _padded_units), one stacked call, only the layer's channels written, the self-test bit-exact."""
    board = bit_exact_on_cortex_m4f(tmp_path, "dense", fully_connected_model((1, 2048), units, keep_num_dims=False))
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert kernels.count("_stacked_mac_s8x4(") == 1 and "_dual_mac_s8x4(" not in kernels, kernels
    # only the layer's channels written: a guard of the last tile's, or one tile's loop over them
    assert f") < {units})" in kernels or f"< {units}; ++" in kernels, kernels
