"""Helium's depthwise schedule (backends/cortex_m/schedules/helium_depthwise.py, the helpers
backends/cortex_m/helpers/templates/helium_depthwise16.h.in): on cortex-m55 an int8 DEPTHWISE_CONV_2D of depth
multiplier 1 accumulates 16 channels per helper call where 16 divides its channels (8, the upper lanes
predicated off, where only 8 does, a count of 8 or 16 as one tile; 4 with the four-channel helper else), a pixel's
tiles fused with their requantization (an interior pixel's one call, a border pixel's one call of the border
helper whatever its case, or for a window wider than that helper's its padding products with one vector call per
box of missing taps), and every variant stays bit for bit with TFLite Micro
under QEMU mps3-an547 (MVE) and on the host (the helpers' portable C)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from test_depthwise_border_regions import OVERHANGING  # noqa: E402
from test_depthwise_border_regions import _depthwise_model as _border_model  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes  # noqa: E402
from backends.cortex_m.schedules.depthwise_tiles import KernelUse, shared_tiles  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
IMAGE = (7, 6)
CHANNELS = (32, 24, 8, 12)
"""Input channel counts: 16-channel tiles, 8-channel tiles (the helper's tail), one tile of every channel (8; 12,
whole tiles of four but of no tile of Helium's: `_predicated_tile`)."""
# (kernel size, stride, dilation, padding, depth multiplier)
CASES = [(3, 1, 1, SAME, 1), (3, 2, 1, SAME, 1), (5, 1, 1, SAME, 1), (3, 1, 2, VALID, 1), (3, 1, 2, SAME, 1),
         (2, 1, 1, SAME, 1),
         (3, 1, 1, SAME, 2)]


def _output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    reach = (kernel - 1) * dilation + 1
    return -(-size // stride) if padding == SAME else (size - reach) // stride + 1


def _depthwise_model(seed: int = 30, channel_counts: tuple[int, ...] = CHANNELS, cases: list = CASES) -> bytes:
    """One int8 input [1, 7, 6, C] (zero point -3) per C of ``channel_counts`` and, on each, one DEPTHWISE_CONV_2D
    per case of ``cases``, each a model output."""
    rng = np.random.default_rng(seed)
    inputs = [Tensor(f"input{c}", (1, *IMAGE, c), "int8", Quantization((0.05,), (-3,))) for c in channel_counts]
    model = Model(inputs, [], tuple(range(len(channel_counts))), ())
    for source, channels in enumerate(channel_counts):
        for index, (kernel, stride, dilation, padding, multiplier) in enumerate(cases):
            out_channels = channels * multiplier
            scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
            size = [_output_size(s, kernel, stride, dilation, padding) for s in IMAGE]
            first = len(model.tensors)
            shape = (1, kernel, kernel, out_channels)
            model.tensors += [
                Tensor(f"in{source}/op{index}/weights", shape, "int8",
                       Quantization(scales, (0,) * out_channels, 3), rng.integers(-127, 128, shape).astype(np.int8)),
                Tensor(f"in{source}/op{index}/bias", (out_channels,), "int32",
                       Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0),
                       rng.integers(-3000, 3000, out_channels).astype(np.int32)),
                Tensor(f"in{source}/op{index}/output", (1, *size, out_channels), "int8", Quantization((0.3,), (5,)))]
            options = Options("DepthwiseConv2DOptions", {
                "Padding": padding, "StrideW": stride, "StrideH": stride, "DepthMultiplier": multiplier,
                "DilationWFactor": dilation, "DilationHFactor": dilation})
            model.operators.append(Operator("DEPTHWISE_CONV_2D", (source, first, first + 1), (first + 2,), options, 3))
            model.outputs += (first + 2,)
    return build(model)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_helium_depthwise_takes_16_channel_tiles_and_stays_bit_exact(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "depthwise", _depthwise_model(), "cortex-m55", "mps3-an547")
    # a pixel's loop over its tiles of 16 (32 channels) or 8 (24; 8: one tile, no loop): one fused call over every
    # channel; a border pixel's one call of the border helper whatever its case (the input's zero point as the
    # padding), out of line for a 3x3 or a 5x5 window (the 5x5's 25 rectangles, past border_split.MAX_REGIONS, one
    # call: collapses_border), inlined for 2x2; a 3x3 window's interior calls the fused helper's
    # out-of-line copy, which the bundle's many small 3x3 kernels share (depthwise_tiles.shared_tiles; the other
    # windows inline it)
    fused = {int(n) for n in re.findall(r"_depthwise_tiles_s8(?:_b16)?\(.*, (\d+)\);", kernels)}
    outlined = {int(n) for n in re.findall(r"_depthwise_tiles3x3_s8(?:_b16)?\(.*, (\d+)\);", kernels)}
    border = {(form, int(n)) for form, n in re.findall(
        r"_depthwise_border(3x3|5x5)?(?:_shared)?_s8(?:_b16)?\(.*, -3, (\d+)\);", kernels)}
    assert fused == {32, 24, 8, 12} and outlined == {32, 24, 8, 12}, (fused, outlined)
    # bounded code: a kernel holds one interior call and one border call, however many border cases it has
    for kernel in re.split(r"\n(?=void )", kernels):
        calls = re.findall(r"_depthwise_(tiles|tiles3x3|border|border3x3|border5x5|border3x3_shared)_s8(?:_b16)?\(",
                           kernel)
        interior = calls.count("tiles") + calls.count("tiles3x3")
        assert interior <= 1 and len(calls) - interior <= 1, kernel
    assert border == {(form, n) for form in ("3x3", "5x5", "") for n in (32, 24, 8, 12)}, border
    # no tile of 16, 8 or 12 left unfused, none of four
    assert not re.search(r"_depthwise_(?:mac|box|pad)_s8x16\(.*, (16|8|12)\);", kernels), kernels
    assert "_depthwise_mac_s8x4(" not in kernels
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helpers' portable sums


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_helium_depthwise_of_channels_no_tile_divides_takes_predicated_tiles_bit_exactly(tmp_path):
    """38 and 10 channels (neither 16, 8 nor 4 divides them: MobileNetV1 0.3's 38, a DS-CNN's 10) take one tile of
    every channel (`helium_depthwise._predicated_tile`: 38 as two whole vectors of 16 and a predicated tail of 6,
    10 as one predicated tile), a pixel's tiles one fused call and a border pixel's one border call over every
    channel, where 38 had kept the scalar loop nest; bit for bit on mps3-an547."""
    model = _depthwise_model(10, (38, 10), [(3, 1, 1, SAME, 1), (3, 2, 1, SAME, 1)])
    _, kernels = bit_exact_bundle(tmp_path, "predicated", model, "cortex-m55", "mps3-an547")
    fused = {int(n) for n in re.findall(r"_depthwise_tiles(?:3x3)?_s8(?:_b16)?\(.*, (\d+)\);", kernels)}
    border = {int(n) for n in re.findall(r"_depthwise_border(?:3x3)?(?:_shared)?_s8(?:_b16)?\(.*, -3, (\d+)\);",
                                         kernels)}
    assert fused == {38, 10} and border == {38, 10}, (fused, border)
    assert not re.search(r"acc\w*\[0\] = \(acc\w*\[0\] \+ ", kernels), kernels  # no scalar MAC left


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("case", ["regions", "overhanging"])
def test_helium_depthwise_border_cases_stay_bit_exact(tmp_path, case):
    """The Cortex-M border test's layers (test_depthwise_border_regions: 3x3 SAME at strides 1 and 2, VALID,
    depth multiplier 2) over 16 channels take the border helper; its windows overhanging every pixel of a 4x4
    image (5x5 and 7x7, 8 channels: no interior pixel) keep the tiles' loop; both bit-exact on mps3-an547 and on
    the host."""
    model = _border_model(16, seed=16) if case == "regions" else _border_model(8, 29, (4, 4), OVERHANGING)
    bundle, kernels = bit_exact_bundle(tmp_path, case, model, "cortex-m55", "mps3-an547")
    assert bool(re.search(r"_depthwise_border3x3(?:_shared)?_s8", kernels)) == (case == "regions"), kernels
    host_selftest_passes(bundle.out_dir)


def _pool_model() -> bytes:
    """Int8 inputs [1, 7, 6, 48] and [1, 7, 6, 40] (16- and 8-channel tiles) and, on each, two AVERAGE_POOL_2D,
    each a model output: a VALID 7x6 window over the whole image (kws_ref_model's kind: its padding test
    always holds) and a VALID 3x2 window at stride 2."""
    model = Model([Tensor(f"image{c}", (1, *IMAGE, c), "int8", Quantization((0.05,), (-3,))) for c in (48, 40)], [],
                  (0, 1), ())
    for index, (source, (height, width, stride)) in enumerate(
            (source, pool) for source in (0, 1) for pool in ((7, 6, 1), (3, 2, 2))):
        channels = (48, 40)[source]
        out_h, out_w = (IMAGE[0] - height) // stride + 1, (IMAGE[1] - width) // stride + 1
        model.tensors.append(Tensor(f"pool{index}", (1, out_h, out_w, channels), "int8",
                                    Quantization((0.05,), (-3,))))
        model.operators.append(Operator("AVERAGE_POOL_2D", (source,), (len(model.tensors) - 1,),
                                        Options("Pool2DOptions", {"Padding": VALID, "StrideW": stride,
                                                                  "StrideH": stride, "FilterWidth": width,
                                                                  "FilterHeight": height})))
        model.outputs += (len(model.tensors) - 1,)
    return build(model)


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_helium_average_pools_take_the_window_sums_bit_exactly(tmp_path):
    """An int8 average pool's window of more than nine taps takes the DSP cores' window sums on cortex-m55 too
    (four channels a word: tvm_ext.kernels.window_sums; the M55 has the DSP extension; its 7x6 windows 2,702 ->
    2,592 and 2,239 -> 2,162 instructions, code 836 -> 668 B, against the depthwise tiles with the constant 1 they
    took before), bit for bit with TFLite Micro under QEMU and on the host; the 3x2 windows keep the generic
    kernel."""
    bundle, kernels = bit_exact_bundle(tmp_path, "pools", _pool_model(), "cortex-m55", "mps3-an547")
    summed = [name for name, body in kernel_bodies(kernels).items() if "_pool_word(" in body]
    assert len(summed) == 2 and all("average_pool" in name for name in summed), summed
    host_selftest_passes(bundle.out_dir)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_helium_depthwise_column_window_is_called_as_one_row_and_stays_bit_exact(tmp_path):
    # one int8 input [1, 9, 1, 40] (two tiles of 16 and a last one overlapping the one before), an unpadded 5x1
    # and a padded 3x1 depthwise layer (time-axis layers of an audio model): two small kernels of one-row windows,
    # each called as one row of taps, the one-row copy's or inlined as the bundle's choice gives it
    # (depthwise_tiles.shared_tiles) on their facts: int16 biases, the interior call's 5 and 9 executions
    model = _border_model(40, 29, (9, 1), [((5, 1), 1, 1, VALID), ((3, 1), 1, 1, SAME)])
    uses = {("1xn", "int16"): (KernelUse("valid", 1, 5, 40, 5), KernelUse("same", 1, 9, 40, 3))}
    copy = "1xn" if shared_tiles(uses).sharing else ""
    bundle, kernels = bit_exact_bundle(tmp_path, "column", model, "cortex-m55", "mps3-an547")
    # an interior pixel's call: one row (rows 1) of the window's taps (cols 5, 3), the input's and weights' column
    # strides those of the window's rows (40 channels a row)
    calls = re.findall(r"_depthwise_tiles(1xn|)_s8_b16\(.*, (\d+), (\d+), (\d+), (\d+), (\d+), 40\);", kernels)
    assert sorted((form, x_col, w_col, rows, cols) for form, x_col, _, w_col, rows, cols in calls) \
        == [(copy, "40", "40", "1", "3"), (copy, "40", "40", "1", "5")], calls
    host_selftest_passes(bundle.out_dir)
