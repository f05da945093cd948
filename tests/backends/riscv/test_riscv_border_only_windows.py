"""An RV32 padded CONV_2D of no interior pixel (a 3x3 window padded by 1 over a 2x2 image: every window crosses the
padding) copies each pixel's window and calls the window MAC on it (`RiscvMacSchedules.windows_without_interior`,
tvm_ext/schedule/border_split.py `_border_only`), where it kept TVM's guarded loops with every MAC inlined (2,308 B a
kernel in an unseen ResNet-18's last stage); bit-exact against TFLite Micro on QEMU virt. Cortex-M DSP cores copy such
windows too, two pixels a call (tests/backends/cortex_m/test_border_only_windows.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402

CHANNELS = 24
"""Input and output channels: 20,736 MACs over the 2x2 image, enough for the MAC helpers (HELPER_MIN_MACS), three
tiles of eight."""


def no_interior_model(folder):
    """int8 [1, 2, 2, 24] (zero point -3) -> CONV_2D 3x3 stride 1 SAME (pads of 1), 24 channels, per-channel weights."""
    rng = np.random.default_rng(31)
    scales = tuple(0.004 + 0.001 * (o % 5) for o in range(CHANNELS))
    weights = rng.integers(-127, 128, (CHANNELS, 3, 3, CHANNELS)).astype(np.int8)
    bias = rng.integers(-3000, 3000, CHANNELS).astype(np.int32)
    model = Model([
        Tensor("input", (1, 2, 2, CHANNELS), "int8", Quantization((0.05,), (-3,))),
        Tensor("weights", weights.shape, "int8", Quantization(scales, (0,) * CHANNELS, 0), weights),
        Tensor("bias", (CHANNELS,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * CHANNELS, 0), bias),
        Tensor("output", (1, 2, 2, CHANNELS), "int8", Quantization((0.3,), (5,)))], [], (0,), (3,))
    fields = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    model.operators.append(Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", fields), 3))
    path = folder / "conv_no_interior.tflite"
    path.write_bytes(build(model))
    return path


def test_riscv_conv_of_no_interior_pixel_copies_its_windows_and_calls_the_helpers(compiled) -> None:
    model, kernels = virt_kernels(compiled, no_interior_model)
    # each pixel's window copied (the padding's taps the input zero point), then its channel tiles one call of the
    # fused one-pixel tiles (int32 or int16 biases' form); no accumulator of TVM's loops left
    assert "] = (int8_t)-3;" in kernels and f"{model}_conv_tiles_s8x8" in kernels, kernels
    assert "acc_ptr" not in kernels, kernels
