"""int8 1x1 CONV_2D over one to four input channels on a DSP core as one call of the pointwise helper
(backends/cortex_m/schedules/pointwise_few.py), bit-exact with TFLite Micro.

One model of one layer per case, each with its own input and output: 1, 2, 3 and 4 input channels to 2, 5, 7 and 16
output channels (the weights' rows of 1-3 bytes: the last channel's read a byte at a time), an image of one pixel and
odd pixel counts, and one of a single output channel (its one multiplier and shift the per-channel constants of
`KernelSchedules.channel_requantization`); and a 1x1 layer stepping two pixels, which keeps another kernel. The bundle's self-test under QEMU
compares every output with TFLite Micro's.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_dual_mac import bit_exact_on_cortex_m4f  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

INPUT_QUANT = Quantization((0.05,), (-3,))
# (image height, width, input channels, output channels, stride)
POINTWISE = ((12, 12, 3, 7, 1), (5, 3, 1, 5, 1), (4, 7, 2, 16, 1), (3, 5, 4, 2, 1), (1, 1, 3, 7, 1), (3, 5, 4, 1, 1))
OTHER = ((6, 6, 3, 7, 2),)  # two pixels a step


def _model(cases, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    model = ModelBuilder()
    for index, (height, width, in_c, out_c, stride) in enumerate(cases):
        data = model.add(Tensor(f"in{index}", (1, height, width, in_c), "int8", INPUT_QUANT))
        model.inputs.append(data)
        scales = tuple(float(s) for s in rng.uniform(0.002, 0.01, out_c))
        weights = rng.integers(-127, 128, (out_c, 1, 1, in_c)).astype(np.int8)
        weight = model.add(Tensor(f"w{index}", weights.shape, "int8", Quantization(scales, (0,) * out_c, 0), weights))
        bias = model.add(Tensor(f"b{index}", (out_c,), "int32",
                                Quantization(tuple(s * INPUT_QUANT.scales[0] for s in scales), (0,) * out_c),
                                rng.integers(-2000, 2000, out_c).astype(np.int32)))
        out_quant = Quantization((0.05 * 0.006 * 40 * float(np.sqrt(in_c)) / 4,), (-5,))
        options = Options("Conv2DOptions", {"Padding": 0, "StrideH": stride, "StrideW": stride,
                                            "DilationHFactor": 1, "DilationWFactor": 1})
        out_shape = (1, -(-height // stride), -(-width // stride), out_c)
        model.outputs.append(model.op("CONV_2D", (data, weight, bias), Tensor(f"out{index}", out_shape, "int8",
                                                                             out_quant), options, version=3))
    return build(model.model())


def test_pointwise_few_channel_convolutions_are_bit_exact_with_tflite_micro(tmp_path):
    if missing_tools():
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    bundle = bit_exact_on_cortex_m4f(tmp_path, "pointwise", _model(POINTWISE + OTHER))
    assert len(bundle.selftest.max_errors) == len(POINTWISE) + len(OTHER)  # every case's output compared
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    assert kernels.count("_pointwise_few_s8(") == len(POINTWISE), kernels  # the stride-2 layer: another kernel
