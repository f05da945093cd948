"""A float Conv or MatMul that onnxruntime keeps inside a QDQ model stores its weights as int8, not float32.

onnxruntime runs a Conv group float when its bias scale is not x_scale * w_scale (test_onnx_qdq_bias_scale), and
a MatMul whose output is not quantized float: DequantizeLinear of the int8 weights feeds a float kernel. Folded
at compile time, those weights were float32 in flash, four times their int8 size (torchvision SqueezeNet 1.1:
2.7 MB, over lowpower's 2 MiB; issue 28). The bundle keeps the int8 values with their scales and zero points
and dequantizes each weight in the kernel as DequantizeLinear does (tvm_ext.transform.DequantizeWeightsInKernels):
the same floats, so the outputs still equal onnxruntime's. A Conv's weights are dequantized once per output channel
(a row of its taps before its pixels: tvm_ext.schedule.kernel_schedule._broadcast_by), not beside each multiply-add,
where they were dequantized again at every output pixel.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches
from tvm_ext.compile import compile

IN_CHANNELS, OUT_CHANNELS, SIDE, KERNEL = 8, 24, 6, 3
WEIGHTS = OUT_CHANNELS * IN_CHANNELS * KERNEL * KERNEL
FEATURES, UNITS = 64, 48  # the MatMul's weight: [FEATURES, UNITS]
FLOAT32_BYTES = 4


def _constant(values: np.ndarray, name: str) -> onnx.TensorProto:
    return numpy_helper.from_array(values, name)


def _float_conv(path) -> None:
    """x (int8 [1, 8, 6, 6]) -> DequantizeLinear -> Conv 3x3 (per-channel int8 weights with zero points, a bias
    whose scale is twice x_scale * w_scale, so onnxruntime keeps the Conv float) -> QuantizeLinear."""
    rng = np.random.default_rng(3)
    w_scales = (rng.uniform(0.5, 2.0, OUT_CHANNELS) * 2.0 ** -7).astype(np.float32)
    constants = [_constant(np.array(0.05, np.float32), "x_scale"), _constant(np.array(1, np.int8), "x_zero_point"),
                 _constant(rng.integers(-128, 128, (OUT_CHANNELS, IN_CHANNELS, KERNEL, KERNEL)).astype(np.int8), "w"),
                 _constant(w_scales, "w_scale"),
                 _constant(rng.integers(-3, 4, OUT_CHANNELS).astype(np.int8), "w_zero_point"),
                 _constant(rng.integers(-500, 500, OUT_CHANNELS).astype(np.int32), "b"),
                 _constant((np.float32(0.05) * w_scales * 2).astype(np.float32), "b_scale"),
                 _constant(np.zeros(OUT_CHANNELS, np.int32), "b_zero_point"),
                 _constant(np.array(0.2, np.float32), "y_scale"), _constant(np.array(-3, np.int8), "y_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_float"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["w_float"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero_point"], ["b_float"], axis=0),
             helper.make_node("Conv", ["x_float", "w_float", "b_float"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["conv", "y_scale", "y_zero_point"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_float_conv",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [1, IN_CHANNELS, SIDE, SIDE])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, OUT_CHANNELS, SIDE, SIDE])],
                              constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def _float_matmul(path) -> None:
    """x (int8 [1, 2, 64]) -> DequantizeLinear -> MatMul by DequantizeLinear of int8 weights (per column) ->
    float output: no QuantizeLinear after it, so onnxruntime runs the MatMul float."""
    rng = np.random.default_rng(4)
    constants = [_constant(np.array(0.03, np.float32), "x_scale"), _constant(np.array(0, np.int8), "x_zero_point"),
                 _constant(rng.integers(-127, 128, (FEATURES, UNITS)).astype(np.int8), "w"),
                 _constant((rng.uniform(0.5, 2.0, UNITS) * 2.0 ** -8).astype(np.float32), "w_scale"),
                 _constant(np.zeros(UNITS, np.int8), "w_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_float"]),
             helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["w_float"], axis=1),
             helper.make_node("MatMul", ["x_float", "w_float"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_float_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, FEATURES])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, UNITS])], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def float_conv(tmp_path_factory):
    """The float Conv's model file and its lowpower bundle."""
    folder = tmp_path_factory.mktemp("float_conv")
    path = folder / "float_conv.onnx"
    _float_conv(path)
    return path, compile(path, "lowpower", folder / "bundle")


def test_float_conv_keeps_int8_weights_and_equals_onnxruntime(float_conv):
    path, bundle = float_conv
    # The int8 weights, a float32 scale, an int8 zero point and a float32 bias per output channel; the float32
    # weights alone would be 4 * WEIGHTS bytes.
    assert bundle.weight_bytes < WEIGHTS + OUT_CHANNELS * (FLOAT32_BYTES + 1 + FLOAT32_BYTES) + 64
    assert mismatches(bundle, path, 20) == []


def test_float_conv_dequantizes_its_weights_outside_its_multiply_adds(float_conv):
    _path, bundle = float_conv
    kernels_c = next(bundle.out_dir.glob("*_kernels.c")).read_text()
    multiply_adds = [line for line in kernels_c.splitlines() if re.search(r"\w_fma\(", line)]
    assert multiply_adds, kernels_c
    # An int8 weight converted to float (``(float)(((int32_t)w[...]) - ...)``) beside a multiply-add would be
    # converted again at each output pixel.
    assert not [line for line in multiply_adds if "(float)" in line], kernels_c


def test_float_matmul_keeps_int8_weights(tmp_path):
    path = tmp_path / "float_matmul.onnx"
    _float_matmul(path)
    bundle = compile(path, "lowpower", tmp_path / "bundle")
    assert bundle.weight_bytes < FEATURES * UNITS + UNITS * (FLOAT32_BYTES + 1) + 64
    # A float output: MLAS sums 64 products in another grouping than ours (its packed MatMul blocks).
    assert mismatches(bundle, path, 5, float_tolerance=1e-6) == []
