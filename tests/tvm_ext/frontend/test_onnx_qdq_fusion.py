"""tvm_ext.frontend.onnx_ops.qdq_fusion: which QDQ groups become QLinearConv / QLinearMatMul, and which stay as they are."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.frontend.onnx_ops.qdq_fusion import fuse_qdq


def _quant(name: str, scale: float, zero_point: int) -> list:
    return [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
            numpy_helper.from_array(np.array(zero_point, np.int8), f"{name}_z")]


def _conv_model(extra_outputs=(), bias_zero_point=0, middle=None, middle_params=("q", 0.1, 2)):
    """q_x -> DQ -> Conv(w, b) -> Q -> [DQ -> middle -> Q] -> y_q."""
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_z"], ["x"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], name="dq_w", axis=0),
             helper.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["b"], name="dq_b", axis=0),
             helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "q_s", "q_z"], ["c_q"], name="q_c")]
    constants = [*_quant("x", 0.05, 1), *_quant("q", 0.1, 2),
                 numpy_helper.from_array(np.ones((2, 1, 3, 3), np.int8), "w_q"),
                 numpy_helper.from_array(np.array([0.01, 0.02], np.float32), "w_s"),
                 numpy_helper.from_array(np.zeros(2, np.int8), "w_z"),
                 numpy_helper.from_array(np.array([5, -5], np.int32), "b_q"),
                 numpy_helper.from_array(np.array([0.0005, 0.001], np.float32), "b_s"),  # x_s * w_s
                 numpy_helper.from_array(np.array(bias_zero_point, np.int32), "b_z")]
    out = "c_q"
    if middle is not None:
        name, scale, zero_point = middle_params
        if name != "q":
            constants += _quant(name, scale, zero_point)
        nodes += [helper.make_node("DequantizeLinear", ["c_q", "q_s", "q_z"], ["c2"], name="dq_c"),
                  helper.make_node(middle, ["c2"], ["m"], name="middle"),
                  helper.make_node("QuantizeLinear", ["m", f"{name}_s", f"{name}_z"], ["m_q"], name="q_m")]
        out = "m_q"
    outputs = [helper.make_tensor_value_info(out, TensorProto.INT8, None)]
    outputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in extra_outputs]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x_q", TensorProto.INT8, [1, 1, 4, 4])],
                              outputs, constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_qdq_conv_group_becomes_one_qlinear_conv_with_the_convs_name_and_attributes():
    fused = fuse_qdq(_conv_model())
    assert [n.op_type for n in fused.graph.node] == ["QLinearConv"]
    node = fused.graph.node[0]
    assert list(node.input) == ["x_q", "x_s", "x_z", "w_q", "w_s", "w_z", "q_s", "q_z", "b_q"]
    assert list(node.output) == ["c_q"] and node.name == "conv"
    assert [(a.name, list(a.ints)) for a in node.attribute] == [("pads", [1, 1, 1, 1])]


def test_a_conv_whose_float_result_is_also_read_elsewhere_is_not_fused():
    model = _conv_model(extra_outputs=["c"])
    assert fuse_qdq(model) is model


def test_a_bias_with_a_nonzero_zero_point_is_not_fused():
    model = _conv_model(bias_zero_point=3)
    assert fuse_qdq(model) is model


def test_a_reshape_like_operator_between_equal_parameters_runs_on_the_quantized_tensor():
    fused = fuse_qdq(_conv_model(middle="Flatten"))
    assert [(n.op_type, list(n.input), list(n.output)) for n in fused.graph.node] == [
        ("QLinearConv", ["x_q", "x_s", "x_z", "w_q", "w_s", "w_z", "q_s", "q_z", "b_q"], ["c_q"]),
        ("Flatten", ["c_q"], ["m_q"])]


def test_a_reshape_like_operator_between_different_parameters_keeps_its_qdq_pair():
    fused = fuse_qdq(_conv_model(middle="Flatten", middle_params=("other", 0.2, 2)))
    assert [n.op_type for n in fused.graph.node] == ["QLinearConv", "DequantizeLinear", "Flatten", "QuantizeLinear"]


def _two_input_model(op: str, b_type=np.int8, out_zero_point: int = 2, after: str | None = None):
    """a, b (graph inputs) -> DQ -> op -> [after: Relu] -> Q -> y, all int8 but b's type."""
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["a_f"], name="dq_a"),
             helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["b_f"], name="dq_b"),
             helper.make_node(op, ["a_f", "b_f"], ["c"], name="op")]
    if after is not None:
        nodes.append(helper.make_node(after, ["c"], ["c_after"], name="after"))
    nodes.append(helper.make_node("QuantizeLinear", ["c_after" if after else "c", "q_s", "q_z"], ["y"], name="q"))
    constants = [*_quant("a", 0.05, 1), *_quant("q", 0.1, out_zero_point),
                 numpy_helper.from_array(np.array(0.03, np.float32), "b_s"),
                 numpy_helper.from_array(np.array(3, b_type), "b_z")]
    onnx_b = TensorProto.INT8 if b_type == np.int8 else TensorProto.UINT8
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.INT8, [1, 4]),
                                           helper.make_tensor_value_info("b", onnx_b, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_a_binary_group_of_one_type_becomes_onnxruntimes_qlinear_operator(op):
    fused = fuse_qdq(_two_input_model(op))
    assert [(n.domain, n.op_type, list(n.input), list(n.output)) for n in fused.graph.node] == [
        ("com.microsoft", f"QLinear{op}", ["a", "a_s", "a_z", "b", "b_s", "b_z", "q_s", "q_z"], ["y"])]
    assert any(o.domain == "com.microsoft" for o in fused.opset_import)


def test_a_binary_group_of_mixed_types_stays_float_as_onnxruntime_runs_it():
    model = _two_input_model("Add", b_type=np.uint8)
    assert fuse_qdq(model) is model


def test_a_relu_the_quantization_makes_redundant_is_absorbed_and_another_keeps_the_group_float():
    redundant = fuse_qdq(_two_input_model("Add", out_zero_point=-128, after="Relu"))
    assert [n.op_type for n in redundant.graph.node] == ["QLinearAdd"]
    model = _two_input_model("Add", out_zero_point=2, after="Relu")
    assert fuse_qdq(model) is model


def _one_input_model(op: str, out_params=("x", 0.05, 1), **attrs):
    """x (int8 [1, 2, 4, 4]) -> DQ -> op -> Q -> y."""
    name, scale, zero_point = out_params
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["x_f"], name="dq"),
             helper.make_node(op, ["x_f"], ["p"], name="op", **attrs),
             helper.make_node("QuantizeLinear", ["p", f"{name}_s", f"{name}_z"], ["y"], name="q")]
    constants = _quant("x", 0.05, 1) + (_quant(name, scale, zero_point) if name != "x" else [])
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_pools_become_onnxruntimes_operators_and_max_pool_runs_on_the_quantized_tensor():
    average = fuse_qdq(_one_input_model("AveragePool", ("y", 0.04, 0), kernel_shape=[2, 2]))
    assert [(n.domain, n.op_type, list(n.input)) for n in average.graph.node] == [
        ("com.microsoft", "QLinearAveragePool", ["x", "x_s", "x_z", "y_s", "y_z"])]
    assert [a.name for a in average.graph.node[0].attribute] == ["kernel_shape"]
    assert [n.op_type for n in fuse_qdq(_one_input_model("GlobalAveragePool", ("y", 0.04, 0))).graph.node] == [
        "QLinearGlobalAveragePool"]
    maximum = fuse_qdq(_one_input_model("MaxPool", kernel_shape=[2, 2]))
    assert [(n.op_type, list(n.input), list(n.output)) for n in maximum.graph.node] == [("MaxPool", ["x"], ["y"])]


def _with_bias_scale(model, bias_scale: np.ndarray):
    for init in model.graph.initializer:
        if init.name == "b_s":
            init.CopyFrom(numpy_helper.from_array(bias_scale.astype(np.float32), "b_s"))
    return model


def test_a_conv_bias_scale_off_x_scale_times_w_scale_in_any_channel_keeps_the_group_float():
    """onnxruntime 1.32's rule: |b_scale - x_scale * w_scale| <= 1e-6 + 1e-2 * |x_scale * w_scale|, per channel,
    in float32 (x_scale * w_scale is 0.0005 and 0.001 here)."""
    expected = np.float32(0.05) * np.array([0.01, 0.02], np.float32)
    inside = expected + np.float32(1e-6) + np.float32(1e-2) * expected
    assert [n.op_type for n in fuse_qdq(_with_bias_scale(_conv_model(), inside)).graph.node] == ["QLinearConv"]
    one_off = np.array([inside[0], np.nextafter(inside[1], np.float32(1))], np.float32)
    model = _with_bias_scale(_conv_model(), one_off)
    assert fuse_qdq(model) is model
    one_scale = _with_bias_scale(_conv_model(), expected[:1].reshape(()))  # the first channel's, for both
    assert fuse_qdq(one_scale) is one_scale


def test_a_gemm_fuses_whatever_its_bias_scale_as_onnxruntime_1_32_does():
    """onnxruntime's GemmSelector checks no bias scale: QGemm takes the int32 bias in units of a_scale * b_scale."""
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_z"], ["x"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"]),
             helper.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["b"]),
             helper.make_node("Gemm", ["x", "w", "b"], ["c"], name="gemm"),
             helper.make_node("QuantizeLinear", ["c", "q_s", "q_z"], ["c_q"])]
    constants = [*_quant("x", 0.05, 1), *_quant("w", 0.01, 0), *_quant("q", 0.1, 2),
                 numpy_helper.from_array(np.ones((4, 2), np.int8), "w_q"),
                 numpy_helper.from_array(np.array([5, -5], np.int32), "b_q"),
                 numpy_helper.from_array(np.array(0.5, np.float32), "b_s"),  # 1000 times 0.05 * 0.01
                 numpy_helper.from_array(np.array(0, np.int32), "b_z")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x_q", TensorProto.INT8, [3, 4])],
                              [helper.make_tensor_value_info("c_q", TensorProto.INT8, None)], constants)
    fused = fuse_qdq(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert [n.op_type for n in fused.graph.node] == ["QGemm"]
