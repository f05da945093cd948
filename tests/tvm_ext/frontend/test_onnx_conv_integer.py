"""ONNX ConvInteger (no converter in TVM 0.27: refused before) is converted by our importer and matches
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.compile import compile


@pytest.mark.parametrize(("x_type", "attrs"), [
    (TensorProto.UINT8, {"pads": [1, 1, 1, 1], "strides": [2, 1]}),
    (TensorProto.INT8, {"dilations": [2, 2], "group": 2}),
])
def test_conv_integer_matches_onnxruntime(tmp_path, x_type, attrs):
    rng = np.random.default_rng(1)
    x_np = np.uint8 if x_type == TensorProto.UINT8 else np.int8
    weights = numpy_helper.from_array(rng.integers(0, 255, (4, 2 // attrs.get("group", 1), 3, 3)).astype(np.uint8),
                                      "w")
    constants = [weights, numpy_helper.from_array(np.array(3, x_np), "x_zp"),
                 numpy_helper.from_array(np.array(128, np.uint8), "w_zp")]
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], name="conv", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, [1, 2, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    model = onnx.shape_inference.infer_shapes(model)
    path = tmp_path / "conv_integer.onnx"
    onnx.save(model, str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output
