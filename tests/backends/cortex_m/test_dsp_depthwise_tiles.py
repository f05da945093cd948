"""The DSP cores' fused depthwise channel tiles (backends/cortex_m/schedules/depthwise_tiles.py's DSP_TILES, the
helpers backends/cortex_m/helpers/templates/depthwise_tiles.h.in): on cortex-m4f an interior pixel's loop over its
four-channel tiles (zeroed accumulators, the window call, the epilogue) becomes one call whose tiles start their
sums at the biases, out of line for a 3x3 or 5x5 window of a small kernel, inlined for any other window (a kx1
window as one row of k taps), every helper reading the weights widened to int16 (_s8x4w16); a border pixel's tiles
one call of the border helper whatever its case (its taps outside the image read the padding); every variant stays bit for bit with TFLite Micro under QEMU mps2-an386 and on the
host (the helpers' portable C)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_depthwise_border_regions import SAME, VALID  # noqa: E402
from test_depthwise_border_regions import _depthwise_model as _border_model  # noqa: E402
from test_helium_depthwise import _depthwise_model  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes  # noqa: E402

from backends.cortex_m.schedules.depthwise_tiles import DSP_INLINE_TILES  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_dsp_depthwise_interior_tiles_fuse_and_stay_bit_exact(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "depthwise", _depthwise_model(), "cortex-m4f", "mps2-an386")
    assert 7 * 6 * 32 // 4 < DSP_INLINE_TILES  # every kernel here small: its 3x3 and 5x5 windows out of line
    calls = {(window, int(rows), int(cols), int(channels)) for window, rows, cols, channels in re.findall(
        r"_depthwise_tiles(3x3|5x5)?_s8x4w16(?:_b16)?\(.*, (\d+), (\d+), (\d+)\);", kernels)}
    windows = {(window, rows, cols) for window, rows, cols, _ in calls}
    assert windows == {("3x3", 3, 3), ("5x5", 5, 5), ("", 2, 2)}, windows
    # every channel count of the model in one call (depth multiplier 1; 2 takes the spread helper, below)
    assert {channels for *_, channels in calls} == {32, 24, 8, 12}, calls
    for kernel in re.split(r"\n(?=void )", kernels):  # one interior call per kernel, and one border call
        assert len(re.findall(r"_depthwise_tiles(?:3x3|5x5)?_s8x4w16(?:_b16)?\(", kernel)) <= 1, kernel
        assert len(re.findall(r"_depthwise_border(?:3x3|5x5)?_s8x4w16(?:_b16)?\(", kernel)) <= 1, kernel
    # a border pixel's one call of the border helper whatever its case (the input's zero point, -3, as the
    # padding): out of line for 3x3 and 5x5 windows, inlined for 2x2
    borders = set(re.findall(r"_depthwise_border(3x3|5x5)?_s8x4w16(?:_b16)?\(.*, -3, \d+\);", kernels))
    assert borders == {"3x3", "5x5", ""}, borders
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helpers' portable sums


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_dsp_depthwise_column_window_runs_as_one_row_and_stays_bit_exact(tmp_path):
    # one int8 input [1, 9, 1, 12], one unpadded 5x1 depthwise layer (a time-axis layer of an audio model)
    model = _border_model(12, 29, (9, 1), [((5, 1), 1, 1, VALID)])
    bundle, kernels = bit_exact_bundle(tmp_path, "column", model, "cortex-m4f", "mps2-an386")
    # the 5x1 window's call: one row (rows 1) of five taps (cols 5), the input's and weights' column strides
    # those of the window's rows (12 channels a row)
    calls = re.findall(r"_depthwise_tiles_s8x4w16(?:_b16)?\(.*, (\d+), (\d+), (\d+), (\d+), (\d+), 12\);", kernels)
    assert [(x_col, w_col, rows, cols) for x_col, _, w_col, rows, cols in calls] == [("12", "12", "1", "5")], calls
    host_selftest_passes(bundle.out_dir)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_dsp_depthwise_weights_widen_up_to_25_taps_and_a_wider_window_keeps_int8(tmp_path):
    # one int8 input [1, 9, 9, 8]: a 3x3 SAME layer (its weights widened to int16: the _s8x4w16 helpers) and a
    # 7x7 SAME layer (49 taps, more than the border helper's 25: int8 weights, the inlined int8 tiles on its
    # interior, its border the loop), both bit-exact
    model = _border_model(8, 31, (9, 9), [(3, 1, 1, SAME), (7, 1, 1, SAME)])
    bundle, kernels = bit_exact_bundle(tmp_path, "widths", model, "cortex-m4f", "mps2-an386")
    signatures = re.findall(r"void \w+_depthwise_conv_2d_(\d)x\d\w*\(const int8_t\* input0, const (int\d+)_t\* weights",
                            kernels)
    assert sorted(signatures) == [("3", "int16"), ("7", "int8")], signatures
    assert re.search(r"_depthwise_tiles_s8x4(?:_b16)?\(", kernels), kernels  # the 7x7 interior, int8 weights
    host_selftest_passes(bundle.out_dir)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_dsp_depthwise_multipliers_above_one_take_the_spread_helper_and_stay_bit_exact(tmp_path):
    # one int8 input [1, 9, 9, 6]: 3x3 SAME layers of multiplier 2 (a tile's four channels read two inputs a tap),
    # 4 and 8 (one input a tap: _s8x4m4), a 5x5 VALID one of multiplier 2 at stride 2, and a 3x3 SAME one of
    # multiplier 6 (a tile's channels read one input in some tiles, two in others: the loop kept), all bit-exact
    model = _border_model(6, 37, (9, 9), [(3, 2, 1, SAME), (3, 4, 1, SAME), (3, 8, 1, SAME), (5, 2, 2, VALID),
                                          (3, 6, 1, SAME)])
    bundle, kernels = bit_exact_bundle(tmp_path, "spread", model, "cortex-m4f", "mps2-an386")
    helpers = {}
    for kernel in re.split(r"\n(?=void )", kernels):
        name = re.match(r"void \w+_depthwise_conv_2d_(\w+)\(", kernel)
        if name is not None:
            helpers[name.group(1)] = set(re.findall(r"_depthwise_spread(_inline)?_s8x4(m2|m4)\(", kernel))
    # windows of up to 9 taps (a 3x3 window, a border's clipped ones) inlined, the 5x5 window out of line
    assert helpers == {"3x3_s1_9x9x12": {("_inline", "m2")}, "3x3_s1_9x9x24": {("_inline", "m4")},
                       "3x3_s1_9x9x48": {("_inline", "m4")}, "5x5_s2_3x3x12": {("", "m2")},
                       "3x3_s1_9x9x36": set()}, helpers
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable sums
