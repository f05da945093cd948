"""Two output pixels per dual-MAC call (backends/cortex_m/schedules/dual_mac.py, `<prefix>_dual_mac_s8x2x4` of
backends/cortex_m/helpers/dual_mac_c.py): an int8 convolution whose reduction is long enough accumulates two neighbouring
pixels per call, each weight word feeding both (an even pixel count from the schedule, an odd one and a padded
interior from backends.cortex_m.schedules.pixel_pairs). Checked in the scheduled TIR
(which kernels take it, with which strides) and bit-exactly against TFLite Micro under QEMU and in the host
build (the helper's portable path), on reductions that end in a tail of 1-3 bytes, odd and even pixel counts,
rows of a 3x3 window and a fully connected layer.
"""

from __future__ import annotations

import pytest
from tvm import ir, te, tirx

from tvm_ext.kernels.conv import WeightLayout, conv2d_int8
from tvm_ext.kernels.fixed_point import Rounding
from tvm_ext.kernels.quant_params import ActivationRange
from tvm_ext.kernels.requantize import OutputStage
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, HELIUM_MAC_SCHEDULES
from tvm_ext.tir.tir_walk import walk

TWO_PIXELS, ONE_PIXEL = "tvm_ext.dual_mac_s8x2x4", "tvm_ext.dual_mac_s8x4"
WIDENED_PAIR = "tvm_ext.dual_mac_q15x2x4"  # the pairs of backends.cortex_m.schedules.pixel_pairs (backends.cortex_m.schedules.pair_q15)


def _scheduled_conv(image: tuple[int, int], channels: int, window: tuple[int, int],
                    dilation: tuple[int, int] = (1, 1), schedules=DUAL_MAC_SCHEDULES) -> tirx.PrimFunc:
    """An unpadded int8 CONV_2D (8 output channels, OHWI weights) scheduled as for cortex-m4f (or with the MAC
    helpers' `schedules` of another core)."""
    data = te.placeholder((1, *image, channels), "int8", name="data")
    weight = te.placeholder((8, *window, channels), "int8", name="weight")
    bias = te.placeholder((8,), "int32", name="bias")
    stage = OutputStage(1 << 30, 0, 5, ActivationRange(-128, 127), next(iter(Rounding)))
    out = conv2d_int8(data, weight, bias, input_zero_point=-3, output=stage, strides=(1, 1), padding=(0, 0, 0, 0),
                      dilation=dilation, zero_point_in_bias=True, weight_layout=WeightLayout.OHWI)
    return inline_intermediates(te.create_prim_func([data, weight, bias, out]), 4, schedules)


def _helper_calls(node) -> list[tuple[str, list[int]]]:
    """Each MAC helper call under ``node``: its op name and its integer size arguments."""
    return [(call.op.name, [int(a) for a in call.args if isinstance(a, tirx.IntImm)]) for call in walk(node)
            if isinstance(call, ir.Call) and call.op.name.startswith("tvm_ext.dual_mac")]


def test_long_reduction_on_an_even_pixel_count_takes_two_pixels_per_call():
    """A 1x1 convolution on 37 channels over 6 columns: two pixels 37 bytes apart per call, the weights of
    a channel 37 apart; a 3x3 window on 5 channels: three rows of 15, the pixels 5 apart."""
    assert _helper_calls(_scheduled_conv((3, 6), 37, (1, 1)).body) == [(TWO_PIXELS, [6 * 37, 37, 1, 37, 37])]
    assert _helper_calls(_scheduled_conv((5, 6), 5, (3, 3)).body) == [(TWO_PIXELS, [30, 45, 3, 15, 5])]


def test_dilated_one_row_window_takes_two_pixels_per_call():
    """A 1x3 window dilated 3 along the columns (a TCN's Conv1D) on 37 channels: its three taps are the rows
    of the call (111 bytes apart: three pixels), not the kernel's one row; two pixels 37 bytes apart."""
    assert _helper_calls(_scheduled_conv((1, 12), 37, (1, 3), (1, 3)).body) == [(TWO_PIXELS, [111, 111, 3, 37, 37])]


def test_odd_pixel_count_pairs_all_but_the_last_pixel():
    """One row of five columns (the schedule's split by two does not divide them): pairs of columns from the
    first, the fifth column on its own (backends.cortex_m.schedules.pixel_pairs.pair_odd_pixel_row; several such rows pair
    across rows: test_flat_pixel_pairs)."""
    calls = _helper_calls(_scheduled_conv((1, 5), 37, (1, 1)).body)
    assert calls == [(WIDENED_PAIR, [37, 1, 37]), (ONE_PIXEL, [5 * 37, 37, 1, 37])]


def test_short_reduction_keeps_one_pixel():
    """A reduction of 16 MACs: one pixel per call (the two-pixel helper's two passes would cost more)."""
    assert [name for name, _ in _helper_calls(_scheduled_conv((3, 6), 16, (1, 1)).body)] == [ONE_PIXEL]


def test_padded_pixels_go_in_pairs_border_ones_too():
    """A padded 3x3 window on 16 channels, 9 columns: the pixel branch starts a pair at every other column
    from the first (backends.cortex_m.schedules.border_window.paired_windows): inside the interior one two-pixel
    call on the pair's widened windows (its three rows of 48 inputs read as one of 144), on the border the same
    call on the two copied windows; then the ninth column's pixel as before (inside or its copied window)."""
    from test_dual_mac_window import _scheduled_conv as _scheduled_padded_conv

    func = _scheduled_padded_conv((6, 9), 16, (3, 3), 1, (1, 1, 1, 1))
    pixel = next(node for node in walk(func.body) if isinstance(node, tirx.IfThenElse))
    pair = pixel.then_case
    assert isinstance(pair, tirx.IfThenElse)
    assert _helper_calls(pair.then_case) == [(WIDENED_PAIR, [144, 1, 144])]
    assert _helper_calls(pair.else_case) == [(WIDENED_PAIR, [144, 1, 144])]
    assert [name for name, _ in _helper_calls(pixel.else_case)] == [ONE_PIXEL, ONE_PIXEL]


pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_dual_mac import VALID, _conv_model, _strict_build, bit_exact_on_cortex_m4f  # noqa: E402
from test_dual_mac_window import _first_conv_model  # noqa: E402
from tflite_models import fully_connected_model  # noqa: E402

MODELS = {
    # 37 channels (nine words and a byte): 1x1 on 7x6 (two pixels), 1x1 stride 2 on 3 columns (a pair and a
    # single pixel), 12 output channels; a 3x3 VALID window on 4 columns (two pixels, three rows of 111 bytes).
    "conv": lambda: _conv_model(37, [(8, 1, 1, 1, VALID), (12, 1, 1, 2, VALID), (4, 3, 3, 1, VALID)], seed=31),
    # SAME-padded 3x3 windows on 16 channels of a 7x9 image: 7 interior columns (three pairs and a single)
    # at stride 1, and stride 2.
    "padded": lambda: _first_conv_model(16, (7, 9), [(8, 3, 3, 1), (12, 3, 3, 2)], seed=33),
    # A 1x3 window dilated 2 along the columns on 37 channels (two output columns: one pair per row).
    "dilated": lambda: _conv_model(37, [(8, 1, 3, 1, VALID)], seed=34, dilation=(1, 2)),
    # Four rows of 35 units (eight words and three bytes): two rows per call.
    "dense": lambda: fully_connected_model((4, 35), 8, keep_num_dims=False, seed=32),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_two_pixel_kernels_are_bit_exact_on_cortex_m4f_and_on_the_host(tmp_path, name):
    board = bit_exact_on_cortex_m4f(tmp_path, name, MODELS[name]())
    header = (board.out_dir / f"{board.plan.model}_internal.h").read_text()
    kernels = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    # the int8 or the widened pairs, or (the dilated 1x3 window, a Conv1D's) a pair's tiles fused in one call
    # (backends/cortex_m/schedules/pair_tiles.py)
    assert any(call in kernels for call in ("dual_mac_s8x2x4(", "dual_mac_q15x2x4(", "_pair_tiles_s8"))
    assert "__smlad" in header
    _strict_build(board.out_dir, tmp_path / "arm", [])  # warning-free with arm-none-eabi-gcc
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout


def test_a_helium_core_pairs_pixels_on_their_int8_inputs():
    """Helium's schedules (simd = "mve") pair the same pixels, odd rows and padded interiors included, as
    two-pixel calls on the int8 windows: VMLADAV multiplies int8 lanes, so no q15 widening (its pass and
    scratch would only add). (A window of one row whose consumer is a per-channel requantization is not paired:
    its pixels run one by one through the fused channel tiles, backends/cortex_m/schedules/conv_tiles.py; these
    reductions have no consumer; test_requantize_epilogue.py shows the fused calls.)"""
    from test_dual_mac_window import _scheduled_conv as _scheduled_padded_conv

    assert _helper_calls(_scheduled_conv((1, 5), 37, (1, 1), schedules=HELIUM_MAC_SCHEDULES).body) == [
        (TWO_PIXELS, [5 * 37, 37, 1, 37, 37]), (ONE_PIXEL, [5 * 37, 37, 1, 37])]
    # 48 channels: rows of 144 B, read in place (a window of rows under 128 B is copied pixel by pixel:
    # border_window.HELIUM_COPIED_ROW_BYTES)
    func = _scheduled_padded_conv((6, 9), 48, (3, 3), 1, (1, 1, 1, 1), HELIUM_MAC_SCHEDULES)
    pixel = next(node for node in walk(func.body) if isinstance(node, tirx.IfThenElse))
    assert [name for name, _ in _helper_calls(pixel.then_case)] == [TWO_PIXELS]
    assert not any(isinstance(node, ir.Call) and "q15" in node.op.name for node in walk(func.body))
