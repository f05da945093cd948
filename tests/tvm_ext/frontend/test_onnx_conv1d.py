"""1-D quantized convolutions and pools (PyTorch's Conv1d / AvgPool1d over N,C,L, exported to ONNX and quantized
by onnxruntime) compile as the 2-D ones over N,C,1,L and equal onnxruntime bit for bit.

Before, each was refused: "QLinearConv with 1 spatial axes is not converted (2-D only)" (the QDQ Conv that the
QDQ fusion makes a QLinearConv, and a QLinearConv node), "ConvInteger with 1 spatial axes ...",
"QLinearAveragePool other than 2-D ...", "QLinearGlobalAveragePool other than 2-D ...".
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration, mismatches
from tvm_ext.compile import compile

CONV_CASES = {
    # x type, w scale (per tensor or per output channel), attributes
    "uint8_pads_dilation": (np.uint8, 0.03, {"pads": [2, 1], "dilations": [3]}),
    "int8_per_channel_group_stride_same_lower": (np.int8, [0.02, 0.05, 0.011, 0.3],
                                                  {"group": 2, "strides": [2], "auto_pad": "SAME_LOWER"}),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_qlinear_conv_1d_matches_onnxruntime(tmp_path, case):
    x_type, w_scale, attrs = CONV_CASES[case]
    onnx_type = TensorProto.UINT8 if x_type == np.uint8 else TensorProto.INT8
    rng = np.random.default_rng(5)
    info = np.iinfo(x_type)
    weights = rng.integers(info.min, info.max + 1, (4, 4 // attrs.get("group", 1), 3)).astype(x_type)
    zero = 128 if x_type == np.uint8 else 0
    constants = [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.float32(0.02), "x_scale"),
                 numpy_helper.from_array(np.asarray(zero + 3, x_type), "x_zero_point"),
                 numpy_helper.from_array(np.asarray(w_scale, np.float32), "w_scale"),
                 numpy_helper.from_array(np.full(np.shape(w_scale), zero, x_type), "w_zero_point"),
                 numpy_helper.from_array(np.float32(0.7), "y_scale"),
                 numpy_helper.from_array(np.asarray(zero - 5, x_type), "y_zero_point"),
                 numpy_helper.from_array(rng.integers(-20000, 20000, 4).astype(np.int32), "b")]
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point",
                                            "y_scale", "y_zero_point", "b"], ["y"], name="conv", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx_type, [1, 4, 13])],
                              [helper.make_tensor_value_info("y", onnx_type, None)], constants)
    path = tmp_path / "qlinear_conv_1d.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 10)])), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output, bundle.selftest.output
    assert any("qlinearconv" in call.kernel for call in bundle.plan.calls), [c.kernel for c in bundle.plan.calls]


def test_conv_integer_1d_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(1)
    constants = [numpy_helper.from_array(rng.integers(0, 255, (3, 2, 4)).astype(np.uint8), "w"),
                 numpy_helper.from_array(np.array(3, np.uint8), "x_zp"),
                 numpy_helper.from_array(np.array(128, np.uint8), "w_zp")]
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], name="conv", pads=[1, 2],
                            strides=[2], dilations=[2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)], constants)
    path = tmp_path / "conv_integer_1d.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 10)])), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output, bundle.selftest.output


def _float_tcn() -> onnx.ModelProto:
    """A small float TCN as PyTorch exports one: dilated causal-padded Conv1d, a grouped Conv1d, AvgPool1d and
    the global average pool."""
    rng = np.random.default_rng(2)
    weights = {"w0": rng.standard_normal((8, 4, 3)), "b0": rng.standard_normal(8),
               "w1": rng.standard_normal((8, 2, 3)) * 0.5, "b1": rng.standard_normal(8)}
    nodes = [helper.make_node("Conv", ["input", "w0", "b0"], ["c0"], pads=[4, 0], dilations=[2]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1], strides=[2], group=4),
             helper.make_node("AveragePool", ["c1"], ["p"], kernel_shape=[2], strides=[2], pads=[0, 1]),
             helper.make_node("GlobalAveragePool", ["p"], ["y"])]
    graph = helper.make_graph(nodes, "tcn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 21])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_tcn_quantized_by_onnxruntime_equals_onnxruntime(tmp_path):
    float_path, path = tmp_path / "tcn_float.onnx", tmp_path / "tcn.onnx"
    onnx.save(_float_tcn(), str(float_path))
    quantization.quantize_static(str(float_path), str(path), NormalCalibration("input", (1, 4, 21)),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True,
                                 activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    bundle = compile(path, "lowpower", tmp_path / "out")
    kernels = " ".join(call.kernel for call in bundle.plan.calls)
    assert "qlinearconv" in kernels and "qlinearaveragepool" in kernels, kernels
    assert mismatches(bundle, path, 20) == []
