"""Models quantized by onnxruntime's own tools (``quantize_static``, QDQ and QOperator formats) take the integer
path (QLinearConv / QLinearMatMul kernels, no float activation between the model's input and output) and
equal onnxruntime bit for bit. Before, QOperator models were refused (no QLinearConv converter) and QDQ
models failed in the int8 pass (an ONNX Conv between DequantizeLinear and QuantizeLinear has no lowering)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration
from tvm_ext.compile import compile


def _float_cnn(path):
    """Conv(pads) -> Relu -> Conv(stride 2) -> Reshape -> MatMul, float32, [1, 3, 8, 8] -> [1, 5]."""
    rng = np.random.default_rng(0)

    def weights(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", strides=[2, 2]),
             helper.make_node("Reshape", ["c2", "shape"], ["flat"], name="flatten"),
             helper.make_node("MatMul", ["flat", "w3"], ["y"], name="fc")]
    constants = [weights("w1", 4, 3, 3, 3), weights("b1", 4), weights("w2", 6, 4, 3, 3), weights("b2", 6),
                 numpy_helper.from_array(np.array([1, -1], np.int64), "shape"), weights("w3", 54, 5)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(onnx.shape_inference.infer_shapes(model), str(path))


@pytest.mark.parametrize(("quant_format", "per_channel", "activation_type", "target"), [
    ("QDQ", True, "QInt8", "lowpower"), ("QDQ", False, "QUInt8", "lowpower"), ("QOperator", True, "QInt8", "lowpower"),
    ("QOperator", False, "QUInt8", "lowpower"),
    # On QEMU: hard float (an FPU with fused multiply-add the compiler could contract into) and soft-float.
    ("QDQ", True, "QInt8", "cortex-m4f"), ("QOperator", False, "QUInt8", "cortex-m0plus"),
])
def test_onnxruntime_quantized_cnn_takes_the_integer_path(tmp_path, quant_format, per_channel, activation_type, target):
    _float_cnn(tmp_path / "float.onnx")
    path = tmp_path / f"cnn_{quant_format}.onnx"
    quantization.quantize_static(
        str(tmp_path / "float.onnx"), str(path), NormalCalibration("x", (1, 3, 8, 8)),
        quant_format=getattr(quantization.QuantFormat, quant_format),
        per_channel=per_channel, activation_type=getattr(quantization.QuantType, activation_type),
        weight_type=getattr(quantization.QuantType, activation_type),
    )
    bundle = compile(path, target, tmp_path / "out")
    selftest = json.loads((bundle.out_dir / "manifest.json").read_text())["selftest"]
    assert selftest["passed"] and selftest["reference"].startswith("onnxruntime"), selftest
    assert all(output["bit_identical"] for output in selftest["outputs"]), selftest
    layers = [label for call in bundle.plan.calls for label in call.layers]
    assert sum("(QLinearConv)" in label for label in layers) == 2, layers
    assert sum("(QLinearMatMul)" in label for label in layers) == 1, layers
    between = [t for t in bundle.plan.tensors.values() if t.role.value in ("intermediate", "scratch")]
    assert between and all(np.dtype(t.dtype).kind in "iu" for t in between), between
