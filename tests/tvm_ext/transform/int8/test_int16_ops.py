"""16x8 operators (int16 activations of zero point 0, int8 per-channel weights, int64 bias) through the real
pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro on random inputs over the whole int16 range.

Each operator gets one model (tests/tflite_builder.py) holding several independent instances: awkward shapes
(odd sizes, one channel), strides, SAME and VALID padding, dilation, a depth multiplier, every fused activation,
biases beyond int32 (TFLite Micro adds them in int64), rescales above and below one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402
from tflite.Padding import Padding  # noqa: E402

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, ModelBuilder, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

ACTIVATIONS = (ActivationFunctionType.NONE, ActivationFunctionType.RELU, ActivationFunctionType.RELU6,
               ActivationFunctionType.RELU_N1_TO_1)
_RNG = np.random.default_rng(16)


def _symmetric(scale: float) -> Quantization:
    return Quantization((scale,), (0,))


class Builder16x8(ModelBuilder):
    """A 16x8 model built tensor by tensor, with int8 per-channel weights and their int64 biases."""

    def weights_and_bias(self, name: str, shape: tuple[int, ...], channels: int, input_scale: float,
                         axis: int, bias_magnitude: int) -> tuple[int, int]:
        """An int8 weight with one scale per output channel (along ``axis``) and its int64 bias."""
        scales = tuple(float(s) for s in _RNG.uniform(0.001, 0.05, channels))
        weight = self.add(Tensor(f"{name}_w", shape, "int8", Quantization(scales, (0,) * channels, axis),
                                 _RNG.integers(-127, 128, shape).astype(np.int8)))
        bias = self.add(Tensor(f"{name}_b", (channels,), "int64",
                               Quantization(tuple(input_scale * s for s in scales), (0,) * channels),
                               _RNG.integers(-bias_magnitude, bias_magnitude + 1, channels).astype(np.int64)))
        return weight, bias


@dataclass(frozen=True)
class ConvCase:
    """One convolution: input (H, W, C), kernel (KH, KW), output channels (a depth multiplier for a depthwise
    one), strides, dilation, padding, output scale."""

    input_hwc: tuple[int, int, int]
    kernel_hw: tuple[int, int]
    channels: int
    strides: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: int = Padding.SAME
    output_scale: float = 0.002


CONV_CASES = (
    ConvCase((7, 6, 3), (3, 3), 5, strides=(2, 2)),  # odd sizes, stride 2, SAME
    ConvCase((5, 9, 2), (1, 4), 1, padding=Padding.VALID),  # one output channel (conv), a non-square kernel
    ConvCase((8, 8, 4), (3, 2), 3, dilation=(2, 3), output_scale=0.2),  # dilation, a rescale below one
    ConvCase((1, 1, 6), (1, 1), 7, output_scale=0.00001),  # one pixel, a rescale far above one (saturates)
)
INPUT_SCALE = 0.0004


def _output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    effective = (kernel - 1) * dilation + 1
    return -(-size // stride) if padding == Padding.SAME else (size - effective) // stride + 1


def conv_model(builtin: str) -> Model:
    """One ``builtin`` (CONV_2D or DEPTHWISE_CONV_2D) per case, 16x8."""
    depthwise = builtin == "DEPTHWISE_CONV_2D"
    built = Builder16x8()
    for index, case in enumerate(CONV_CASES):
        (h, w, c), (kh, kw) = case.input_hwc, case.kernel_hw
        out_c = c * case.channels if depthwise else case.channels
        shape = (1, kh, kw, out_c) if depthwise else (out_c, kh, kw, c)
        data = built.add(Tensor(f"case{index}_in", (1, h, w, c), "int16", _symmetric(INPUT_SCALE)))
        weight, bias = built.weights_and_bias(f"case{index}", shape, out_c, INPUT_SCALE, 3 if depthwise else 0,
                                              bias_magnitude=(1 << 33) if index == 0 else 100_000)
        out_hw = tuple(_output_size(size, k, s, d, case.padding) for size, k, s, d in
                       zip((h, w), (kh, kw), case.strides, case.dilation))
        out = built.add(Tensor(f"case{index}_out", (1, *out_hw, out_c), "int16", _symmetric(case.output_scale)))
        fields = {"Padding": case.padding, "StrideH": case.strides[0], "StrideW": case.strides[1],
                  "DilationHFactor": case.dilation[0], "DilationWFactor": case.dilation[1],
                  "FusedActivationFunction": ACTIVATIONS[index % len(ACTIVATIONS)]}
        if depthwise:
            fields["DepthMultiplier"] = case.channels
        options = Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)
        built.operators.append(Operator(builtin, (data, weight, bias), (out,), options, version=2))
        built.inputs.append(data)
        built.outputs.append(out)
    return built.model()


FC_CASES = ((1, 7, 5, 0.003), (3, 16, 1, 0.05), (2, 1, 9, 0.00002))  # (rows, input units, units, output scale)


def fully_connected_model() -> Model:
    """One FULLY_CONNECTED per case, 16x8 with a per-tensor weight scale (TFLite Micro's int16 FULLY_CONNECTED)."""
    built = Builder16x8()
    for index, (rows, depth, units, output_scale) in enumerate(FC_CASES):
        data = built.add(Tensor(f"case{index}_in", (rows, depth), "int16", _symmetric(INPUT_SCALE)))
        scale = float(_RNG.uniform(0.001, 0.05))
        weight = built.add(Tensor(f"case{index}_w", (units, depth), "int8", _symmetric(scale),
                                  _RNG.integers(-127, 128, (units, depth)).astype(np.int8)))
        bias = built.add(Tensor(f"case{index}_b", (units,), "int64", _symmetric(INPUT_SCALE * scale),
                                _RNG.integers(-(1 << 36), 1 << 36, units).astype(np.int64)))
        out = built.add(Tensor(f"case{index}_out", (rows, units), "int16", _symmetric(output_scale)))
        options = Options("FullyConnectedOptions", {"FusedActivationFunction": ACTIVATIONS[index % 3]})
        built.operators.append(Operator("FULLY_CONNECTED", (data, weight, bias), (out,), options, version=4))
        built.inputs.append(data)
        built.outputs.append(out)
    return built.model()


# (lhs shape, rhs shape, lhs scale, rhs scale, output scale): odd sizes, broadcasting on each side, a lower rank,
# a scalar, output rescales above and below one.
ADD_CASES = (
    ((3, 7), (3, 7), 0.001, 0.0007, 0.002),
    ((2, 3, 5), (1, 3, 1), 0.0005, 0.003, 0.0001),
    ((1, 1, 4), (2, 3, 1), 0.01, 0.01, 0.03),
    ((2, 1, 3, 5), (5,), 0.00003, 0.0002, 0.00004),
    ((2, 3), (), 0.002, 0.0001, 0.0015),
)


def binary_model(builtin: str = "ADD", options_table: str = "AddOptions") -> Model:
    """One 16x8 ``builtin`` (ADD, SUB, MUL) per case of ADD_CASES, with every fused activation."""
    built = Builder16x8()
    for index, (lhs_shape, rhs_shape, lhs_scale, rhs_scale, out_scale) in enumerate(ADD_CASES):
        lhs = built.add(Tensor(f"case{index}_lhs", lhs_shape, "int16", _symmetric(lhs_scale)))
        rhs = built.add(Tensor(f"case{index}_rhs", rhs_shape, "int16", _symmetric(rhs_scale)))
        out = built.add(Tensor(f"case{index}_out", np.broadcast_shapes(lhs_shape, rhs_shape), "int16",
                               _symmetric(out_scale)))
        options = Options(options_table, {"FusedActivationFunction": ACTIVATIONS[index % len(ACTIVATIONS)]})
        built.operators.append(Operator(builtin, (lhs, rhs), (out,), options, version=3))
        built.inputs += [lhs, rhs]
        built.outputs.append(out)
    return built.model()


INT16_EDGES = np.array([-32768, 32767, 0, -1, 1, -32767, 16384, -16385, 181, -182], np.int16)
"""int16 values at the edges of the range and of zero, and near sqrt(2^15) (products about one output step)."""


def edge_inputs(model: Model) -> list[np.ndarray]:
    """One array per graph input of ``model`` cycling through INT16_EDGES, each input's cycle started one further
    on (pairs of operands meet at every combination of extremes: both -32768, whose product 2^30 is the
    largest, opposite signs, zero)."""
    return [np.resize(np.roll(INT16_EDGES, -position), model.tensors[index].shape)
            for position, index in enumerate(model.inputs)]


@pytest.mark.parametrize("builtin, options_table", [("ADD", "AddOptions"), ("SUB", "SubOptions"),
                                                    ("MUL", "MulOptions")])
def test_16x8_add_sub_and_mul_are_bit_exact_with_tflite_micro(builtin, options_table, tmp_path):
    """Random inputs over the int16 range and its edges (``edge_inputs``); MUL's products of two int16 values
    saturate the output in the cases of a fine output scale."""
    model = binary_model(builtin, options_table)
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=edge_inputs(model))


@pytest.mark.parametrize("builtin", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_16x8_convolution_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(conv_model(builtin), tmp_path)


def test_16x8_fully_connected_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(fully_connected_model(), tmp_path)


def test_a_16x8_conv_then_fully_connected_model_is_bit_exact_with_tflite_micro(tmp_path):
    """Two 16x8 layers end to end: the convolution's int16 output (rank 4) is the FULLY_CONNECTED's input."""
    built = Builder16x8()
    data = built.add(Tensor("image", (1, 6, 5, 2), "int16", _symmetric(INPUT_SCALE)))
    weight, bias = built.weights_and_bias("conv", (4, 3, 3, 2), 4, INPUT_SCALE, 0, bias_magnitude=50_000)
    features = built.add(Tensor("features", (1, 3, 3, 4), "int16", _symmetric(0.001)))
    conv = Options("Conv2DOptions", {"Padding": Padding.SAME, "StrideH": 2, "StrideW": 2,
                                     "FusedActivationFunction": ActivationFunctionType.RELU})
    built.operators.append(Operator("CONV_2D", (data, weight, bias), (features,), conv, version=2))
    fc_scale = 0.01
    fc_weight = built.add(Tensor("fc_w", (3, 36), "int8", _symmetric(fc_scale),
                                 _RNG.integers(-127, 128, (3, 36)).astype(np.int8)))
    fc_bias = built.add(Tensor("fc_b", (3,), "int64", _symmetric(0.001 * fc_scale),
                               _RNG.integers(-10_000, 10_000, 3).astype(np.int64)))
    logits = built.add(Tensor("logits", (1, 3), "int16", _symmetric(0.002)))
    built.operators.append(Operator("FULLY_CONNECTED", (features, fc_weight, fc_bias), (logits,),
                                    Options("FullyConnectedOptions", {}), version=4))
    built.inputs.append(data)
    built.outputs.append(logits)
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path)


POOL_CASES = (  # input (H, W, C), filter (H, W), strides, padding: windows cut by the border, one channel
    ((6, 5, 3), (3, 3), (2, 2), Padding.SAME),
    ((8, 8, 4), (8, 8), (8, 8), Padding.VALID),
    ((5, 7, 1), (2, 3), (1, 2), Padding.SAME),
)


def pool_model(builtin: str) -> Model:
    """One 16x8 pool per case (the same quantization in and out, as TFLite requires), with every fused
    activation; the average of a window of ints rounds half away from zero in TFLite Micro."""
    built = Builder16x8()
    for index, (hwc, window, strides, padding) in enumerate(POOL_CASES):
        quant = _symmetric(0.0005)
        data = built.add(Tensor(f"case{index}_in", (1, *hwc), "int16", quant))
        out_h = _output_size(hwc[0], window[0], strides[0], 1, padding)
        out_w = _output_size(hwc[1], window[1], strides[1], 1, padding)
        out = built.add(Tensor(f"case{index}_out", (1, out_h, out_w, hwc[2]), "int16", quant))
        options = Options("Pool2DOptions", {"Padding": padding, "StrideH": strides[0], "StrideW": strides[1],
                                            "FilterHeight": window[0], "FilterWidth": window[1],
                                            "FusedActivationFunction": ACTIVATIONS[index % len(ACTIVATIONS)]})
        built.operators.append(Operator(builtin, (data,), (out,), options, version=3))
        built.inputs.append(data)
        built.outputs.append(out)
    return built.model()


@pytest.mark.parametrize("builtin", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_16x8_pooling_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(pool_model(builtin), tmp_path)


def test_a_16x8_operator_without_a_16x8_lowering_is_refused_in_one_line_naming_it(tmp_path):
    """HARD_SWISH has an int8 lowering, not a 16x8 one (TFLite Micro has none): the model check refuses the int16
    form before TVM loads."""
    quant = _symmetric(0.001)
    hard_swish = Model([Tensor("x", (1, 4), "int16", quant), Tensor("y", (1, 4), "int16", quant)],
                       [Operator("HARD_SWISH", (0,), (1,))], (0,), (1,))
    assert_refused_in_one_line(hard_swish, "16x8 HARD_SWISH", tmp_path)


def _edges_model(float_input: bool) -> Model:
    """A 16x8 FULLY_CONNECTED with a float edge: float input -> QUANTIZE to int16 -> FC (int16 output), or int16
    input -> FC -> DEQUANTIZE to a float output."""
    built = Builder16x8()
    scale = 0.02
    if float_input:
        source = built.add(Tensor("x", (2, 9), "float32"))
        data = built.add(Tensor("x_q", (2, 9), "int16", _symmetric(INPUT_SCALE)))
        built.operators.append(Operator("QUANTIZE", (source,), (data,)))
    else:
        source = data = built.add(Tensor("x", (2, 9), "int16", _symmetric(INPUT_SCALE)))
    weight = built.add(Tensor("w", (4, 9), "int8", _symmetric(scale), _RNG.integers(-127, 128, (4, 9)).astype(np.int8)))
    bias = built.add(Tensor("b", (4,), "int64", _symmetric(INPUT_SCALE * scale),
                            _RNG.integers(-30_000, 30_000, 4).astype(np.int64)))
    result = dense = built.add(Tensor("dense", (2, 4), "int16", _symmetric(0.003)))
    built.operators.append(Operator("FULLY_CONNECTED", (data, weight, bias), (dense,),
                                    Options("FullyConnectedOptions", {}), version=4))
    if not float_input:
        result = built.add(Tensor("y", (2, 4), "float32"))
        built.operators.append(Operator("DEQUANTIZE", (dense,), (result,)))
    built.inputs.append(source)
    built.outputs.append(result)
    return built.model()


def test_a_float_input_quantized_to_int16_is_bit_exact_with_tflite_micro(tmp_path):
    path = tmp_path / "quantize16.tflite"
    path.write_bytes(build(_edges_model(float_input=True)))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "(bit-identical)" in bundle.selftest.output, bundle.selftest.output


def test_an_int16_output_dequantized_to_float_passes_its_self_test(tmp_path):
    """A float output is compared with TFLite Micro's (the reference of a quantized model) within the float
    tolerance."""
    path = tmp_path / "dequantize16.tflite"
    path.write_bytes(build(_edges_model(float_input=False)))
    assert compile(path, "lowpower", tmp_path / "out").selftest.passed
