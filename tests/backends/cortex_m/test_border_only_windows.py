"""A padded CONV_2D of no interior pixel on a DSP core (a 3x3 window padded by 1 over an image two rows high: every
window crosses the padding) copies the windows of a row's pixels two at a time and calls the fused pair tiles on
them, the last pixel of an odd row alone on its own copied window (`DualMacSchedules.windows_without_interior`,
tvm_ext/schedule/border_split.py `_border_only`), where it kept TVM's guarded loops, every MAC a scalar one (an unseen
ResNet-18's last stage, 2x2x72: 2.7 instructions a MAC on cortex-m4f, 1.1 now); bit-exact against TFLite Micro
under QEMU and in the bundle's host build, warning-free."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import kernels_bit_exact_everywhere  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

CHANNELS = 12
"""Input and output channels: three tiles of four, enough MACs for the helpers."""


def no_interior_model(width: int) -> bytes:
    """int8 [1, 2, width, 12] (zero point -3) -> CONV_2D 3x3 stride 1 SAME (pads of 1), 12 channels, per-channel
    weights."""
    rng = np.random.default_rng(37)
    scales = tuple(0.004 + 0.001 * (o % 5) for o in range(CHANNELS))
    weights = rng.integers(-127, 128, (CHANNELS, 3, 3, CHANNELS)).astype(np.int8)
    bias = rng.integers(-3000, 3000, CHANNELS).astype(np.int32)
    model = Model([
        Tensor("input", (1, 2, width, CHANNELS), "int8", Quantization((0.05,), (-3,))),
        Tensor("weights", weights.shape, "int8", Quantization(scales, (0,) * CHANNELS, 0), weights),
        Tensor("bias", (CHANNELS,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * CHANNELS, 0), bias),
        Tensor("output", (1, 2, width, CHANNELS), "int8", Quantization((0.3,), (5,)))], [], (0,), (3,))
    fields = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    model.operators.append(Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", fields), 3))
    return build(model)


@pytest.mark.parametrize("width", [2, 3])
def test_dsp_conv_of_no_interior_pixel_pairs_its_copied_windows(tmp_path, width: int) -> None:
    kernels = kernels_bit_exact_everywhere(tmp_path, f"conv_no_interior_{width}", no_interior_model(width))
    (body,) = (lines for name, lines in kernels.items() if "conv_2d" in name)
    text = "\n".join(body)
    # the windows copied (the padding's taps the input zero point), then one call of the fused pair tiles per pair;
    # no accumulator of TVM's loops left
    assert "] = (int8_t)-3;" in text and "_pair_tiles_s8" in text, text
    assert "acc_ptr" not in text, text
    # an odd row's last pixel alone: one call of the fused one-pixel tiles on its own window
    assert ("_conv_tiles_s8x4" in text) == (width % 2 == 1), text
