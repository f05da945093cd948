"""Standard CNN architectures at microcontroller sizes as float ONNX models (NCHW, random weights), written with
onnx.helper the way PyTorch's exporter writes them (BatchNormalization folded into each Conv's weights, ReLU6 as
Clip): MobileNetV2, MNASNet, SqueezeNet, a ResNet, ShuffleNetV2 and a net of the pooling and resizing operators,
for onnxruntime's quantization tools (tests/tvm_ext/frontend/test_onnxruntime_quantized_nets.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_OPSET = 17


class NetBuilder:
    """Appends nodes to a graph, tracking each tensor's static shape; random weights drawn from ``seed``."""

    def __init__(self, name: str, input_shape: tuple[int, ...], seed: int) -> None:
        self.name, self.rng = name, np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.shapes = {"input": tuple(input_shape)}

    def _name(self, kind: str) -> str:
        return f"{kind}{len(self.nodes) + len(self.initializers)}"

    def constant(self, kind: str, values: np.ndarray) -> str:
        name = self._name(kind)
        self.initializers.append(numpy_helper.from_array(values, name))
        return name

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...], **attrs) -> str:
        name = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        self.shapes[name] = tuple(shape)
        return name

    def conv(self, x: str, out: int, kernel: int = 3, stride: int = 1, group: int = 1, act: str | None = "relu",
             pad: int | None = None) -> str:
        """Conv (He-initialised weights, a small bias) and its activation: "relu", "relu6" (Clip) or None."""
        n, c, h, w = self.shapes[x]
        pad = kernel // 2 if pad is None else pad
        fan_in = c // group * kernel * kernel
        weight = (self.rng.standard_normal((out, c // group, kernel, kernel)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        bias = (self.rng.standard_normal(out) * 0.1).astype(np.float32)
        size = ((h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1)
        y = self.node("Conv", [x, self.constant("w", weight), self.constant("b", bias)], (n, out, *size),
                      kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4, group=group)
        return self.activation(y, act)

    def activation(self, x: str, act: str | None) -> str:
        if act == "relu":
            return self.node("Relu", [x], self.shapes[x])
        if act == "relu6":
            return self.node("Clip", [x, self.constant("low", np.array(0, np.float32)),
                                      self.constant("high", np.array(6, np.float32))], self.shapes[x])
        return x

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b], self.shapes[a])

    def concat(self, xs: list[str]) -> str:
        n, _, h, w = self.shapes[xs[0]]
        return self.node("Concat", xs, (n, sum(self.shapes[x][1] for x in xs), h, w), axis=1)

    def pool(self, op: str, x: str, kernel: int, stride: int, pad: int = 0, ceil: int = 0, **attrs) -> str:
        n, c, h, w = self.shapes[x]

        def size(extent: int) -> int:
            span = extent + 2 * pad - kernel
            out = (-(-span // stride) if ceil else span // stride) + 1
            return out - 1 if ceil and (out - 1) * stride >= extent + pad else out

        return self.node(op, [x], (n, c, size(h), size(w)), kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad] * 4, ceil_mode=ceil, **attrs)

    def global_pool(self, x: str) -> str:
        n, c, _, _ = self.shapes[x]
        return self.node("GlobalAveragePool", [x], (n, c, 1, 1))

    def upsample(self, x: str, factor: int) -> str:
        n, c, h, w = self.shapes[x]
        scales = self.constant("scales", np.array([1, 1, factor, factor], np.float32))
        return self.node("Resize", [x, "", scales], (n, c, h * factor, w * factor), mode="nearest")

    def classifier(self, x: str, classes: int) -> str:
        """GlobalAveragePool, Flatten, Gemm."""
        pooled = self.global_pool(x)
        n, c = self.shapes[pooled][:2]
        flat = self.node("Flatten", [pooled], (n, c), axis=1)
        weight = (self.rng.standard_normal((classes, c)) * np.sqrt(1.0 / c)).astype(np.float32)
        bias = (self.rng.standard_normal(classes) * 0.1).astype(np.float32)
        return self.node("Gemm", [flat, self.constant("fc", weight), self.constant("fb", bias)], (n, classes), transB=1)

    def model(self, output: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, self.shapes["input"])],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, self.shapes[output])], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
        onnx.checker.check_model(model, full_check=True)
        return model


def _inverted_residual(net: NetBuilder, x: str, out: int, kernel: int, stride: int, expand: int, act: str) -> str:
    """MobileNetV2's block: 1x1 expansion, depthwise, linear 1x1 projection, the residual Add where shapes allow."""
    channels = net.shapes[x][1]
    y = net.conv(x, channels * expand, 1, act=act) if expand != 1 else x
    y = net.conv(y, channels * expand, kernel, stride, group=channels * expand, act=act)
    y = net.conv(y, out, 1, act=None)
    return net.add(x, y) if stride == 1 and channels == out else y


def mobilenet_v2(size: int = 32, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    net = NetBuilder("mobilenet_v2", (1, 3, size, size), seed)
    x = net.conv("input", 16, 3, 2, act="relu6")
    for out, stride, expand in ((8, 1, 1), (16, 2, 6), (16, 1, 6), (24, 2, 6), (24, 1, 6)):
        x = _inverted_residual(net, x, out, 3, stride, expand, "relu6")
    return net.model(net.classifier(net.conv(x, 64, 1, act="relu6"), classes))


def mnasnet(size: int = 32, classes: int = 10, seed: int = 1) -> onnx.ModelProto:
    net = NetBuilder("mnasnet", (1, 3, size, size), seed)
    x = net.conv("input", 16, 3, 2)
    x = net.conv(net.conv(x, 16, 3, group=16), 8, 1, act=None)  # the separable stem
    for out, kernel, stride in ((16, 3, 2), (16, 3, 1), (24, 5, 2), (24, 5, 1)):
        x = _inverted_residual(net, x, out, kernel, stride, 3, "relu")
    return net.model(net.classifier(net.conv(x, 64, 1), classes))


def squeezenet(size: int = 32, classes: int = 10, seed: int = 2) -> onnx.ModelProto:
    net = NetBuilder("squeezenet", (1, 3, size, size), seed)

    def fire(x: str, squeeze: int, expand: int) -> str:
        s = net.conv(x, squeeze, 1)
        return net.concat([net.conv(s, expand, 1), net.conv(s, expand, 3)])

    x = net.pool("MaxPool", net.conv("input", 16, 3, 2, pad=0), 3, 2, ceil=1)
    x = net.pool("MaxPool", fire(fire(x, 4, 8), 4, 8), 3, 2, ceil=1)
    x = net.conv(fire(x, 8, 16), classes, 1)
    n, c = net.shapes[x][:2]
    pooled = net.pool("AveragePool", x, net.shapes[x][2], 1)
    return net.model(net.node("Flatten", [pooled], (n, c), axis=1))


def resnet(size: int = 32, classes: int = 10, seed: int = 3) -> onnx.ModelProto:
    net = NetBuilder("resnet", (1, 3, size, size), seed)

    def basic(x: str, out: int, stride: int) -> str:
        y = net.conv(net.conv(x, out, 3, stride), out, 3, act=None)
        skip = x if stride == 1 and net.shapes[x][1] == out else net.conv(x, out, 1, stride, act=None, pad=0)
        return net.activation(net.add(y, skip), "relu")

    x = net.pool("MaxPool", net.conv("input", 16, 3), 3, 2, pad=1)
    x = basic(basic(x, 16, 1), 32, 2)
    return net.model(net.classifier(net.pool("AveragePool", x, 2, 2), classes))


def shufflenet_v2(size: int = 32, classes: int = 10, seed: int = 4) -> onnx.ModelProto:
    net = NetBuilder("shufflenet_v2", (1, 3, size, size), seed)

    def shuffle(x: str) -> str:
        n, c, h, w = net.shapes[x]
        grouped = net.node("Reshape", [x, net.constant("shape", np.array([n, 2, c // 2, h, w], np.int64))],
                           (n, 2, c // 2, h, w))
        swapped = net.node("Transpose", [grouped], (n, c // 2, 2, h, w), perm=[0, 2, 1, 3, 4])
        return net.node("Reshape", [swapped, net.constant("shape", np.array([n, c, h, w], np.int64))], (n, c, h, w))

    def unit(x: str) -> str:
        n, c, h, w = net.shapes[x]
        half = c // 2
        split = net.constant("split", np.array([half, half], np.int64))
        first, second = f"{net._name('split')}_first", f"{net._name('split')}_second"
        net.nodes.append(helper.make_node("Split", [x, split], [first, second], name=first[:-6], axis=1))
        net.shapes[first] = net.shapes[second] = (n, half, h, w)
        branch = net.conv(net.conv(net.conv(second, half, 1), half, 3, group=half, act=None), half, 1)
        return shuffle(net.concat([first, branch]))

    x = net.pool("MaxPool", net.conv("input", 16, 3, 2), 3, 2, pad=1)
    x = unit(unit(x))
    return net.model(net.classifier(net.conv(x, 32, 1), classes))


def pools_and_resize(size: int = 16, classes: int = 10, seed: int = 5) -> onnx.ModelProto:
    """Conv, MaxPool, Conv, nearest Resize x2, Concat with the first Conv, AveragePool 3x3 with padding (not
    counted), Conv, the classifier."""
    net = NetBuilder("pools_and_resize", (1, 3, size, size), seed)
    first = net.conv("input", 8, 3)
    x = net.upsample(net.conv(net.pool("MaxPool", first, 2, 2), 8, 3), 2)
    x = net.pool("AveragePool", net.concat([first, x]), 3, 1, pad=1, count_include_pad=0)
    return net.model(net.classifier(net.conv(x, 16, 3, 2), classes))


NETS: dict[str, Callable[[], onnx.ModelProto]] = {
    "mobilenet_v2": mobilenet_v2, "mnasnet": mnasnet, "squeezenet": squeezenet, "resnet": resnet,
    "shufflenet_v2": shufflenet_v2, "pools_and_resize": pools_and_resize,
}
"""The nets by name, each a function of no argument (its default microcontroller size)."""
