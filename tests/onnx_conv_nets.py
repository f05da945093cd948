"""Float ONNX (NCHW) conv nets written with onnx.helper, for the data layout tests and scripts/bench_layout.py.

Each net: Conv 3x3 (pad 1) -> Relu -> MaxPool 2x2 -> Conv 3x3 (pad 1, `group` groups) -> Relu -> Add (a
residual join with the pool's output) -> Flatten -> Gemm (10 outputs).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

ONNX_OPSET = 17


def residual_conv_net(size: int = 16, in_channels: int = 3, channels: int = 8, group: int = 1, seed: int = 0
                      ) -> onnx.ModelProto:
    """The net on an input of (1, in_channels, size, size) with `channels` filters per conv (the second one
    depthwise when `group` is `channels`); weights drawn from `seed`."""
    rng = np.random.default_rng(seed)

    def weights(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        values = (rng.standard_normal(int(np.prod(shape))) * 0.3).astype(np.float32)
        return helper.make_tensor(name, TensorProto.FLOAT, shape, values)

    pooled = size // 2
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], group=group),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r2", "p1"], ["a"], name="residual"),
        helper.make_node("Flatten", ["a"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], name="fc", transB=1),
    ]
    initializers = [weights("w1", (channels, in_channels, 3, 3)), weights("b1", (channels,)),
                    weights("w2", (channels, channels // group, 3, 3)), weights("b2", (channels,)),
                    weights("fc", (10, channels * pooled * pooled)), weights("fb", (10,))]
    graph = helper.make_graph(
        nodes, "residual_conv_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, in_channels, size, size))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 10))],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])


BENCH_NETS = {
    "residual_16x16_c3_k8": dict(size=16, in_channels=3, channels=8),
    "residual_32x32_c3_k16": dict(size=32, in_channels=3, channels=16),
    "residual_24x24_c8_k16": dict(size=24, in_channels=8, channels=16),
    "residual_32x32_c1_k4": dict(size=32, in_channels=1, channels=4),
    "depthwise_16x16_c3_k8": dict(size=16, in_channels=3, channels=8, group=8),
    "depthwise_32x32_c16_k16": dict(size=32, in_channels=16, channels=16, group=16),
}
"""The conv nets scripts/bench_layout.py measures: name -> residual_conv_net's arguments."""
