"""The DSP cores' fused pixel-pair channel tiles of an unpadded convolution (backends/cortex_m/schedules/
pair_tiles.py, the helpers backends/cortex_m/helpers/templates/pair_tiles.h.in): on cortex-m4f each pair's loop
over its channel tiles becomes one call of the fused helper for 1xK kernels (a Conv1D as the converter writes it)
of any dilation 1-4, kernel width and input channel count (odd ones too), for a 3x3 kernel (a window of several
rows) and for a 1x1 one on 16 channels, while a 1x1 on 13 keeps one pixel per call (a short reduction); every layer
stays bit for bit with TFLite Micro under QEMU mps2-an386 and on the host (the helpers' portable C)."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

from backends.cortex_m.schedules.pair_tiles import FUSED_TWO_PIXEL_MIN_REDUCTION  # noqa: E402

VALID = 1  # tflite.Padding
LENGTH = 26
"""The input's columns: the 1-high cases below leave even counts of output columns and odd ones (25, 23: pairs,
then the last column on its own)."""
CHANNELS = (13, 16)
"""Input channel counts: odd (three groups of four and one input left per tap) and four whole groups."""
ONE_HIGH = [(2, 1, 8), (3, 1, 12), (3, 2, 8), (3, 3, 4), (3, 4, 8), (5, 2, 8), (4, 2, 8), (2, 3, 8)]
"""(kernel width, dilation, output channels) of the 1xK layers on each input."""
OTHERS = [((1, 1), 8), ((3, 3), 8)]
"""(kernel height and width, output channels) of the layers of other windows: a 1x1 (paired and fused on 16
channels, unpaired on 13: a short reduction) and a 3x3 (paired and fused)."""


def _output_columns(kernel: int, dilation: int) -> int:
    return LENGTH - (kernel - 1) * dilation


def _conv_model(seed: int = 29) -> bytes:
    """One int8 input [1, H, LENGTH, C] (zero point -3; H 1, or 3 for the 3x3 layer's input) per C of CHANNELS
    and, on each, one unpadded CONV_2D per case of ONE_HIGH and OTHERS, each a model output."""
    rng = np.random.default_rng(seed)
    heights = (1, 3)
    inputs = [Tensor(f"input{c}x{h}", (1, h, LENGTH, c), "int8", Quantization((0.05,), (-3,)))
              for c in CHANNELS for h in heights]
    model = Model(inputs, [], tuple(range(len(inputs))), ())
    cases = [((1, kernel), dilation, out, 0) for kernel, dilation, out in ONE_HIGH] + \
            [(window, 1, out, 1 if window[0] == 3 else 0) for window, out in OTHERS]
    for index, (channels, height) in enumerate((c, h) for c in CHANNELS for h in heights):
        for number, ((kernel_h, kernel_w), dilation, out, needs_rows) in enumerate(cases):
            if (height == 3) != bool(needs_rows):
                continue
            scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out))
            columns = LENGTH - (kernel_w - 1) * dilation
            shape = (out, kernel_h, kernel_w, channels)
            first = len(model.tensors)
            model.tensors += [
                Tensor(f"in{index}/op{number}/weights", shape, "int8", Quantization(scales, (0,) * out, 0),
                       rng.integers(-127, 128, shape).astype(np.int8)),
                Tensor(f"in{index}/op{number}/bias", (out,), "int32",
                       Quantization(tuple(0.05 * s for s in scales), (0,) * out, 0),
                       rng.integers(-3000, 3000, out).astype(np.int32)),
                Tensor(f"in{index}/op{number}/output", (1, height - kernel_h + 1, columns, out), "int8",
                       Quantization((0.3,), (5,)))]
            options = Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1,
                                                "DilationWFactor": dilation, "DilationHFactor": 1})
            model.operators.append(Operator("CONV_2D", (index, first, first + 1), (first + 2,), options, 3))
            model.outputs += (first + 2,)
    return build(model)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_one_high_convolution_pairs_fuse_their_tiles_and_stay_bit_exact(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "conv1d", _conv_model(), "cortex-m4f", "mps2-an386")
    calls = re.findall(r"_pair_tiles_s8(?:_b16)?\((.*)\);", kernels)
    # (rows, row_len, x_pixel_stride, out_pixel_stride, w_channel_stride, channels) per call, and the row stride
    # of a window of several rows (one row: a dilation of 1, its taps one run)
    sizes = {tuple(int(n) for n in call.split(", ")[-7:]) for call in calls}
    found = {size[1:] if size[1] == 1 else size for size in sizes}
    expected = set()
    for channels in CHANNELS:
        for kernel, dilation, out in ONE_HIGH:
            if kernel * channels < FUSED_TWO_PIXEL_MIN_REDUCTION or out == 4:
                continue  # unpaired: a short reduction (one pixel per call); one channel tile (no loop to fuse)
            rows, row_len = (1, kernel * channels) if dilation == 1 else (kernel, channels)
            size = (rows, row_len, channels, out, kernel * channels, out)
            expected.add(size if rows == 1 else (dilation * channels, *size))
        # the 3x3 layer's pairs: three rows of 3 * channels inputs, LENGTH * channels apart; the 1x1 layer's where
        # its reduction is long enough
        expected.add((LENGTH * channels, 3, 3 * channels, channels, 8, 9 * channels, 8))
        if channels >= FUSED_TWO_PIXEL_MIN_REDUCTION:
            expected.add((1, channels, channels, 8, channels, 8))
    assert found == expected, found ^ expected
    for kernel in re.split(r"\n(?=void )", kernels):  # one call per pair, no two-pixel MAC beside it
        if "_pair_tiles_s8" in kernel:
            assert "_dual_mac_s8x2x4(" not in kernel and "_dual_mac_q15x2x4(" not in kernel, kernel
            # an odd column count's last pixel on its own (one-pixel MAC and epilogue), the pairs fused
            lone = re.search(r"_requantize_small_s8(?:_b16)?\(", kernel) is not None
            assert lone == ("_dual_mac_s8x4(" in kernel), kernel
    # the 3x3 layers' pairs fused too: no two-pixel MAC over three rows of three pixels' inputs (its rows, row_len
    # and pixel stride are the call's last three arguments)
    windows = [tuple(int(n) for n in call.split(", ")[-3:])
               for call in re.findall(r"_dual_mac_s8x2x4\((.*)\);", kernels)]
    assert all((3, 3 * channels, channels) not in windows for channels in CHANNELS), windows
    assert "_dual_mac_q15x2x4(" not in kernels
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable sums


def _other_rounding_model(seed: int = 31) -> bytes:
    """One int8 input [1, 3, LENGTH, 16] and on it two unpadded 3x3 CONV_2Ds of 8 output channels, each a model
    output, whose requantization the DSP epilogue does not take: the first's channel 0 scaled by 0.67 (a shift
    of 0: TFLite's "double" rounding), the second's channel 1 biased by 2^30 (sums beyond [-2^30, 2^30):
    "double_right_shift"); the other channels as the 3x3 layer's above, so most outputs are not clamped."""
    rng = np.random.default_rng(seed)
    channels, out = 16, 8
    model = Model([Tensor("input", (1, 3, LENGTH, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    for number, (first_scale, second_bias) in enumerate(((4.0, 0), (0.005, 2**30))):
        scales = (first_scale, *(0.004 + 0.001 * (o % 5) for o in range(1, out)))
        bias = rng.integers(-3000, 3000, out).astype(np.int32)
        bias[1] += second_bias
        shape = (out, 3, 3, channels)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{number}/weights", shape, "int8", Quantization(scales, (0,) * out, 0),
                   rng.integers(-127, 128, shape).astype(np.int8)),
            Tensor(f"op{number}/bias", (out,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * out, 0),
                   bias),
            Tensor(f"op{number}/output", (1, 1, LENGTH - 2, out), "int8", Quantization((0.3,), (5,)))]
        options = Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1,
                                            "DilationWFactor": 1, "DilationHFactor": 1})
        model.operators.append(Operator("CONV_2D", (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_pairs_of_other_double_roundings_fuse_their_tiles_and_stay_bit_exact(tmp_path):
    """Layers whose every channel the DSP epilogue does not requantize ("double" with a shift of 0,
    "double_right_shift" with sums beyond its domain) fuse their pairs' tiles with the double-rounding helper
    (`_pair_tiles_double_s8`), bit for bit with TFLite Micro under QEMU and on the host."""
    bundle, kernels = bit_exact_bundle(tmp_path, "roundings", _other_rounding_model(), "cortex-m4f", "mps2-an386")
    fused = [kernel for kernel in re.split(r"\n(?=void )", kernels)
             if re.search(r"_pair_tiles_double_s8(?:_b16)?\(", kernel)]
    assert len(fused) == 2, kernels
    for kernel in fused:
        assert "_dual_mac_s8x2x4(" not in kernel and "_dual_mac_q15x2x4(" not in kernel, kernel
    host_selftest_passes(bundle.out_dir)
