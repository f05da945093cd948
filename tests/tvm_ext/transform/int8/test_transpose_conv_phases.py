"""TRANSPOSE_CONV as its output phases (tvm_ext.transform.transpose_conv_phases): ordinary convolutions whose outputs
interleave, bit-exact with TFLite Micro.

The phases' geometry is checked against a transpose convolution computed by scattering (TFLite Micro's reference
loop) on integers, per axis, over kernels 1-5, strides 1-3, SAME and VALID paddings and odd sizes. The layers go
through the real pipeline in one model of independent cases (kernels 2, 3, 4 and 5, strides 2 and 3, also unequal,
SAME and VALID, odd sizes, channels 1, 3, 8 and 17, with and without bias, per-channel and per-tensor weights, a
fused activation, a separate RELU after the layer, batch 2): on the host (lowpower's C, random inputs too) and on
the emulated cortex-m4f, cortex-m55 and rv32imc (self-tests under QEMU), each a bundle whose transpose convolutions
are all phases (convolutions: no kernel of the transpose convolution's gather).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType as Act  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from required_tools import require_tools  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from test_int8_matmul_ops import TransposeConvCase, transpose_conv_model  # noqa: E402
from tflite_builder import Operator, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402
from tvm_ext.transform.transpose_conv_phases import phase_axes  # noqa: E402


def _scattered(x: np.ndarray, w: np.ndarray, stride: int, pad: int, out: int) -> np.ndarray:
    """TFLite Micro's transpose convolution of one axis: each input adds x * w[k] to output i * stride + k - pad."""
    result = np.zeros(out, np.int64)
    for i, value in enumerate(x):
        for k, weight in enumerate(w):
            if 0 <= i * stride + k - pad < out:
                result[i * stride + k - pad] += value * weight
    return result


def _phased(x: np.ndarray, w: np.ndarray, stride: int, pad: int, out: int) -> np.ndarray:
    """The same from `phase_axes`: each phase a stride-1 convolution over the padded input, interleaved, the rows
    past the output cut off."""
    axes = phase_axes(len(x), len(w), stride, pad, out)
    assert all(axis.pad_before <= axis.pad_after for axis in axes)  # TFLite's own convolutions' padding
    result = np.zeros(axes[0].rows * stride, np.int64)
    for p, axis in enumerate(axes):
        padded = np.concatenate([np.zeros(axis.pad_before, np.int64), x, np.zeros(axis.pad_after, np.int64)])
        taps = w[list(axis.taps)]
        result[p::stride] = [padded[m:m + len(taps)] @ taps for m in range(axis.rows)]
    return result[:out]


@pytest.mark.parametrize("stride", [2, 3])
@pytest.mark.parametrize("kernel", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("size", [1, 4, 7])
def test_the_phases_compute_the_scattered_transpose_convolution(size, kernel, stride):
    rng = np.random.default_rng(size * 100 + kernel * 10 + stride)
    x, w = rng.integers(-128, 128, size), rng.integers(-127, 128, kernel)
    valid = (size - 1) * stride + kernel
    same_pad = max(0, (size - 1) * stride + kernel - size * stride) // 2  # TFLite's SAME: out = size * stride
    tflite = ((0, valid), (same_pad, size * stride))  # VALID, SAME: the phases fit whenever kernel >= stride
    cropped = ((1, valid - 2), (0, valid - 1), (2, valid - 3))  # explicit paddings (ONNX's pads): where they fit
    if kernel < stride:  # a phase without taps: the layer keeps its gather kernel
        assert all(phase_axes(size, kernel, stride, pad, out) is None for pad, out in tflite)
        return
    for pad, out in tflite + cropped:
        if phase_axes(size, kernel, stride, pad, out) is None:
            assert (pad, out) in cropped, (pad, out)
            continue
        assert np.array_equal(_phased(x, w, stride, pad, out), _scattered(x, w, stride, pad, out)), (pad, out)


PHASE_CASES = (
    TransposeConvCase((1, 4, 5, 3), (8, 2, 2), (2, 2), Padding.VALID, (1, 8, 10, 8), bias=True),
    TransposeConvCase((1, 5, 3, 8), (3, 3, 3), (2, 2), Padding.SAME, (1, 10, 6, 3), bias=True, activation=Act.RELU),
    TransposeConvCase((1, 3, 4, 17), (17, 3, 3), (2, 2), Padding.VALID, (1, 7, 9, 17), bias=False),  # odd outputs
    TransposeConvCase((1, 3, 3, 1), (1, 4, 4), (2, 2), Padding.SAME, (1, 6, 6, 1), bias=True, per_channel=False),
    TransposeConvCase((1, 4, 2, 3), (8, 5, 5), (3, 3), Padding.SAME, (1, 12, 6, 8), bias=True,
                      activation=Act.RELU6),
    TransposeConvCase((2, 3, 3, 8), (3, 5, 3), (3, 2), Padding.VALID, (2, 11, 7, 3), bias=True),  # batch 2
    TransposeConvCase((1, 4, 4, 3), (17, 4, 2), (2, 2), Padding.SAME, (1, 8, 8, 17), bias=False),
)


def _phase_model(dtype: str = "int8"):
    """PHASE_CASES, and the first case's output through a RELU of its own quantization (TFLite's converter writes
    a Conv2DTranspose's activation so): the phases apply it before they interleave."""
    model = transpose_conv_model(PHASE_CASES, dtype)
    first = model.outputs[0]
    tensors = list(model.tensors) + [Tensor("case0_relu", model.tensors[first].shape, dtype,
                                            Quantization((0.03,), (0 if dtype == "int16" else -128,)))]
    operators = list(model.operators) + [Operator("RELU", (first,), (len(tensors) - 1,))]
    return type(model)(tensors, operators, model.inputs, (len(tensors) - 1, *model.outputs[1:]))


def _assert_all_phases(out_dir, stacked: bool = True) -> None:
    """Every TRANSPOSE_CONV of the bundle ran as convolutions (kernels named by window and stride 1, no kernel of
    the gather, which is named by its output alone); with ``stacked``, the first case's (a 2x2 kernel of stride 2:
    four 1x1 phases of one geometry) one convolution of its phases stacked (an int8 layer's: a 16x8 layer's int64
    bias is the frontend's widened form, which the phases take as it is)."""
    calls = json.loads((out_dir / "manifest.json").read_text())["calls"]
    layers: dict[str, list[str]] = {}
    for call in calls:
        for layer in call["layers"]:
            layers.setdefault(layer, []).append(call["kernel"])
    tconv = {layer: kernels for layer, kernels in layers.items() if "(TRANSPOSE_CONV)" in layer}
    assert len(tconv) == len(PHASE_CASES), tconv
    for layer, kernels in tconv.items():
        convolutions = [kernel for kernel in kernels if "transpose_conv" in kernel]
        assert convolutions and all("_s1_" in kernel for kernel in convolutions), (layer, kernels)
    case0 = [kernel for kernel in tconv["case0_out (TRANSPOSE_CONV)"] if "transpose_conv" in kernel]
    assert len(case0) == (1 if stacked else 4), tconv


def test_phases_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(_phase_model(), tmp_path)
    _assert_all_phases(tmp_path / "out")


def test_16x8_phases_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(_phase_model("int16"), tmp_path)
    _assert_all_phases(tmp_path / "out", stacked=False)


EMULATED = {"cortex-m4f": ("arm-none-eabi-gcc", "qemu-system-arm"), "cortex-m55": ("arm-none-eabi-gcc", "qemu-system-arm"),
            "rv32imc": ("riscv64-unknown-elf-gcc", "qemu-system-riscv32")}
"""The emulated profiles of each backend family (the DSP tiles, Helium, the RISC-V MAC tiles) and their tools."""


@pytest.mark.parametrize("target", sorted(EMULATED))
def test_phases_are_bit_exact_on_the_emulated_cores(tmp_path, target):
    require_tools(EMULATED[target])
    path = tmp_path / "phases.tflite"
    path.write_bytes(build(_phase_model()))
    bundle = compile(path, target, tmp_path / "out")
    selftest = bundle.selftest
    assert selftest.passed and set(selftest.max_errors) == {0}, selftest.output
    _assert_all_phases(tmp_path / "out")
