"""tvm_ext.frontend.onnx_ops.qdq_fusion: which QDQ groups become QLinearConv / QLinearMatMul, and which stay as they are."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.frontend.onnx_ops.qdq_fusion import fuse_qdq


def _quant(name: str, scale: float, zero_point: int) -> list:
    return [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
            numpy_helper.from_array(np.array(zero_point, np.int8), f"{name}_z")]


def _conv_model(extra_outputs=(), bias_zero_point=0, middle=None, middle_params=("q", 0.1, 2)):
    """q_x -> DQ -> Conv(w, b) -> Q -> [DQ -> middle -> Q] -> y_q."""
    nodes = [helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_z"], ["x"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], name="dq_w", axis=0),
             helper.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["b"], name="dq_b"),
             helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "q_s", "q_z"], ["c_q"], name="q_c")]
    constants = [*_quant("x", 0.05, 1), *_quant("q", 0.1, 2),
                 numpy_helper.from_array(np.ones((2, 1, 3, 3), np.int8), "w_q"),
                 numpy_helper.from_array(np.array([0.01, 0.02], np.float32), "w_s"),
                 numpy_helper.from_array(np.zeros(2, np.int8), "w_z"),
                 numpy_helper.from_array(np.array([5, -5], np.int32), "b_q"),
                 numpy_helper.from_array(np.array(0.0005, np.float32), "b_s"),
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
