"""Whole 16x8 networks (int16 activations, int8 weights, int64 biases), built with tests/tflite_builder.py as TFLite's
converter writes them, compile and match TFLite Micro bit for bit: a MobileNetV2-style classifier (stride-2 stem,
inverted residual blocks with their expansion, the explicit PAD before a stride-2 depthwise convolution, a residual
ADD, the MEAN over the image, FULLY_CONNECTED, SOFTMAX) and a TCN-style keyword spotter (causal dilated 1-D
convolutions as PAD + RESHAPE + CONV_2D + RESHAPE, a residual ADD, the MEAN over time). Both were refused before
(16x8 MEAN, PAD and RESHAPE had no kernel). The MobileNetV2-style one also runs on the emulated Cortex-M4F.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from test_int16_ops import Builder16x8  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

RELU6 = ActivationFunctionType.RELU6
SOFTMAX_OUTPUT = Quantization((1 / 32768,), (0,))  # TFLite Micro's int16 SOFTMAX output


def _symmetric(scale: float) -> Quantization:
    return Quantization((scale,), (0,))


class _Net(Builder16x8):
    """16x8 layers over NHWC tensors, each returning its output tensor's index."""

    def _scale(self, tensor: int) -> float:
        return self.tensors[tensor].quantization.scales[0]

    def conv(self, data: int, name: str, channels: int, kernel: tuple[int, int], out_scale: float,
             strides: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1), padding: int = Padding.SAME,
             activation: int = ActivationFunctionType.NONE, depthwise: bool = False) -> int:
        n, h, w, c = self.tensors[data].shape
        out_c = c if depthwise else channels
        weight_shape = (1, *kernel, out_c) if depthwise else (out_c, *kernel, c)
        weight, bias = self.weights_and_bias(name, weight_shape, out_c, self._scale(data), 3 if depthwise else 0,
                                             bias_magnitude=200_000)
        reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
        out_hw = [-(-size // s) if padding == Padding.SAME else (size - r) // s + 1
                  for size, r, s in zip((h, w), reach, strides)]
        fields = {"Padding": padding, "StrideH": strides[0], "StrideW": strides[1], "DilationHFactor": dilation[0],
                  "DilationWFactor": dilation[1], "FusedActivationFunction": activation}
        if depthwise:
            fields["DepthMultiplier"] = 1
        options = Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)
        return self.op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", (data, weight, bias),
                       Tensor(name, (n, *out_hw, out_c), "int16", _symmetric(out_scale)), options, version=2)

    def pad(self, data: int, name: str, paddings: tuple[tuple[int, int], ...]) -> int:
        shape = tuple(size + before + after for size, (before, after) in zip(self.tensors[data].shape, paddings))
        widths = self.add(Tensor(f"{name}_paddings", (len(paddings), 2), "int32", data=np.array(paddings, np.int32)))
        return self.op("PAD", (data, widths), Tensor(name, shape, "int16", self.tensors[data].quantization))

    def reshape(self, data: int, name: str, shape: tuple[int, ...]) -> int:
        target = self.add(Tensor(f"{name}_shape", (len(shape),), "int32", data=np.array(shape, np.int32)))
        return self.op("RESHAPE", (data, target), Tensor(name, shape, "int16", self.tensors[data].quantization),
                       Options("ReshapeOptions", {"NewShape": shape}))

    def add_layer(self, lhs: int, rhs: int, name: str, out_scale: float) -> int:
        return self.op("ADD", (lhs, rhs), Tensor(name, self.tensors[lhs].shape, "int16", _symmetric(out_scale)),
                       Options("AddOptions"), version=3)

    def mean(self, data: int, name: str, axes: tuple[int, ...], out_scale: float) -> int:
        shape = self.tensors[data].shape
        axis = self.add(Tensor(f"{name}_axes", (len(axes),), "int32", data=np.array(axes, np.int32)))
        kept = tuple(size for index, size in enumerate(shape) if index not in axes)
        return self.op("MEAN", (data, axis), Tensor(name, kept, "int16", _symmetric(out_scale)),
                       Options("ReducerOptions", {"KeepDims": False}))

    def classifier(self, features: int, classes: int) -> int:
        """FULLY_CONNECTED (per-tensor weight, as TFLite Micro's int16 kernel takes it) and SOFTMAX."""
        depth = self.tensors[features].shape[-1]
        scale = 0.01
        weight = self.add(Tensor("logits_w", (classes, depth), "int8", _symmetric(scale),
                                 np.random.default_rng(3).integers(-127, 128, (classes, depth)).astype(np.int8)))
        bias = self.add(Tensor("logits_b", (classes,), "int64", _symmetric(self._scale(features) * scale),
                               np.random.default_rng(4).integers(-50_000, 50_000, classes).astype(np.int64)))
        logits = self.op("FULLY_CONNECTED", (features, weight, bias),
                         Tensor("logits", (1, classes), "int16", _symmetric(0.0004)),
                         Options("FullyConnectedOptions"), version=4)
        return self.op("SOFTMAX", (logits,), Tensor("probabilities", (1, classes), "int16", SOFTMAX_OUTPUT),
                       Options("SoftmaxOptions", {"Beta": 1.0}), version=3)


def mobilenet_v2_style() -> _Net:
    """Stem conv (stride 2), an inverted residual block with a stride-2 depthwise conv behind an explicit PAD,
    one with a residual ADD, the spatial MEAN, the classifier."""
    net = _Net()
    image = net.add(Tensor("image", (1, 16, 16, 3), "int16", _symmetric(1 / 32768)))
    net.inputs.append(image)
    stem = net.conv(image, "stem", 8, (3, 3), 0.0002, strides=(2, 2), activation=RELU6)
    expanded = net.conv(stem, "block1_expand", 24, (1, 1), 0.0002, activation=RELU6)
    padded = net.pad(expanded, "block1_pad", ((0, 0), (0, 1), (0, 1), (0, 0)))
    depthwise = net.conv(padded, "block1_depthwise", 0, (3, 3), 0.0002, strides=(2, 2), padding=Padding.VALID,
                         activation=RELU6, depthwise=True)
    block1 = net.conv(depthwise, "block1_project", 8, (1, 1), 0.0003)
    expanded2 = net.conv(block1, "block2_expand", 24, (1, 1), 0.0002, activation=RELU6)
    depthwise2 = net.conv(expanded2, "block2_depthwise", 0, (3, 3), 0.0002, activation=RELU6, depthwise=True)
    projected2 = net.conv(depthwise2, "block2_project", 8, (1, 1), 0.0003)
    block2 = net.add_layer(block1, projected2, "block2_add", 0.0004)
    head = net.conv(block2, "head", 32, (1, 1), 0.0002, activation=RELU6)
    pooled = net.mean(head, "pool", (1, 2), 0.0001)
    net.outputs.append(net.classifier(pooled, 5))
    return net


def tcn_style() -> _Net:
    """Causal dilated 1-D convolutions over (1, frames, bands) as TFLite writes Conv1D: PAD the past, RESHAPE to
    (1, 1, frames, channels), CONV_2D with dilation, RESHAPE back; a residual ADD; the MEAN over time."""
    net = _Net()
    frames, bands, channels = 40, 16, 24
    features = net.add(Tensor("features", (1, frames, bands), "int16", _symmetric(1 / 4096)))
    net.inputs.append(features)
    signal = features
    outputs = []
    for index, dilation in enumerate((1, 2, 4)):
        past = 2 * dilation
        padded = net.pad(signal, f"tcn{index}_pad", ((0, 0), (past, 0), (0, 0)))
        image = net.reshape(padded, f"tcn{index}_image", (1, 1, frames + past, net.tensors[signal].shape[-1]))
        conv = net.conv(image, f"tcn{index}_conv", channels, (1, 3), 0.0003, dilation=(1, dilation),
                        padding=Padding.VALID, activation=ActivationFunctionType.RELU)
        signal = net.reshape(conv, f"tcn{index}_out", (1, frames, channels))
        outputs.append(signal)
    residual = net.add_layer(outputs[0], outputs[2], "residual", 0.0005)
    pooled = net.mean(residual, "pool", (1,), 0.0002)
    net.outputs.append(net.classifier(pooled, 12))
    return net


def _views(net: _Net) -> frozenset[str]:
    """The RESHAPEs, views of their inputs' bytes (no kernel of their own)."""
    return frozenset(net.tensors[op.outputs[0]].name for op in net.operators if op.builtin == "RESHAPE")


@pytest.mark.parametrize("net", [mobilenet_v2_style, tcn_style], ids=["mobilenet_v2_style", "tcn_style"])
def test_a_16x8_network_is_bit_exact_with_tflite_micro(net, tmp_path):
    built = net()
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path, _views(built))


@pytest.mark.slow
def test_a_16x8_mobilenet_v2_style_network_runs_on_the_emulated_cortex_m4f(tmp_path):
    path = tmp_path / "mobilenet_v2_16x8.tflite"
    path.write_bytes(build(mobilenet_v2_style().model()))
    bundle = compile(path, "cortex-m4f", tmp_path / "out")
    assert bundle.selftest.passed and bundle.selftest.where.startswith("mps2-"), bundle.selftest.output
    assert "(bit-identical)" in bundle.selftest.output, bundle.selftest.output
