"""An RV32 convolution fused with LEAKY_RELU (its epilogue the requantization, then a lookup table:
`<prefix>_requantize_small_lut_s8`) runs its pixel pairs' channel tiles as one call each of the fused pair helper's
table form (`<prefix>_pair_tiles_lut_s8x8`; `_lut_odd_s8x8` for window rows of odd length: backends/riscv/schedules/
mac.py PAIR_TILES_LUT_OPS), its lone and border pixels' as one call each of the one-pixel table form
(`<prefix>_conv_tiles_lut_s8x8`: RISCV_CONV_TILES_LUT), not inlined tile loops of the MAC's and the table epilogue's
calls; bit-exact against TFLite Micro on QEMU virt. The network: an 8 x 10 x 7 image, a 3x3 SAME convolution to 16
channels (rows of 21 inputs) and LEAKY_RELU alpha 0.3, then one to 16 channels (rows of 48) and LEAKY_RELU alpha
0.1."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from virt_kernels import virt_kernels  # noqa: E402

SAME = 0  # tflite.Padding
CONV = {"Padding": SAME, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
HEIGHT, WIDTH, CHANNELS = 8, 10, 16


def leaky_model(folder):
    """The module docstring's network, per-channel weights."""
    rng = np.random.default_rng(31)
    tensors = [Tensor("image", (1, HEIGHT, WIDTH, 7), "int8", Quantization((0.05,), (-3,)))]
    operators = []
    source, inputs = 0, 7
    for name, alpha in (("first", 0.3), ("second", 0.1)):
        first = len(tensors)
        scales = tuple(0.004 + 0.001 * (c % 5) for c in range(CHANNELS))
        tensors.extend([
            Tensor(f"{name}/weights", (CHANNELS, 3, 3, inputs), "int8",
                   Quantization(scales, (0,) * CHANNELS, 0),
                   rng.integers(-127, 128, (CHANNELS, 3, 3, inputs)).astype(np.int8)),
            Tensor(f"{name}/bias", (CHANNELS,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * CHANNELS),
                   rng.integers(-3000, 3000, CHANNELS).astype(np.int32)),
            Tensor(f"{name}/conv", (1, HEIGHT, WIDTH, CHANNELS), "int8", Quantization((0.3,), (5,))),
            Tensor(f"{name}/leaky", (1, HEIGHT, WIDTH, CHANNELS), "int8", Quantization((0.2,), (-100,)))])
        operators.extend([Operator("CONV_2D", (source, first, first + 1), (first + 2,),
                                   Options("Conv2DOptions", CONV), 3),
                          Operator("LEAKY_RELU", (first + 2,), (first + 3,),
                                   Options("LeakyReluOptions", {"Alpha": alpha}), 2)])
        source, inputs = first + 3, CHANNELS
    path = folder / "leaky_pairs.tflite"
    path.write_bytes(build(Model(tensors, operators, (0,), (source,))))
    return path


def test_riscv_leaky_relu_convolutions_call_the_fused_pairs_with_the_table(compiled) -> None:
    model, kernels = virt_kernels(compiled, leaky_model)
    assert f"{model}_pair_tiles_lut_s8x8" in kernels, kernels
    assert f"{model}_pair_tiles_lut_odd_s8x8" in kernels, kernels
    assert f"{model}_conv_tiles_lut_s8x8" in kernels, kernels  # the lone and border pixels
    assert f"{model}_requantize_small_lut_s8" not in kernels, kernels  # no tile loop left inlined
