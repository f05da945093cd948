"""Where an input's or output's quantization comes from, without compiling: a TFLite tensor's own (per tensor
or per channel), and for ONNX the node that reads an integer graph input (DequantizeLinear, a QLinear
operator's operand) or writes an integer graph output (QuantizeLinear, a QLinear operator's result)."""

from __future__ import annotations

import numpy as np
import tflite
from onnx import TensorProto, helper, numpy_helper

from memory_planner.plan import QuantParams, QuantRounding
from tflite_builder import Model, Operator, Quantization, Tensor, build
from tvm_ext.frontend.onnx_ops.io_quantization import onnx_io_quant
from tvm_ext.frontend.tflite_ops.io_quantization import tflite_tensor_quant

EVEN, AWAY = QuantRounding.HALF_TO_EVEN, QuantRounding.HALF_AWAY_FROM_ZERO


def test_tflite_tensors_per_tensor_per_channel_and_float():
    tensors = [Tensor("x", (1, 2, 2, 3), "int8", Quantization((0.5, 0.25, 0.125), (0, 0, 0), axis=3)),
               Tensor("y", (1, 2, 2, 3), "int16", Quantization((0.001,), (0,))),
               Tensor("f", (1, 2, 2, 3), "float32")]
    model = build(Model(tensors, [Operator("QUANTIZE", inputs=(0,), outputs=(1,))], inputs=(0,), outputs=(1,)))
    graph = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0)
    assert tflite_tensor_quant(graph.Tensors(0), "int8") == QuantParams((0.5, 0.25, 0.125), (0, 0, 0), 3, AWAY)
    assert tflite_tensor_quant(graph.Tensors(1), "int16") == QuantParams((float(np.float32(0.001)),), (0,), None, AWAY)
    assert tflite_tensor_quant(graph.Tensors(2), "float32") is None


def _constant(name: str, value, dtype) -> "TensorProto":
    return numpy_helper.from_array(np.array(value, dtype), name)


def test_onnx_graph_io_quantized_by_their_readers_and_writers():
    nodes = [
        # a uint8 image read by a QLinearConv, whose result is a graph output
        helper.make_node("QLinearConv", ["image", "s1", "z1", "w", "ws", "wz", "s2", "z2"], ["conv"]),
        # an int8 input two DequantizeLinear nodes read alike, and one read by two that disagree
        helper.make_node("DequantizeLinear", ["a", "s3", "z3"], ["a1"]),
        helper.make_node("DequantizeLinear", ["a", "s3", "z3"], ["a2"]),
        helper.make_node("DequantizeLinear", ["b", "s3", "z3"], ["b1"]),
        helper.make_node("DequantizeLinear", ["b", "s1", "z3"], ["b2"]),
        # a float input quantized by the model (the bundle takes floats), written to an int8 output per axis
        helper.make_node("QuantizeLinear", ["f", "s4", "z4"], ["q"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, [1, 1, 3, 3]),
         helper.make_tensor_value_info("a", TensorProto.INT8, [4]),
         helper.make_tensor_value_info("b", TensorProto.INT8, [4]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("conv", TensorProto.UINT8, [1, 1, 3, 3]),
         helper.make_tensor_value_info("q", TensorProto.INT8, [1, 2]),
         helper.make_tensor_value_info("a1", TensorProto.FLOAT, [4])],
        [_constant("s1", 0.02, np.float32), _constant("z1", 128, np.uint8),
         _constant("w", np.ones((1, 1, 1, 1)), np.uint8), _constant("ws", 0.1, np.float32),
         _constant("wz", 0, np.uint8), _constant("s2", 0.04, np.float32), _constant("z2", 3, np.uint8),
         _constant("s3", 0.5, np.float32), _constant("z3", -2, np.int8),
         _constant("s4", [0.25, 0.125], np.float32), _constant("z4", [1, -1], np.int8)])
    found = onnx_io_quant(graph)
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    assert found.inputs == {"image": QuantParams((f32(0.02),), (128,), None, EVEN),
                            "a": QuantParams((0.5,), (-2,), None, EVEN)}
    assert found.outputs == {"conv": QuantParams((f32(0.04),), (3,), None, EVEN),
                             "q": QuantParams((0.25, 0.125), (1, -1), 1, EVEN)}
