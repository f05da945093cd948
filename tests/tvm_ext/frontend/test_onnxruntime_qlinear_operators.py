"""onnxruntime's own quantized operators (com.microsoft: QLinearAveragePool, QLinearGlobalAveragePool, QGemm,
QLinearConcat, QLinearMul, QLinearAdd), which its quantize_static writes in QOperator format, compile and equal
onnxruntime bit for bit on many inputs, in their geometry and broadcast forms (refused before: TVM 0.27 converts
none of them)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches
from tvm_ext.compile import compile

MS = "com.microsoft"


def _quant(name: str, scale, zero_point, dtype) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.asarray(scale, np.float32), f"{name}_scale"),
            numpy_helper.from_array(np.asarray(zero_point, dtype), f"{name}_zero_point")]


def _save(path, nodes, inputs, outputs, constants) -> None:
    graph = helper.make_graph(nodes, "qlinear", inputs, outputs, constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)]),
              str(path))


def test_pools_equal_onnxruntime(tmp_path):
    # Windows clipped at the edges, counted with and without padding, ceil mode, a window over the whole input
    # (onnxruntime then runs its global pool), and the global pool.
    pool = ["x", "x_scale", "x_zero_point", "y_scale", "y_zero_point"]
    nodes = [helper.make_node("QLinearAveragePool", pool, ["clipped"], domain=MS, kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1),
             helper.make_node("QLinearAveragePool", pool, ["padded"], domain=MS, kernel_shape=[2, 3], strides=[2, 1],
                              pads=[0, 1, 1, 0], count_include_pad=1),
             helper.make_node("QLinearAveragePool", pool, ["whole"], domain=MS, kernel_shape=[7, 7]),
             helper.make_node("QLinearGlobalAveragePool", pool, ["global"], domain=MS)]
    outputs = [helper.make_tensor_value_info(name, TensorProto.UINT8, shape) for name, shape in
               (("clipped", [1, 4, 4, 4]), ("padded", [1, 4, 4, 6]), ("whole", [1, 4, 1, 1]), ("global", [1, 4, 1, 1]))]
    path = tmp_path / "pools.onnx"
    _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 7, 7])], outputs,
          [*_quant("x", 0.0371, 131, np.uint8), *_quant("y", 0.0123, 117, np.uint8)])
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 100) == []


def test_gemm_concat_and_broadcast_elementwise_equal_onnxruntime(tmp_path):
    rng = np.random.default_rng(5)
    b = rng.integers(-127, 128, (5, 6)).astype(np.int8)  # [N, K]: transB
    bias = rng.integers(-3000, 3000, 5).astype(np.int32)
    constants = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(bias, "bias"),
                 *_quant("a", 0.0217, 3, np.int8), *_quant("b", np.linspace(0.004, 0.011, 5), np.zeros(5), np.int8),
                 *_quant("y", 0.0911, -4, np.int8), *_quant("c", 0.0353, 9, np.int8),
                 numpy_helper.from_array(np.array([-77], np.int8), "k"), *_quant("k", 0.0411, -2, np.int8),
                 *_quant("m", 0.0523, 5, np.int8)]
    nodes = [helper.make_node("QGemm", ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "bias",
                                       "y_scale", "y_zero_point"], ["gemm"], domain=MS, transB=1),
             helper.make_node("QLinearConcat", ["y_scale", "y_zero_point", "a", "a_scale", "a_zero_point", "c",
                                                "c_scale", "c_zero_point"], ["concat"], domain=MS, axis=1),
             helper.make_node("QLinearMul", ["k", "k_scale", "k_zero_point", "a", "a_scale", "a_zero_point",
                                             "m_scale", "m_zero_point"], ["mul"], domain=MS),
             helper.make_node("QLinearAdd", ["a", "a_scale", "a_zero_point", "k", "k_scale", "k_zero_point",
                                             "m_scale", "m_zero_point"], ["add"], domain=MS)]
    inputs = [helper.make_tensor_value_info("a", TensorProto.INT8, [2, 6]),
              helper.make_tensor_value_info("c", TensorProto.INT8, [2, 3])]
    outputs = [helper.make_tensor_value_info(name, TensorProto.INT8, shape) for name, shape in
               (("gemm", [2, 5]), ("concat", [2, 9]), ("mul", [2, 6]), ("add", [2, 6]))]
    path = tmp_path / "gemm_concat_elementwise.onnx"
    _save(path, nodes, inputs, outputs, constants)
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 300) == []
