"""Small int8 TFLite models the tests build themselves: DEPTHWISE_CONV_2D with a depth multiplier,
FULLY_CONNECTED on a higher-rank input, and a chain of window stages (patch-based execution), quantized the way
TFLite's converter writes them.

The factories below describe each model as a `tflite_builder.Model` and serialize it with `tflite_builder.build`.
Nothing here imports tvm or tvm_ext.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tflite_builder import Model, ModelBuilder, Operator, Options, Quantization, Tensor, build

SAME, VALID = 0, 1  # tflite.Padding
RELU6 = 3  # tflite.ActivationFunctionType
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


def fully_connected_model(input_shape: tuple[int, ...], units: int, keep_num_dims: bool, seed: int = 0,
                          per_channel: bool = False) -> bytes:
    """One int8 FULLY_CONNECTED on an input of any rank, as TFLite runs it: with keep_num_dims its last
    dimension is the input units and the output keeps the other dimensions; without, the input is read
    as rows of (elements / batch) units and the output is [batch, units] (batch = input_shape[0]). With
    per_channel, one weight scale per unit (_WEIGHT_SCALES in turn: the converter's per-channel form, as a GRU's
    unrolled gate products), else one for the tensor."""
    rng = np.random.default_rng(seed)
    input_units = input_shape[-1] if keep_num_dims else int(np.prod(input_shape[1:]))
    output_shape = (*input_shape[:-1], units) if keep_num_dims else (input_shape[0], units)
    weights = rng.integers(-127, 128, (units, input_units)).astype(np.int8)
    bias = rng.integers(-3000, 3000, units).astype(np.int32)
    weight_scales = tuple(_WEIGHT_SCALES[o % len(_WEIGHT_SCALES)] for o in range(units)) if per_channel \
        else (_WEIGHT_SCALES[0],)
    tensors = [
        Tensor("input", input_shape, "int8", _quantization((_INPUT_SCALE,), _INPUT_ZERO_POINT)),
        Tensor("dense/weights", weights.shape, "int8", _quantization(weight_scales), weights),
        Tensor("dense/bias", (units,), "int32", _quantization(tuple(_INPUT_SCALE * w for w in weight_scales)), bias),
        # Rows of many input units: a wider output scale keeps the results off the int8 limits.
        Tensor("dense/output", output_shape, "int8",
               _quantization((_OUTPUT_SCALE * input_units / 9,), _OUTPUT_ZERO_POINT))]
    dense = Operator("FULLY_CONNECTED", (0, 1, 2), (3,),
                     Options("FullyConnectedOptions", {"KeepNumDims": keep_num_dims}), _OPERATOR_VERSION)
    return build(Model(tensors, [dense], inputs=(0,), outputs=(3,)))


def chain_model(image: tuple[int, int], channels: int = 4, seed: int = 0, global_pool: bool = False,
                dense_units: int = 0, flat_input: bool = False, global_mean: bool = False) -> bytes:
    """A chain of window stages for patch-based execution: int8 input 1 x rows x columns x 3 -> CONV_2D 3x3 s2
    SAME (RELU6, per-channel) -> DEPTHWISE_CONV_2D 3x3 s1 SAME -> AVERAGE_POOL_2D 3x3 s1 SAME -> MAX_POOL_2D 3x3
    s2 SAME -> CONV_2D 3x3 s1 SAME dilation 2 -> CONV_2D 3x3 VALID -> output, `channels` from the first
    convolution to the max pool; zero points non-zero (the first output's -128), so a wrong padding value
    shows. `global_pool`: then an AVERAGE_POOL_2D VALID over the whole last output (1 x 1 x 1 x 6), the output.
    `dense_units`: then a FULLY_CONNECTED (RELU, per-tensor weights) of the whole last output, flattened, to that
    many units (micro_speech's head). `flat_input`: the input is [1, rows * columns * 3], RESHAPEd to the image.
    `global_mean`: then a MEAN over the rows and columns of the last output ([1, 6], its own scale), the output."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    input_q = _quantization((0.05,), -3)
    if flat_input:
        flat = b.add(Tensor("input", (1, image[0] * image[1] * 3), "int8", input_q))
        b.inputs.append(flat)
        shape = b.add(Tensor("input/shape", (4,), "int32", None, np.array((1, *image, 3), np.int32)))
        x = b.op("RESHAPE", (flat, shape), Tensor("image", (1, *image, 3), "int8", input_q),
                 Options("ReshapeOptions", {"NewShape": (1, *image, 3)}), version=1)
    else:
        x = b.add(Tensor("input", (1, *image, 3), "int8", input_q))
        b.inputs.append(x)
    half = tuple(-(-n // 2) for n in image)
    quarter = tuple(-(-n // 2) for n in half)

    def conv(data: int, shape_in: tuple[int, int, int], out_hw: tuple[int, int], cout: int, kernel: int,
             options: dict, depthwise: bool, name: str, out_q: Quantization) -> int:
        cin = shape_in[2]
        scales = tuple(0.004 + 0.002 * (c % 4) for c in range(cout))
        weight_shape = (1, kernel, kernel, cout) if depthwise else (cout, kernel, kernel, cin)
        weights = rng.integers(-127, 128, weight_shape).astype(np.int8)
        w = b.add(Tensor(f"{name}/w", weight_shape, "int8", Quantization(scales, (0,) * cout, 3 if depthwise else 0),
                         weights))
        bias = b.add(Tensor(f"{name}/b", (cout,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * cout),
                            rng.integers(-2000, 2000, cout).astype(np.int32)))
        kind, table = ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions") if depthwise else ("CONV_2D", "Conv2DOptions")
        fields = {**options, **({"DepthMultiplier": 1} if depthwise else {})}
        return b.op(kind, (data, w, bias), Tensor(name, (1, *out_hw, cout), "int8", out_q), Options(table, fields),
                    version=3)

    def pool(kind: str, data: int, out_hw: tuple[int, int], channels: int, size: int, stride: int, name: str,
             quant: Quantization) -> int:
        options = Options("Pool2DOptions", {"Padding": SAME, "StrideW": stride, "StrideH": stride,
                                            "FilterWidth": size, "FilterHeight": size})
        return b.op(kind, (data,), Tensor(name, (1, *out_hw, channels), "int8", quant), options, version=2)

    q1, q2, q3 = _quantization((0.03,), -128), _quantization((0.05,), 7), _quantization((0.08,), -20)
    c1 = conv(x, (*image, 3), half, channels, 3, {"Padding": SAME, "StrideW": 2, "StrideH": 2,
                                           "FusedActivationFunction": RELU6}, False, "conv_s2", q1)
    d2 = conv(c1, (*half, channels), half, channels, 3, {"Padding": SAME, "StrideW": 1, "StrideH": 1}, True, "dw", q2)
    a3 = pool("AVERAGE_POOL_2D", d2, half, channels, 3, 1, "avg", q2)
    m4 = pool("MAX_POOL_2D", a3, quarter, channels, 3, 2, "max", q2)
    c5 = conv(m4, (*quarter, channels), quarter, 5, 3, {"Padding": SAME, "StrideW": 1, "StrideH": 1,
                                                 "DilationWFactor": 2, "DilationHFactor": 2}, False, "conv_dil", q3)
    last_hw = (quarter[0] - 2, quarter[1] - 2)
    q6 = _quantization((0.1,), 3)
    c6 = conv(c5, (*quarter, 5), last_hw, 6, 3, {"Padding": VALID, "StrideW": 1, "StrideH": 1}, False, "conv_valid",
              q6)
    if global_pool:
        options = Options("Pool2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "FilterWidth": last_hw[1],
                                            "FilterHeight": last_hw[0]})
        c6 = b.op("AVERAGE_POOL_2D", (c6,), Tensor("global_avg", (1, 1, 1, 6), "int8", q6), options, version=2)
    if global_mean:
        axes = b.add(Tensor("mean/axes", (2,), "int32", None, np.array((1, 2), np.int32)))
        c6 = b.op("MEAN", (c6, axes), Tensor("mean", (1, 6), "int8", _quantization((0.03,), 11)),
                  Options("ReducerOptions", {"KeepDims": False}), version=2)
    if dense_units:
        depth = last_hw[0] * last_hw[1] * 6
        w = b.add(Tensor("dense/w", (dense_units, depth), "int8", _quantization((0.006,)),
                         rng.integers(-127, 128, (dense_units, depth)).astype(np.int8)))
        bias = b.add(Tensor("dense/b", (dense_units,), "int32", _quantization((0.1 * 0.006,)),
                            rng.integers(-3000, 3000, dense_units).astype(np.int32)))
        options = Options("FullyConnectedOptions", {"FusedActivationFunction": 1, "KeepNumDims": False})  # RELU
        c6 = b.op("FULLY_CONNECTED", (c6, w, bias), Tensor("dense", (1, dense_units), "int8",
                                                            _quantization((0.02 * depth / 9,), -7)), options, version=3)
    b.outputs.append(c6)
    return build(b.model())


def residual_model(image: tuple[int, int], channels: int = 4, seed: int = 0, float32: bool = False) -> bytes:
    """Branches that rejoin (a ResNet's residual blocks) for streamed bands: int8 input 1 x rows x columns x 3 ->
    CONV_2D 3x3 s1 SAME (RELU6) -> CONV_2D 3x3 s1 SAME -> ADD of that and its skip input (RELU) -> CONV_2D 3x3 s2
    SAME -> CONV_2D 3x3 s1 SAME, beside a CONV_2D 1x1 s2 of the block input -> ADD -> AVERAGE_POOL_2D over the
    whole output (1 x 1 x 1 x 2 `channels`), the output; every zero point non-zero. `float32`: the same graph in
    float32 (weights and biases of a normal distribution, no quantization)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    dtype = "float32" if float32 else "int8"

    def quantization(scale: float, zero_point: int) -> Quantization | None:
        return None if float32 else _quantization((scale,), zero_point)

    x = b.add(Tensor("input", (1, *image, 3), dtype, quantization(0.05, -3)))
    b.inputs.append(x)
    half = tuple(-(-n // 2) for n in image)

    def conv(data: int, cin: int, out_hw: tuple[int, int], cout: int, kernel: int, stride: int, name: str,
             out_q: Quantization | None, activation: int = 0) -> int:
        shape = (cout, kernel, kernel, cin)
        if float32:
            w = b.add(Tensor(f"{name}/w", shape, "float32", None,
                             (rng.standard_normal(shape) / np.sqrt(kernel * kernel * cin)).astype(np.float32)))
            bias = b.add(Tensor(f"{name}/b", (cout,), "float32", None,
                                (0.1 * rng.standard_normal(cout)).astype(np.float32)))
        else:
            scales = tuple(0.004 + 0.002 * (c % 4) for c in range(cout))
            w = b.add(Tensor(f"{name}/w", shape, "int8", Quantization(scales, (0,) * cout, 0),
                             rng.integers(-127, 128, shape).astype(np.int8)))
            bias = b.add(Tensor(f"{name}/b", (cout,), "int32",
                                Quantization(tuple(0.05 * s for s in scales), (0,) * cout),
                                rng.integers(-2000, 2000, cout).astype(np.int32)))
        options = Options("Conv2DOptions", {"Padding": SAME, "StrideW": stride, "StrideH": stride,
                                            "FusedActivationFunction": activation})
        return b.op("CONV_2D", (data, w, bias), Tensor(name, (1, *out_hw, cout), dtype, out_q), options, version=3)

    def add(a: int, c: int, hw: tuple[int, int], cout: int, name: str, out_q: Quantization | None) -> int:
        options = Options("AddOptions", {"FusedActivationFunction": 1})  # RELU
        return b.op("ADD", (a, c), Tensor(name, (1, *hw, cout), dtype, out_q), options, version=2)

    q1, q2, q3 = quantization(0.03, -128), quantization(0.06, 4), quantization(0.05, -100)
    c1 = conv(x, 3, image, channels, 3, 1, "conv_a", q1, RELU6)
    c2 = conv(c1, channels, image, channels, 3, 1, "conv_b", q2)
    a3 = add(c1, c2, image, channels, "add_1", q3)
    wide = 2 * channels
    c4 = conv(a3, channels, half, wide, 3, 2, "conv_s2", quantization(0.04, -128), RELU6)
    c5 = conv(c4, wide, half, wide, 3, 1, "conv_c", quantization(0.07, 2))
    c6 = conv(a3, channels, half, wide, 1, 2, "skip_1x1", quantization(0.05, -9))
    a7 = add(c6, c5, half, wide, "add_2", quantization(0.06, -110))
    options = Options("Pool2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "FilterWidth": half[1],
                                        "FilterHeight": half[0]})
    pooled = b.op("AVERAGE_POOL_2D", (a7,), Tensor("global_avg", (1, 1, 1, wide), dtype,
                                                     quantization(0.06, -110)), options, version=2)
    b.outputs.append(pooled)
    return build(b.model())


def skip_concat_model(image: tuple[int, int], channels: int = 4, seed: int = 0) -> bytes:
    """A skip joined by a CONCATENATION (a U-Net's), which no window stage joins: int8 input 1 x rows x columns x 3
    -> CONV_2D 3x3 s1 SAME (RELU6) -> CONV_2D 3x3 s1 SAME -> CONCATENATION of both on the channels -> CONV_2D 3x3
    s2 SAME -> AVERAGE_POOL_2D over the whole output, the output. The first convolution's output is read after the
    second by an operator outside the window stages, so the graph ends in one value after stage 1 alone. Both
    convolutions before the concatenation write its quantization (TFLite Micro's int8 CONCATENATION asks so)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.add(Tensor("input", (1, *image, 3), "int8", _quantization((0.05,), -3)))
    b.inputs.append(x)
    half = tuple(-(-n // 2) for n in image)

    def conv(data: int, cin: int, out_hw: tuple[int, int], cout: int, stride: int, name: str, out_q: Quantization,
             activation: int = 0) -> int:
        shape = (cout, 3, 3, cin)
        scales = tuple(0.004 + 0.002 * (c % 4) for c in range(cout))
        w = b.add(Tensor(f"{name}/w", shape, "int8", Quantization(scales, (0,) * cout, 0),
                         rng.integers(-127, 128, shape).astype(np.int8)))
        bias = b.add(Tensor(f"{name}/b", (cout,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * cout),
                            rng.integers(-2000, 2000, cout).astype(np.int32)))
        options = Options("Conv2DOptions", {"Padding": SAME, "StrideW": stride, "StrideH": stride,
                                            "FusedActivationFunction": activation})
        return b.op("CONV_2D", (data, w, bias), Tensor(name, (1, *out_hw, cout), "int8", out_q), options, version=3)

    joined_q = _quantization((0.06,), -128)
    c1 = conv(x, 3, image, channels, 1, "conv_a", joined_q, RELU6)
    c2 = conv(c1, channels, image, channels, 1, "conv_b", joined_q)
    joined = b.op("CONCATENATION", (c1, c2), Tensor("skip_concat", (1, *image, 2 * channels), "int8", joined_q),
                  Options("ConcatenationOptions", {"Axis": 3, "FusedActivationFunction": 0}), version=1)
    c3 = conv(joined, 2 * channels, half, channels, 2, "conv_s2", _quantization((0.05,), -9))
    options = Options("Pool2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "FilterWidth": half[1],
                                        "FilterHeight": half[0]})
    pooled = b.op("AVERAGE_POOL_2D", (c3,), Tensor("global_avg", (1, 1, 1, channels), "int8",
                                                    _quantization((0.05,), -9)), options, version=2)
    b.outputs.append(pooled)
    return build(b.model())


def tcn_model(steps: int = 23, features: int = 5, channels: int = 8, dilations: tuple[int, ...] = (1, 2, 3),
              seed: int = 0) -> bytes:
    """A causal dilated 1-D convolution network (a TCN) as TFLite's converter writes Keras' Conv1D: int8 input
    1 x `steps` x `features` -> per dilation d: PAD of 2d steps before the first (with the zero point) -> RESHAPE
    to 1 x 1 x (steps + 2d) x C -> CONV_2D 1x3 VALID, dilation 1 x d (RELU, per-channel weights) -> RESHAPE to
    1 x steps x `channels`, from the second on added to the block's input (an ADD of two sequences: a residual),
    then a MEAN over time ([1, channels], keep_dims false), the output; every zero point non-zero (a wrong
    padding value shows)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    q = _quantization((0.05,), -3)
    x = b.add(Tensor("input", (1, steps, features), "int8", q))
    b.inputs.append(x)

    def shape_of(name: str, shape: tuple[int, ...]) -> int:
        return b.add(Tensor(f"{name}/shape", (len(shape),), "int32", None, np.array(shape, np.int32)))

    def conv1d(data: int, cin: int, dilation: int, name: str, data_q: Quantization) -> tuple[int, Quantization]:
        paddings = b.add(Tensor(f"{name}/paddings", (3, 2), "int32", None,
                                np.array([[0, 0], [2 * dilation, 0], [0, 0]], np.int32)))
        padded = b.op("PAD", (data, paddings), Tensor(f"{name}/pad", (1, steps + 2 * dilation, cin), "int8", data_q))
        image_shape = (1, 1, steps + 2 * dilation, cin)
        image = b.op("RESHAPE", (padded, shape_of(f"{name}/image", image_shape)),
                     Tensor(f"{name}/image", image_shape, "int8", data_q),
                     Options("ReshapeOptions", {"NewShape": image_shape}))
        scales = tuple(0.004 + 0.002 * (c % 4) for c in range(channels))
        w = b.add(Tensor(f"{name}/w", (channels, 1, 3, cin), "int8", Quantization(scales, (0,) * channels, 0),
                         rng.integers(-127, 128, (channels, 1, 3, cin)).astype(np.int8)))
        bias = b.add(Tensor(f"{name}/b", (channels,), "int32",
                            Quantization(tuple(data_q.scales[0] * s for s in scales), (0,) * channels),
                            rng.integers(-2000, 2000, channels).astype(np.int32)))
        out_q = _quantization((0.04 + 0.01 * dilation,), -128)
        options = Options("Conv2DOptions", {"Padding": VALID, "StrideW": 1, "StrideH": 1, "DilationWFactor": dilation,
                                            "DilationHFactor": 1, "FusedActivationFunction": 1})  # RELU
        conv = b.op("CONV_2D", (image, w, bias), Tensor(name, (1, 1, steps, channels), "int8", out_q), options,
                    version=3)
        sequence_shape = (1, steps, channels)
        return b.op("RESHAPE", (conv, shape_of(f"{name}/sequence", sequence_shape)),
                    Tensor(f"{name}/sequence", sequence_shape, "int8", out_q),
                    Options("ReshapeOptions", {"NewShape": sequence_shape})), out_q

    x, q = conv1d(x, features, dilations[0], "conv0", q)
    for i, dilation in enumerate(dilations[1:], start=1):
        y, y_q = conv1d(x, channels, dilation, f"conv{i}", q)
        sum_q = _quantization((0.07,), -100 + i)
        x = b.op("ADD", (x, y), Tensor(f"add{i}", (1, steps, channels), "int8", sum_q),
                 Options("AddOptions", {"FusedActivationFunction": 1}), version=2)
        q = sum_q
    axes = b.add(Tensor("mean/axes", (1,), "int32", None, np.array((1,), np.int32)))
    mean = b.op("MEAN", (x, axes), Tensor("mean", (1, channels), "int8", _quantization((0.03,), 11)),
                Options("ReducerOptions", {"KeepDims": False}), version=2)
    b.outputs.append(mean)
    return build(b.model())
