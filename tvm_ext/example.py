"""The project's built-in example: a small keyword-spotting-style CNN, written with onnx.helper.

Deterministic (fixed seed): the same file every time. Input 1x1x49x10 (MFCC frames x coefficients),
output 1x12 class probabilities. Conv 3x3 -> ReLU -> MaxPool 2x2 -> Conv 3x3 -> ReLU -> global average
pool -> Flatten -> Gemm -> Softmax: the shape of models our users deploy on always-on cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EXAMPLE_NAME = "example_kws_cnn"


def example_model(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        values = rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape).astype(np.float32)
        return numpy_helper.from_array(values, name)

    initializers = [
        weight("conv1_w", (8, 1, 3, 3)), weight("conv1_b", (8,)),
        weight("conv2_w", (16, 8, 3, 3)), weight("conv2_b", (16,)),
        weight("fc_w", (12, 16)), weight("fc_b", (12,)),
    ]
    nodes = [
        helper.make_node("Conv", ["mfcc", "conv1_w", "conv1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w", "conv2_b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="global_pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        EXAMPLE_NAME,
        [helper.make_tensor_value_info("mfcc", TensorProto.FLOAT, [1, 1, 49, 10])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 12])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tvm_ext")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def write_example_model(path: str | Path) -> Path:
    """Write the example model to `path` (its stem becomes the bundle's name) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(example_model(), str(path))
    return path
