"""int8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED attributes in full (issue 15), bit-exact with TFLite Micro.

One model per operator (tests/tflite_builder.py) holds several independent instances, each with its own
graph input and output: every fused activation (NONE, RELU, RELU6, RELU_N1_TO_1), SAME and VALID padding,
stride 2 on odd sizes and unequal strides, dilation > 1 with SAME and VALID (also with a stride), one input
channel, one output channel, one pixel, batch 2, SAME padding with input zero points -128 and 127,
per-channel and per-tensor weights, grouped CONV_2D, a CONV_2D without a bias (a DEPTHWISE_CONV_2D without one is
refused: TFLite Micro crashes on it); depth multipliers 1, 2 and 4;
FULLY_CONNECTED with keep_num_dims both ways on 3-D and 4-D inputs, without a bias, per-channel weights.
Compiled through tvm_ext.compile (lowpower): the bundle's self-test must report every output bit-identical
and its C must equal TFLite Micro exactly on random inputs (tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py's check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType as Act  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

NO_TENSOR = -1  # TFLite's index of an omitted optional input (a missing bias)
INPUT = Quantization((0.05,), (-3,))
_RNG = np.random.default_rng(1515)


@dataclass(frozen=True)
class ConvCase:
    """One convolution: input NHWC, kernel (KH, KW), output channels of a CONV_2D (the depth multiplier of a
    DEPTHWISE_CONV_2D), strides, dilation, padding, fused activation, weights per channel or per tensor, bias,
    output quantization (scale, zero point), input quantization, groups of a CONV_2D."""

    input_shape: tuple[int, int, int, int]
    kernel_hw: tuple[int, int]
    channels: int
    strides: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: int = Padding.SAME
    activation: int = Act.NONE
    per_channel: bool = True
    bias: bool = True
    output: Quantization = Quantization((0.15,), (5,))
    input: Quantization = INPUT
    groups: int = 1  # CONV_2D only: the filter's input depth is the input's channels / groups


CONV_CASES = (
    ConvCase((1, 7, 6, 3), (3, 3), 5, strides=(2, 2)),  # odd sizes, stride 2, SAME
    ConvCase((1, 7, 7, 1), (3, 3), 4, dilation=(2, 2), activation=Act.RELU),  # one input channel, dilated SAME
    ConvCase((1, 9, 7, 2), (2, 3), 3, strides=(2, 3), dilation=(2, 1), padding=Padding.VALID,
             activation=Act.RELU6, output=Quantization((0.05,), (-128,))),  # dilated VALID with unequal strides
    ConvCase((2, 4, 5, 3), (1, 1), 2, padding=Padding.VALID, activation=Act.RELU_N1_TO_1, per_channel=False,
             output=Quantization((0.01,), (0,))),  # batch 2, per-tensor weights, 1x1
    ConvCase((1, 6, 5, 4), (3, 3), 1, strides=(2, 2), bias=False),  # one output channel, no bias, even/odd
    ConvCase((1, 1, 1, 5), (1, 1), 3, activation=Act.RELU),  # one pixel
    ConvCase((1, 5, 8, 2), (3, 3), 3, strides=(2, 2), dilation=(3, 2), activation=Act.RELU6,
             output=Quantization((0.03,), (-100,))),  # dilation and stride on an odd size, SAME
    ConvCase((1, 5, 5, 3), (5, 5), 2, padding=Padding.VALID, activation=Act.RELU_N1_TO_1, per_channel=False,
             output=Quantization((0.008,), (-1,))),  # the kernel covers the whole input
    ConvCase((1, 5, 4, 2), (3, 3), 3, strides=(2, 2), input=Quantization((0.02,), (-128,))),  # SAME pads with -128
)

# Grouped CONV_2D (Keras' Conv2D(groups=G), which the converter keeps a CONV_2D whose filter reads input channels /
# G; TFLite Micro runs it, each output channel o reading group o // (O / G)'s input channels): 2 groups with SAME
# padding and a nonzero input zero point, 3 groups of one input channel each, 4 groups strided and dilated VALID,
# per-tensor weights without a bias.
GROUPED_CASES = (
    ConvCase((1, 7, 6, 4), (3, 3), 6, groups=2, activation=Act.RELU, input=Quantization((0.02,), (-128,))),
    ConvCase((1, 5, 5, 3), (3, 3), 6, strides=(2, 2), groups=3),
    ConvCase((1, 9, 8, 8), (2, 3), 4, strides=(2, 1), dilation=(2, 2), padding=Padding.VALID, groups=4,
             per_channel=False, bias=False, output=Quantization((0.05,), (-20,))),
)

DEPTHWISE_CASES = (
    ConvCase((1, 7, 6, 3), (3, 3), 2, strides=(2, 2)),  # multiplier 2, stride 2, odd sizes
    ConvCase((1, 7, 7, 1), (3, 3), 4, dilation=(2, 2), activation=Act.RELU),  # one channel, multiplier 4, dilated
    ConvCase((1, 8, 7, 2), (2, 3), 1, dilation=(2, 3), padding=Padding.VALID, activation=Act.RELU6,
             output=Quantization((0.05,), (-128,))),  # dilated VALID
    ConvCase((1, 6, 5, 3), (3, 3), 4, strides=(2, 1), padding=Padding.VALID, activation=Act.RELU_N1_TO_1,
             per_channel=False, output=Quantization((0.01,), (0,))),  # multiplier 4, per-tensor, unequal strides
    ConvCase((2, 4, 4, 2), (3, 3), 2),  # batch 2
    ConvCase((1, 5, 8, 2), (3, 3), 2, strides=(2, 2), dilation=(2, 2), activation=Act.RELU6,
             output=Quantization((0.03,), (-100,))),  # dilation and stride, SAME
    ConvCase((1, 1, 1, 4), (1, 1), 1, activation=Act.RELU),  # one pixel
    ConvCase((1, 5, 4, 2), (3, 3), 2, input=Quantization((0.02,), (127,))),  # SAME pads with 127
)


def _output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    effective = (kernel - 1) * dilation + 1
    return -(-size // stride) if padding == Padding.SAME else (size - effective) // stride + 1


def weights_and_bias(tensors: list[Tensor], name: str, shape: tuple[int, ...], channels: int, axis: int,
                     per_channel: bool, bias: bool, input_scale: float = INPUT.scales[0], bias_dtype: str = "int32",
                     bias_magnitude: int = 3000, scale_range: tuple[float, float] = (0.003, 0.02)) -> tuple[int, int]:
    """Append a random int8 weight (scales in ``scale_range``, per channel along ``axis`` or one) and its random
    ``bias_dtype`` bias within +-``bias_magnitude`` (or none; scaled by ``input_scale`` times the weight's) to
    ``tensors``; their indices (NO_TENSOR for no bias)."""
    count = channels if per_channel else 1
    scales = tuple(float(s) for s in _RNG.uniform(*scale_range, count))
    tensors.append(Tensor(f"{name}_w", shape, "int8", Quantization(scales, (0,) * count, axis),
                          _RNG.integers(-127, 128, shape).astype(np.int8)))
    if not bias:
        return len(tensors) - 1, NO_TENSOR
    bias_scales = tuple(input_scale * s for s in scales)
    tensors.append(Tensor(f"{name}_b", (channels,), bias_dtype, Quantization(bias_scales, (0,) * count, axis),
                          _RNG.integers(-bias_magnitude, bias_magnitude + 1, channels).astype(bias_dtype)))
    return len(tensors) - 2, len(tensors) - 1


def convolution_model(builtin: str, cases: tuple[ConvCase, ...]) -> Model:
    """One ``builtin`` (CONV_2D or DEPTHWISE_CONV_2D) per case, each with its own graph input and output."""
    depthwise = builtin == "DEPTHWISE_CONV_2D"
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(cases):
        (batch, h, w, c), (kh, kw) = case.input_shape, case.kernel_hw
        out_c = c * case.channels if depthwise else case.channels
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", case.input_shape, "int8", case.input))
        shape = (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, c // case.groups)
        weight, bias = weights_and_bias(tensors, f"case{index}", shape, out_c, 3 if depthwise else 0,
                                         case.per_channel, case.bias, case.input.scales[0])
        out_hw = tuple(_output_size(size, k, s, d, case.padding)
                       for size, k, s, d in zip((h, w), case.kernel_hw, case.strides, case.dilation))
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", (batch, *out_hw, out_c), "int8", case.output))
        fields = {"Padding": case.padding, "StrideH": case.strides[0], "StrideW": case.strides[1],
                  "DilationHFactor": case.dilation[0], "DilationWFactor": case.dilation[1],
                  "FusedActivationFunction": case.activation}
        if depthwise:
            fields["DepthMultiplier"] = case.channels
        options = Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)
        operators.append(Operator(builtin, (inputs[-1], weight, bias), (outputs[-1],), options, version=3))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


@dataclass(frozen=True)
class DenseCase:
    """One FULLY_CONNECTED: input shape, units, keep_num_dims, fused activation, bias, output quantization."""

    input_shape: tuple[int, ...]
    units: int
    keep_num_dims: bool = False
    activation: int = Act.NONE
    bias: bool = True
    output: Quantization = Quantization((0.2,), (5,))
    per_channel: bool = False

    def input_units(self) -> int:
        """TFLite reads the input as rows of the weight's input units: the last dimension with keep_num_dims,
        else every element but the first dimension's (the builder keeps that first dimension as the rows)."""
        return self.input_shape[-1] if self.keep_num_dims else int(np.prod(self.input_shape[1:]))

    def output_shape(self) -> tuple[int, ...]:
        if self.keep_num_dims:
            return (*self.input_shape[:-1], self.units)
        return (self.input_shape[0], self.units)


DENSE_CASES = (
    DenseCase((2, 7), 5),  # odd sizes, two rows
    DenseCase((2, 3, 6), 4, keep_num_dims=True, activation=Act.RELU),  # 3-D input kept 3-D
    DenseCase((2, 3, 6), 4, activation=Act.RELU6, output=Quantization((0.1,), (-128,))),  # 3-D input flattened
    DenseCase((1, 9), 3, activation=Act.RELU_N1_TO_1, bias=False, output=Quantization((0.01,), (0,))),  # no bias
    DenseCase((3, 1), 1, bias=False),  # one input unit, one unit, no bias
    DenseCase((1, 2, 2, 5), 3, keep_num_dims=True, activation=Act.RELU),  # 4-D input kept 4-D
    DenseCase((2, 6), 4, per_channel=True),  # per-channel weights
)


def dense_model(cases: tuple[DenseCase, ...] = DENSE_CASES) -> Model:
    """One FULLY_CONNECTED per case, each with its own graph input and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(cases):
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", case.input_shape, "int8", INPUT))
        weight, bias = weights_and_bias(tensors, f"case{index}", (case.units, case.input_units()), case.units, 0,
                                         per_channel=case.per_channel, bias=case.bias)
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", case.output_shape(), "int8", case.output))
        options = Options("FullyConnectedOptions", {"FusedActivationFunction": case.activation,
                                                    "KeepNumDims": case.keep_num_dims})
        operators.append(Operator("FULLY_CONNECTED", (inputs[-1], weight, bias), (outputs[-1],), options, version=3))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_conv_2d_attributes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(convolution_model("CONV_2D", CONV_CASES), tmp_path)


def test_grouped_conv_2d_is_bit_exact_with_tflite_micro(tmp_path):
    """A grouped CONV_2D was refused (exit 2: no exact integer lowering of its bias ADD) though TFLite Micro runs it
    (unseen set of session 26, ops_mix_34x26: Keras' Conv2D(12, 3, groups=2))."""
    assert_bit_exact_with_tflite_micro(convolution_model("CONV_2D", GROUPED_CASES), tmp_path)


def test_depthwise_conv_2d_attributes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(convolution_model("DEPTHWISE_CONV_2D", DEPTHWISE_CASES), tmp_path)


def test_fully_connected_attributes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(dense_model(), tmp_path)


def test_a_depthwise_conv_2d_without_a_bias_is_refused_in_one_line(tmp_path):
    model = convolution_model("DEPTHWISE_CONV_2D", (ConvCase((1, 4, 4, 2), (3, 3), 2, bias=False),))
    assert_refused_in_one_line(model, "DEPTHWISE_CONV_2D without a bias", tmp_path)
