"""Small int8 TFLite models the tests build themselves: DEPTHWISE_CONV_2D with a depth multiplier and
FULLY_CONNECTED on a higher-rank input, quantized the way TFLite's converter writes them.

The factories below describe each model as a `tflite_builder.Model` and serialize it with `tflite_builder.build`.
Nothing here imports tvm or tvm_ext.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tflite_builder import Model, Operator, Options, Quantization, Tensor, build

SAME, VALID = 0, 1  # tflite.Padding
_OPERATOR_VERSION = 3  # the OperatorCode version both operators of these models carry
# Every scale a test model has, in a fixed pattern per channel: different per channel, so a kernel that
# mixes up channels requantizes with the wrong scale.
_WEIGHT_SCALES = (0.011, 0.007, 0.013, 0.009, 0.005, 0.012)
_INPUT_SCALE, _INPUT_ZERO_POINT = 0.05, -3
_OUTPUT_SCALE, _OUTPUT_ZERO_POINT = 0.12, 5


def _quantization(scales: tuple[float, ...], zero_point: int = 0, axis: int = 0) -> Quantization:
    """`scales` with the same `zero_point` for each, on dimension `axis` (the converter's form)."""
    return Quantization(scales, (zero_point,) * len(scales), axis)


@dataclass(frozen=True)
class DepthwiseCase:
    """One DEPTHWISE_CONV_2D of a test model (3x3 kernel)."""

    stride: int
    padding: int  # SAME or VALID


def _depthwise_options(case: DepthwiseCase, multiplier: int) -> Options:
    return Options("DepthwiseConv2DOptions", {
        "Padding": case.padding, "StrideW": case.stride, "StrideH": case.stride,
        "DepthMultiplier": multiplier, "DilationWFactor": 1, "DilationHFactor": 1})


def _output_size(size: int, kernel: int, case: DepthwiseCase) -> int:
    if case.padding == SAME:
        return -(-size // case.stride)
    return (size - kernel) // case.stride + 1


def depthwise_model(input_channels: int, multiplier: int, cases: list[DepthwiseCase], per_channel: bool = True,
                    image: int = 9, seed: int = 0) -> bytes:
    """One int8 input [1, image, image, input_channels] and a DEPTHWISE_CONV_2D per case on it (3x3 kernel,
    depth `multiplier`), each its own model output. Weights per channel (or per tensor) on dimension 3, and
    the bias's quantized dimension 3 as TFLite's converter writes it on a 1-D tensor."""
    rng = np.random.default_rng(seed)
    channels = input_channels * multiplier
    weight_scales = tuple(_WEIGHT_SCALES[c % len(_WEIGHT_SCALES)] for c in range(channels)) if per_channel else (
        _WEIGHT_SCALES[0],)
    model = Model([Tensor("input", (1, image, image, input_channels), "int8",
                          _quantization((_INPUT_SCALE,), _INPUT_ZERO_POINT))], [], inputs=(0,), outputs=())
    for index, case in enumerate(cases):
        weights = rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
        bias = rng.integers(-3000, 3000, channels).astype(np.int32)
        bias_scales = tuple(_INPUT_SCALE * s for s in weight_scales)
        out = _output_size(image, 3, case)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"dw{index}/weights", weights.shape, "int8", _quantization(weight_scales, axis=3), weights),
            Tensor(f"dw{index}/bias", (channels,), "int32", _quantization(bias_scales, axis=3), bias),
            Tensor(f"dw{index}/output", (1, out, out, channels), "int8",
                   _quantization((_OUTPUT_SCALE,), _OUTPUT_ZERO_POINT))]
        output = first + 2
        model.operators.append(Operator("DEPTHWISE_CONV_2D", (0, first, first + 1), (output,),
                                        _depthwise_options(case, multiplier), _OPERATOR_VERSION))
        model.outputs += (output,)
    return build(model)


def fully_connected_model(input_shape: tuple[int, ...], units: int, keep_num_dims: bool, seed: int = 0) -> bytes:
    """One int8 FULLY_CONNECTED on an input of any rank, as TFLite runs it: with keep_num_dims its last
    dimension is the input units and the output keeps the other dimensions; without, the input is read
    as rows of (elements / batch) units and the output is [batch, units] (batch = input_shape[0])."""
    rng = np.random.default_rng(seed)
    input_units = input_shape[-1] if keep_num_dims else int(np.prod(input_shape[1:]))
    output_shape = (*input_shape[:-1], units) if keep_num_dims else (input_shape[0], units)
    weights = rng.integers(-127, 128, (units, input_units)).astype(np.int8)
    bias = rng.integers(-3000, 3000, units).astype(np.int32)
    tensors = [
        Tensor("input", input_shape, "int8", _quantization((_INPUT_SCALE,), _INPUT_ZERO_POINT)),
        Tensor("dense/weights", weights.shape, "int8", _quantization((_WEIGHT_SCALES[0],)), weights),
        Tensor("dense/bias", (units,), "int32", _quantization((_INPUT_SCALE * _WEIGHT_SCALES[0],)), bias),
        # Rows of many input units: a wider output scale keeps the results off the int8 limits.
        Tensor("dense/output", output_shape, "int8",
               _quantization((_OUTPUT_SCALE * input_units / 9,), _OUTPUT_ZERO_POINT))]
    dense = Operator("FULLY_CONNECTED", (0, 1, 2), (3,),
                     Options("FullyConnectedOptions", {"KeepNumDims": keep_num_dims}), _OPERATOR_VERSION)
    return build(Model(tensors, [dense], inputs=(0,), outputs=(3,)))
