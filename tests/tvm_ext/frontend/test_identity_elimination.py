"""tvm_ext.frontend.onnx_ops.identity_elimination: Identity nodes removed before the QDQ fusion, as onnxruntime
removes them, so that a TorchScript export's shared zero bias (read through an Identity per Conv) meets the QDQ
fusion's rules as onnxruntime's selectors see it."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration, mismatches, session
from tvm_ext.compile import compile
from tvm_ext.frontend.onnx_ops.identity_elimination import without_identities
from tvm_ext.frontend.onnx_ops.qdq_fusion import fuse_qdq


def _relu_after_identities(output_through_identity: bool) -> onnx.ModelProto:
    """x -> Identity -> Identity -> Relu -> r [-> Identity -> y]."""
    nodes = [helper.make_node("Identity", ["x"], ["i1"], name="id1"), helper.make_node("Identity", ["i1"], ["i2"]),
             helper.make_node("Relu", ["i2"], ["r"], name="relu")]
    out = "r"
    if output_through_identity:
        nodes.append(helper.make_node("Identity", ["r"], ["y"], name="to_output"))
        out = "y"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [4])],
                              value_info=[helper.make_tensor_value_info("i1", TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_readers_read_through_a_chain_of_identities():
    result = without_identities(_relu_after_identities(False))
    assert [(n.op_type, list(n.input)) for n in result.graph.node] == [("Relu", ["x"])]
    assert [v.name for v in result.graph.value_info] == []
    onnx.checker.check_model(result, full_check=True)


def test_an_identity_of_the_default_domain_by_its_full_name_goes_too():
    """"ai.onnx" is the default domain spelt out (onnxruntime removes its Identity nodes alike)."""
    model = _relu_after_identities(False)
    for node in model.graph.node:
        node.domain = "ai.onnx"
    assert [n.op_type for n in without_identities(model).graph.node] == ["Relu"]


def test_an_identity_writing_a_graph_output_stays():
    result = without_identities(_relu_after_identities(True))
    assert [(n.op_type, list(n.input), list(n.output)) for n in result.graph.node] == [
        ("Relu", ["x"], ["r"]), ("Identity", ["r"], ["y"])]


def test_a_model_without_identities_is_returned_as_it_is():
    model = without_identities(_relu_after_identities(False))
    assert without_identities(model) is model


def _shared_zero_bias_net() -> onnx.ModelProto:
    """Two 3x3 convolutions whose zero biases are one initializer, the second reading it through an Identity, as
    PyTorch's TorchScript exporter writes a torchvision model's equal constants (its first reader reads the
    initializer, the others an Identity of it)."""
    rng = np.random.default_rng(0)
    constants = [numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1"),
                 numpy_helper.from_array(rng.normal(0, 0.2, (8, 8, 3, 3)).astype(np.float32), "w2"),
                 numpy_helper.from_array(np.zeros(8, np.float32), "zero_bias")]
    nodes = [helper.make_node("Identity", ["zero_bias"], ["b2"], name="bias2"),
             helper.make_node("Conv", ["input", "w1", "zero_bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["output"], name="flatten")]
    graph = helper.make_graph(nodes, "shared_zero_bias", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                        [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_qdq_net_with_identity_biases_fuses_as_onnxruntime_and_equals_it(tmp_path):
    """The second Conv reads the first's quantized bias through the Identity: its bias scale is the first Conv's
    x_scale * w_scale, so onnxruntime (1.32) keeps that group float and fuses the first (qdq_fusion's bias rule)."""
    float_path, path = tmp_path / "net_float.onnx", tmp_path / "net.onnx"
    onnx.save(_shared_zero_bias_net(), str(float_path))
    quantization.quantize_static(str(float_path), str(path), NormalCalibration("input", (1, 3, 16, 16)),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True)
    readers = {n.output[0]: n.op_type for n in onnx.load(str(path)).graph.node}
    identity = [n for n in onnx.load(str(path)).graph.node if n.op_type == "Identity"]
    assert [readers[n.input[0]] for n in identity] == ["DequantizeLinear"]  # the quantized bias, through it
    optimized = tmp_path / "net_onnxruntime.onnx"
    session(path.read_bytes(), optimized)
    ours = fuse_qdq(without_identities(onnx.load(str(path))))
    for graph in (onnx.load(str(optimized)).graph, ours.graph):
        assert sorted((n.op_type, n.name.split("_token_")[0]) for n in graph.node if "Conv" in n.op_type) == [
            ("Conv", "conv2"), ("QLinearConv", "conv1")]
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 20) == []
