"""16x8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED attributes tests/tvm_ext/transform/int8/test_int16_ops.py leaves out (issue 15),
bit-exact with TFLite Micro: per-tensor convolution weights, a CONV_2D without a bias, depth multiplier 4 on one
channel, FULLY_CONNECTED on a 3-D input with keep_num_dims both ways and without a bias. int16 activations of
zero point 0, int8 weights, int64 biases; checked as tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py does.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType as Act  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from test_int8_attribute_coverage_conv import weights_and_bias  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

INPUT = Quantization((0.0004,), (0,))


def _weights(tensors: list[Tensor], name: str, shape: tuple[int, ...], channels: int, axis: int,
             per_channel: bool, bias: bool) -> tuple[int, int]:
    """A 16x8 operator's int8 weight and int64 bias (or none) appended to ``tensors``: their indices."""
    return weights_and_bias(tensors, name, shape, channels, axis, per_channel, bias, INPUT.scales[0], "int64",
                            100_000, (0.001, 0.05))


def convolution_model() -> Model:
    """A per-tensor CONV_2D (RELU6), a CONV_2D without a bias (RELU_N1_TO_1), a one-channel DEPTHWISE_CONV_2D of
    multiplier 4 (stride 2, SAME, RELU), each with its own graph input and output."""
    tensors: list[Tensor] = []
    operators, inputs, outputs = [], [], []
    # (builtin, input NHWC, output channels, multiplier, strides, per channel, bias, activation, output shape)
    cases = (("CONV_2D", (1, 5, 6, 3), 4, 1, (1, 1), False, True, Act.RELU6, (1, 5, 6, 4)),
             ("CONV_2D", (1, 7, 5, 2), 3, 1, (2, 2), True, False, Act.RELU_N1_TO_1, (1, 4, 3, 3)),
             ("DEPTHWISE_CONV_2D", (1, 7, 7, 1), 4, 4, (2, 2), True, True, Act.RELU, (1, 4, 4, 4)))
    for index, (builtin, shape, out_c, multiplier, strides, per_channel, bias, activation, out_shape) in enumerate(
            cases):
        depthwise = builtin == "DEPTHWISE_CONV_2D"
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", shape, "int16", INPUT))
        weight_shape = (1, 3, 3, out_c) if depthwise else (out_c, 3, 3, shape[3])
        weight, bias_index = _weights(tensors, f"case{index}", weight_shape, out_c, 3 if depthwise else 0,
                                      per_channel, bias)
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", out_shape, "int16", Quantization((0.002,), (0,))))
        fields = {"Padding": Padding.SAME, "StrideH": strides[0], "StrideW": strides[1],
                  "FusedActivationFunction": activation}
        if depthwise:
            fields["DepthMultiplier"] = multiplier
        options = Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)
        operators.append(Operator(builtin, (inputs[-1], weight, bias_index), (outputs[-1],), options, version=3))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def dense_model() -> Model:
    """FULLY_CONNECTED on a (2, 3, 6) input: keep_num_dims (RELU), flattened without a bias, each with its own
    graph input and output (per-tensor weights, TFLite Micro's int16 FULLY_CONNECTED)."""
    tensors: list[Tensor] = []
    operators, inputs, outputs = [], [], []
    for index, (keep, bias, activation, out_shape, input_units) in enumerate(
            ((True, True, Act.RELU, (2, 3, 4), 6), (False, False, Act.NONE, (2, 4), 18))):
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", (2, 3, 6), "int16", INPUT))
        weight, bias_index = _weights(tensors, f"case{index}", (4, input_units), 4, 0, False, bias)
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", out_shape, "int16", Quantization((0.003,), (0,))))
        options = Options("FullyConnectedOptions", {"FusedActivationFunction": activation, "KeepNumDims": keep})
        operators.append(Operator("FULLY_CONNECTED", (inputs[-1], weight, bias_index), (outputs[-1],), options,
                                  version=4))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_16x8_convolution_attributes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(convolution_model(), tmp_path)


def test_16x8_fully_connected_attributes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(dense_model(), tmp_path)
