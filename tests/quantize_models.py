"""A small float TFLite classifier for the quantization tests, built with tests/tflite_builder.py: CONV_2D
(RELU6) -> DEPTHWISE_CONV_2D (RELU) -> ADD (of both) -> AVERAGE_POOL_2D -> MAX_POOL_2D -> RESHAPE ->
FULLY_CONNECTED -> SOFTMAX, on a 1x6x6x2 input: every operator the first quantization slice handles."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_builder import Model, Operator, Options, Tensor, build

INPUT_SHAPE = (1, 6, 6, 2)
CLASSES = 5


def write_float_classifier(folder: Path, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, shape).astype(np.float32)

    tensors = [
        Tensor("input", INPUT_SHAPE, "float32"),
        Tensor("conv_w", (4, 3, 3, 2), "float32", data=weights(4, 3, 3, 2)),
        Tensor("conv_b", (4,), "float32", data=weights(4)),
        Tensor("conv", (1, 6, 6, 4), "float32"),
        Tensor("dw_w", (1, 3, 3, 4), "float32", data=weights(1, 3, 3, 4)),
        Tensor("dw_b", (4,), "float32", data=weights(4)),
        Tensor("dw", (1, 6, 6, 4), "float32"),
        Tensor("sum", (1, 6, 6, 4), "float32"),
        Tensor("avg", (1, 3, 3, 4), "float32"),
        Tensor("max", (1, 2, 2, 4), "float32"),
        Tensor("flat", (1, 16), "float32"),
        Tensor("fc_w", (CLASSES, 16), "float32", data=weights(CLASSES, 16)),
        Tensor("fc_b", (CLASSES,), "float32", data=weights(CLASSES)),
        Tensor("logits", (1, CLASSES), "float32"),
        Tensor("probabilities", (1, CLASSES), "float32"),
        Tensor("new_shape", (2,), "int32", data=np.array([1, 16], np.int32)),
    ]
    same = {"Padding": 0, "StrideW": 1, "StrideH": 1}
    operators = [
        Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {**same, "FusedActivationFunction": 3})),
        Operator("DEPTHWISE_CONV_2D", (3, 4, 5), (6,),
                 Options("DepthwiseConv2DOptions", {**same, "DepthMultiplier": 1, "FusedActivationFunction": 1})),
        Operator("ADD", (3, 6), (7,), Options("AddOptions", {})),
        Operator("AVERAGE_POOL_2D", (7,), (8,),
                 Options("Pool2DOptions", {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2,
                                           "FilterHeight": 2})),
        Operator("MAX_POOL_2D", (8,), (9,),
                 Options("Pool2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1, "FilterWidth": 2,
                                           "FilterHeight": 2})),
        Operator("RESHAPE", (9, 15), (10,), Options("ReshapeOptions", {"NewShape": (1, 16)})),
        Operator("FULLY_CONNECTED", (10, 11, 12), (13,), Options("FullyConnectedOptions", {})),
        Operator("SOFTMAX", (13,), (14,), Options("SoftmaxOptions", {"Beta": 1.0})),
    ]
    path = folder / "float_classifier.tflite"
    path.write_bytes(build(Model(tensors, operators, inputs=(0,), outputs=(14,))))
    return path


DEAD_UNIT_INPUT = (1, 8)
DEAD_UNIT_WEIGHT = 40.0  # the weight a dead hidden unit feeds each output of the second layer
DEAD_UNIT_LAYERS = 6


def write_dead_unit_regressor(folder: Path, seed: int = 5) -> Path:
    """DEAD_UNIT_LAYERS FULLY_CONNECTED layers (RELU but the last) on a 1x8 input, 16 units each and 4 out,
    badly quantizable in one place: hidden unit 0 of the first layer is dead (bias -100, its RELU output
    always 0) and the second layer weighs it with DEAD_UNIT_WEIGHT in every output channel. Float never sees
    that weight act, but int8's per-channel scale (max |w| / 127) becomes ~80x coarser than the channel's
    other weights (~N(0, 0.35)) need, so the second layer's int8 output is far off; the others' are not."""
    rng = np.random.default_rng(seed)
    sizes = [DEAD_UNIT_INPUT[1]] + [16] * (DEAD_UNIT_LAYERS - 1) + [4]
    tensors = [Tensor("input", DEAD_UNIT_INPUT, "float32")]
    operators = []
    for index, (inner, outer) in enumerate(zip(sizes, sizes[1:])):
        weight, bias = rng.normal(0.0, 0.35, (outer, inner)), rng.normal(0.0, 0.35, outer)
        if index == 0:
            bias[0] = -100.0
        if index == 1:
            weight[:, 0] = DEAD_UNIT_WEIGHT
        source = len(tensors) - 1
        tensors += [Tensor(f"fc{index}_w", (outer, inner), "float32", data=weight.astype(np.float32)),
                    Tensor(f"fc{index}_b", (outer,), "float32", data=bias.astype(np.float32)),
                    Tensor(f"fc{index}", (1, outer), "float32")]
        relu = 1 if index < DEAD_UNIT_LAYERS - 1 else 0
        operators.append(Operator("FULLY_CONNECTED", (source, source + 1, source + 2), (source + 3,),
                                  Options("FullyConnectedOptions", {"FusedActivationFunction": relu})))
    path = folder / "dead_unit_regressor.tflite"
    path.write_bytes(build(Model(tensors, operators, inputs=(0,), outputs=(len(tensors) - 1,))))
    return path


WIDE_RANGE_INPUT = (1, 8)
WIDE_RANGE_CLASSES = 5
WIDE_RANGE_PEAK = 60.0  # the scale of the hidden unit that sets its tensor's range
WIDE_RANGE_HIDDEN = 20  # units: 40 B of int16, not a multiple of the profiles' 16-byte buffer alignment


def write_wide_range_classifier(folder: Path, seed: int = 7, squashed: bool = False,
                                 hidden: int = WIDE_RANGE_HIDDEN) -> Path:
    """FULLY_CONNECTED (RELU, `hidden` units, 20 by default) -> FULLY_CONNECTED (5 logits) -> SOFTMAX on a 1x8
    input, whose int8 activations cost it its top-1 while int16 ones do not: hidden unit 0 is WIDE_RANGE_PEAK x
    larger than the others (its weights and bias scaled) and the logits do not read it (zero weights), so the
    hidden tensor's int8 step (range / 255, ~0.4 on uniform [-1, 1) inputs) is coarser than the units the logits
    read (~0-2) need, and int16's is 256 x finer. The model's loss is its activations' rounding, not its weights'.
    `squashed`: a DIV of the logits by a scalar between them and the SOFTMAX (an operator with no 16x8 kernel:
    TFLite Micro has no int16 DIV)."""
    rng = np.random.default_rng(seed)
    first_w, first_b = rng.normal(0.0, 0.6, (hidden, WIDE_RANGE_INPUT[1])), rng.normal(0.0, 0.3, hidden)
    first_w[0], first_b[0] = np.abs(first_w[0]) * WIDE_RANGE_PEAK, WIDE_RANGE_PEAK * 3.0
    second_w, second_b = rng.normal(0.0, 1.0, (WIDE_RANGE_CLASSES, hidden)), rng.normal(0.0, 0.1, WIDE_RANGE_CLASSES)
    second_w[:, 0] = 0.0
    tensors = [
        Tensor("input", WIDE_RANGE_INPUT, "float32"),
        Tensor("hidden_w", first_w.shape, "float32", data=first_w.astype(np.float32)),
        Tensor("hidden_b", (hidden,), "float32", data=first_b.astype(np.float32)),
        Tensor("hidden", (1, hidden), "float32"),
        Tensor("logits_w", second_w.shape, "float32", data=second_w.astype(np.float32)),
        Tensor("logits_b", (WIDE_RANGE_CLASSES,), "float32", data=second_b.astype(np.float32)),
        Tensor("logits", (1, WIDE_RANGE_CLASSES), "float32"),
        Tensor("probabilities", (1, WIDE_RANGE_CLASSES), "float32"),
    ]
    operators = [
        Operator("FULLY_CONNECTED", (0, 1, 2), (3,), Options("FullyConnectedOptions", {"FusedActivationFunction": 1})),
        Operator("FULLY_CONNECTED", (3, 4, 5), (6,), Options("FullyConnectedOptions", {})),
    ]
    if squashed:
        tensors += [Tensor("divisor", (), "float32", data=np.array(2.5, np.float32)),
                    Tensor("squashed", (1, WIDE_RANGE_CLASSES), "float32")]
        operators.append(Operator("DIV", (6, 8), (9,), Options("DivOptions", {})))
    operators.append(Operator("SOFTMAX", (len(tensors) - 1 if squashed else 6,), (7,),
                              Options("SoftmaxOptions", {"Beta": 1.0})))
    path = folder / f"wide_range_classifier{'_squashed' if squashed else ''}.tflite"
    path.write_bytes(build(Model(tensors, operators, inputs=(0,), outputs=(7,))))
    return path
