"""16x8 (int16 activations of zero point 0) operators through the real pipeline (tvm_ext.compile, lowpower),
bit-exact with TFLite Micro on random inputs over the whole int16 range: PAD, PADV2, STRIDED_SLICE, RESHAPE,
LEAKY_RELU, ABS, RELU, RELU6, MEAN, SUM, TRANSPOSE_CONV, MAXIMUM, MINIMUM, QUANTIZE and the copies (TRANSPOSE, CONCATENATION,
SQUEEZE, EXPAND_DIMS, SLICE, PACK, UNPACK, SPLIT, SPLIT_V); LOGISTIC and TANH on every int16 input, RSQRT on every
non-negative one; SQUARED_DIFFERENCE and a whole LayerNormalization; SUB and MUL are test_int16_ops.py's, beside ADD.

Each operator's model is its int8 test's (the same attribute variants: paddings of 1-D to 5-D tensors, negative
strides, begin/end/shrink masks, every axis and keep_dims, SAME/VALID, strides, output padding, fused activations,
broadcasting, constant operands) with int16 tensors and symmetric quantizations; TFLite Micro runs each with its
int16 kernel (LEAKY_RELU, ABS, RELU, MEAN, SUM and TRANSPOSE_CONV with their own int16 arithmetic, the others
comparing or copying the stored values).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
import test_int8_shape_ops as shape_ops  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from test_int8_elementwise_ops import (BINARY_CASES, Unary, assert_bit_exact_with_tflite_micro,  # noqa: E402
                                     binary_model, unary_model)
from test_int8_matmul_ops import TRANSPOSE_CONV_CASES, transpose_conv_model  # noqa: E402
from test_int8_misc_ops import reduction_model  # noqa: E402
from test_int8_shape_ops import PAD_VIEWS, STRIDED_SLICE_VIEWS, pad_model, strided_slice_model  # noqa: E402
from test_int8_unpack import UNPACKS, unpack_model  # noqa: E402
from tflite_builder import Model, ModelBuilder, Options, Quantization, Tensor  # noqa: E402

from target import load_profile  # noqa: E402


def _symmetric(scale: float) -> Quantization:
    return Quantization((scale,), (0,))


# Copies keep one quantization: a fine and a coarse int16 scale.
COPY_QUANTIZATIONS = (_symmetric(0.0002), _symmetric(0.03))
# (input, output) quantizations: the same, rescales above and below one.
RESCALES = ((_symmetric(0.0005), _symmetric(0.0005)), (_symmetric(0.0004), _symmetric(0.0001)),
            (_symmetric(0.00002), _symmetric(0.0003)))


@pytest.mark.parametrize("builtin", ("PAD", "PADV2"))
def test_16x8_pad_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(pad_model(builtin, "int16", COPY_QUANTIZATIONS), tmp_path, PAD_VIEWS)


def test_16x8_strided_slice_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(strided_slice_model("int16", COPY_QUANTIZATIONS), tmp_path,
                                       STRIDED_SLICE_VIEWS)


# (input shape, output shape): rank up and down, a flattening, size-1 axes, a scalar-like one-element tensor.
RESHAPES = (((1, 4, 6, 3), (1, 72)), ((2, 15), (2, 3, 5)), ((1, 100, 32), (1, 1, 100, 32)), ((1, 1, 1, 1), (1,)),
            ((3, 1, 4), (4, 3)))


def reshape_model() -> ModelBuilder:
    """One 16x8 RESHAPE per case of RESHAPES, with its shape tensor, each read by a LEAKY_RELU (a reshape read by
    a kernel becomes a view of its input's bytes: the LEAKY_RELU makes the model's work visible)."""
    built = ModelBuilder()
    for index, (shape, new_shape) in enumerate(RESHAPES):
        quant = COPY_QUANTIZATIONS[index % len(COPY_QUANTIZATIONS)]
        data = built.add(Tensor(f"case{index}_in", shape, "int16", quant))
        target = built.add(Tensor(f"case{index}_shape", (len(new_shape),), "int32",
                                  data=np.array(new_shape, np.int32)))
        reshaped = built.op("RESHAPE", (data, target), Tensor(f"case{index}_reshaped", new_shape, "int16", quant),
                            Options("ReshapeOptions", {"NewShape": new_shape}))
        built.inputs.append(data)
        built.outputs.append(built.op("LEAKY_RELU", (reshaped,), Tensor(f"case{index}_out", new_shape, "int16",
                                                                         _symmetric(0.001)),
                                      Options("LeakyReluOptions", {"Alpha": 0.2})))
    return built


def test_16x8_reshape_is_bit_exact_with_tflite_micro(tmp_path):
    model = reshape_model().model()
    views = frozenset(f"case{index}_reshaped" for index in range(len(RESHAPES)))
    assert_bit_exact_with_tflite_micro(model, tmp_path, views)


@pytest.mark.parametrize("alpha", [0.3, 1.7])
def test_16x8_leaky_relu_is_bit_exact_with_tflite_micro(alpha, tmp_path):
    leaky_relu = Unary(Options("LeakyReluOptions", {"Alpha": alpha}))
    assert_bit_exact_with_tflite_micro(unary_model("LEAKY_RELU", leaky_relu, "int16", RESCALES), tmp_path)


def test_16x8_abs_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(unary_model("ABS", Unary(), "int16", RESCALES), tmp_path)


@pytest.mark.parametrize("builtin, output_scale_factor", [("MEAN", 1.0), ("SUM", 8.0)])
def test_16x8_mean_and_sum_are_bit_exact_with_tflite_micro(builtin, output_scale_factor, tmp_path):
    assert_bit_exact_with_tflite_micro(reduction_model(builtin, output_scale_factor, "int16", RESCALES), tmp_path)


def test_16x8_transpose_conv_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(transpose_conv_model(TRANSPOSE_CONV_CASES, "int16"), tmp_path)


def test_a_transpose_conv_whose_output_shape_is_a_graph_input_is_bit_exact_with_tflite_micro(tmp_path):
    """TFLite Micro's own 16x8 TRANSPOSE_CONV tests feed output_shape as a graph input, which it never reads (the
    output tensor's shape is the output shape); TVM's converter could not import them ("a bytes-like object is
    required")."""
    model = transpose_conv_model(TRANSPOSE_CONV_CASES[:2], "int16")
    shapes = [index for index, tensor in enumerate(model.tensors) if tensor.name.endswith("_output_shape")]
    tensors = [dataclasses.replace(tensor, data=None) if index in shapes else tensor
               for index, tensor in enumerate(model.tensors)]
    assert_bit_exact_with_tflite_micro(Model(tensors, model.operators, (*shapes, *model.inputs), model.outputs),
                                       tmp_path)



def int16_twin(model: Model) -> Model:
    """``model`` (of int8 activations and int8 constant operands, no MAC weights) with int16 tensors instead:
    each int8 tensor's scale divided by 256 with zero point 0, its constant values multiplied by 256."""
    tensors = []
    for tensor in model.tensors:
        if tensor.dtype != "int8":
            tensors.append(tensor)
            continue
        quant = _symmetric(tensor.quantization.scales[0] / 256)
        data = None if tensor.data is None else (np.asarray(tensor.data).astype(np.int16) * 256)
        tensors.append(Tensor(tensor.name, tensor.shape, "int16", quant, data=data))
    return Model(tensors, model.operators, model.inputs, model.outputs)


@pytest.mark.parametrize("builtin", ["RELU", "RELU6"])
def test_16x8_relu_and_relu6_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(unary_model(builtin, Unary(), "int16", RESCALES), tmp_path)


@pytest.mark.parametrize("builtin", ["MAXIMUM", "MINIMUM"])
def test_16x8_maximum_and_minimum_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(int16_twin(binary_model(builtin, None)), tmp_path)


def _outputs_named(model: Model, names) -> frozenset[str]:
    return frozenset(name for name in names if name in {model.tensors[index].name for index in model.outputs})


@pytest.mark.parametrize("builtin", ["TRANSPOSE", "CONCATENATION", "SQUEEZE", "EXPAND_DIMS", "SLICE", "PACK",
                                     "UNPACK", "SPLIT", "SPLIT_V"])
def test_16x8_copies_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    """The int8 test's model of each copy operator, in int16; its outputs that are views stay views."""
    built = {"TRANSPOSE": (shape_ops.transpose_model, shape_ops.TRANSPOSE_VIEWS),
             "CONCATENATION": (shape_ops.concatenation_model, shape_ops.CONCATENATION_VIEWS),
             "SQUEEZE": (lambda: shape_ops.reshaping_model("SQUEEZE"), None),
             "EXPAND_DIMS": (lambda: shape_ops.reshaping_model("EXPAND_DIMS"), None),
             "SLICE": (shape_ops.slice_model, frozenset(
                 f"case{index}_out" for index, (shape, begin, size) in enumerate(shape_ops.SLICES)
                 if all(length in (-1, dim) and start == 0 for dim, start, length in zip(shape, begin, size)))),
             "PACK": (shape_ops.pack_model, frozenset(
                 f"case{index}_out" for index, (_, count, _) in enumerate(shape_ops.PACKS) if count == 1)),
             "UNPACK": (unpack_model, frozenset(
                 f"case{index}_out0" for index, (shape, axis) in enumerate(UNPACKS) if shape[axis] == 1)),
             "SPLIT": (lambda: shape_ops.split_model("SPLIT"), None),
             "SPLIT_V": (lambda: shape_ops.split_model("SPLIT_V"), None)}
    make, views = built[builtin]
    model = int16_twin(make())
    if views is None:  # SQUEEZE and EXPAND_DIMS rename the shape; a split into one piece is all of its input
        views = frozenset(model.tensors[operator.outputs[0]].name for operator in model.operators
                          if operator.builtin in ("SQUEEZE", "EXPAND_DIMS")
                          or operator.builtin == builtin and len(operator.outputs) == 1)
    assert_bit_exact_with_tflite_micro(model, tmp_path, _outputs_named(model, views))


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_16x8_transpose_as_runs_on_a_dsp_core_is_bit_exact_with_tflite_micro(tmp_path):
    """The int8 TRANSPOSE model in int16 on a DSP core: the permutations that keep their trailing axes copy runs of
    two-byte elements with the bundle's word copy (tvm_ext/kernels/copy_runs.py: transpose_runs), bit-exactly."""
    bodies = shape_ops.dsp_kernel_bodies(int16_twin(shape_ops.transpose_model()), tmp_path)
    assert any(", 2);" in body and "_copy_ascending(" in body for name, body in bodies.items()
               if "_transpose" in name), bodies


# (input type and quantization, output type and quantization) of integer QUANTIZEs (requantizations) TFLite Micro
# runs: int16 to int16 (rescales above and below one), int16 to int8 and back.
REQUANTIZATIONS = (
    ("int16", _symmetric(0.0004), "int16", _symmetric(0.0001)),
    ("int16", _symmetric(0.0001), "int16", _symmetric(0.0007)),
    ("int16", _symmetric(0.0004), "int8", Quantization((0.05,), (-3,))),
    ("int8", Quantization((0.05,), (7,)), "int16", _symmetric(0.0003)),
)


def test_16x8_requantizations_are_bit_exact_with_tflite_micro(tmp_path):
    built = ModelBuilder()
    for index, (in_type, in_quant, out_type, out_quant) in enumerate(REQUANTIZATIONS):
        data = built.add(Tensor(f"case{index}_in", (3, 7), in_type, in_quant))
        built.inputs.append(data)
        built.outputs.append(built.op("QUANTIZE", (data,), Tensor(f"case{index}_out", (3, 7), out_type, out_quant)))
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path)


# (input, output) scales of two LEAKY_RELUs of TFLite Micro's own 16x8 integration tests (seanet): their rescales
# differ by one float32 step between the kernel source's float32 ratio and the double one the tflite-micro package
# computes, which 13 to 46 of the 65,536 int16 inputs show.
SEANET_RESCALES = ((0.005836874712258577, 0.0046422905288636684), (0.0010244421428069472, 0.0009051731321960688))
INT16_VALUES = np.arange(-32768, 32768).astype(np.int16)


@pytest.mark.parametrize("builtin, options", [("LEAKY_RELU", Options("LeakyReluOptions", {"Alpha": 0.3})),
                                              ("ABS", None)])
def test_every_int16_input_of_a_16x8_rescaling_activation_is_bit_exact_with_tflite_micro(builtin, options, tmp_path):
    built = ModelBuilder()
    for index, (in_scale, out_scale) in enumerate(SEANET_RESCALES):
        data = built.add(Tensor(f"case{index}_in", INT16_VALUES.shape, "int16", _symmetric(in_scale)))
        built.inputs.append(data)
        built.outputs.append(built.op(builtin, (data,), Tensor(f"case{index}_out", INT16_VALUES.shape, "int16",
                                                               _symmetric(out_scale)), options))
    # Its inputs and outputs are 512 KiB, lowpower's whole SRAM: a board twice its size holds them and the stack.
    roomy = dataclasses.replace(load_profile("lowpower"), sram_bytes=2 * 524_288)
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path, inputs=[INT16_VALUES] * len(SEANET_RESCALES),
                                       target=roomy)


# Input scales of the 16x8 LOGISTIC and TANH tests: 2^-12 (TFLM's power-of-two form, multiplier 3), 2^-11 (TANH's
# power-of-two form with multiplier 6, LOGISTIC's general one), a general scale, a fine one (a shift of 16) and a
# coarse one (every input beyond a few steps saturates).
SIGMOID_INPUT_SCALES = (2.0**-12, 2.0**-11, 0.00041, 3e-6, 0.05)


@pytest.mark.parametrize("builtin", ("LOGISTIC", "TANH"))
def test_every_int16_input_of_a_16x8_logistic_and_tanh_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    """TFLM's int16 LOGISTIC and TANH (output scale 2^-15, the one they take) of all 65,536 int16 inputs at each
    of SIGMOID_INPUT_SCALES: the interpolation, its saturation from index 255 on and the reflection of negative
    inputs. The five calls are one kernel: their rescales are its operand, not immediates."""
    built = ModelBuilder()
    for index, scale in enumerate(SIGMOID_INPUT_SCALES):
        data = built.add(Tensor(f"case{index}_in", INT16_VALUES.shape, "int16", _symmetric(scale)))
        built.inputs.append(data)
        built.outputs.append(built.op(builtin, (data,), Tensor(f"case{index}_out", INT16_VALUES.shape, "int16",
                                                               _symmetric(2.0**-15))))
    roomy = dataclasses.replace(load_profile("lowpower"), sram_bytes=4 * 524_288)
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path, inputs=[INT16_VALUES] * len(SIGMOID_INPUT_SCALES),
                                       target=roomy)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert len(manifest["kernels"]) == 1 and len(manifest["calls"]) == len(SIGMOID_INPUT_SCALES), manifest["kernels"]


# (input, output) scales of the 16x8 RSQRT test: a LayerNormalization variance's (2^-15 in, about 0.006 out), a
# rescale of one, a coarse input, a fine one, and an output too fine for 1/sqrt of the smallest inputs (saturated).
RSQRT_SCALES = ((2.0**-15, 0.006), (0.001, 0.001), (0.5, 2e-5), (1e-7, 0.1), (0.0001, 0.0001))
NON_NEGATIVE_INT16 = np.arange(0, 32768).astype(np.int16)


def test_every_valid_int16_input_of_a_16x8_rsqrt_is_bit_exact_with_tflite_micro(tmp_path):
    """TFLM's int16 RSQRT (its fixed-point 1/sqrt per element; x = 0 gives 32767) of all 32,768 non-negative int16
    inputs at each of RSQRT_SCALES. Each RSQRT reads a RELU of its input: TFLite Micro refuses to run RSQRT on a
    negative input, and the random runs cover the whole int16 range."""
    built = ModelBuilder()
    for index, (in_scale, out_scale) in enumerate(RSQRT_SCALES):
        shape = NON_NEGATIVE_INT16.shape
        data = built.add(Tensor(f"case{index}_in", shape, "int16", _symmetric(in_scale)))
        relu = built.op("RELU", (data,), Tensor(f"case{index}_relu", shape, "int16", _symmetric(in_scale)))
        built.inputs.append(data)
        built.outputs.append(built.op("RSQRT", (relu,), Tensor(f"case{index}_out", shape, "int16",
                                                                _symmetric(out_scale))))
    roomy = dataclasses.replace(load_profile("lowpower"), sram_bytes=4 * 524_288)
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path, inputs=[NON_NEGATIVE_INT16] * len(RSQRT_SCALES),
                                       target=roomy)


# (lhs, rhs, output) scales of the 16x8 SQUARED_DIFFERENCE test, cycled through the binary cases: the larger scale on
# either side, equal scales, outputs that take most squares and ones that saturate the largest.
SQUARED_DIFFERENCE_SCALES = ((0.0002, 0.0003, 0.01), (0.001, 0.0005, 0.03), (0.00003, 0.0001, 0.0006),
                             (0.0004, 0.0004, 0.002))


def test_16x8_squared_difference_is_bit_exact_with_tflite_micro(tmp_path):
    """TFLM's int16 SQUARED_DIFFERENCE (no left shift) on the int8 test's shapes: broadcasts, a scalar, constant
    operands (the int8 constants times 256)."""
    built = ModelBuilder()
    for index, case in enumerate(BINARY_CASES):
        scales = SQUARED_DIFFERENCE_SCALES[index % len(SQUARED_DIFFERENCE_SCALES)]
        operands = []
        for side, shape, scale, constant in (("lhs", case.lhs, scales[0], case.constant_lhs),
                                             ("rhs", case.rhs, scales[1], case.constant_rhs)):
            data = None if constant is None else np.asarray(constant).astype(np.int16) * 256
            operands.append(built.add(Tensor(f"case{index}_{side}", shape, "int16", _symmetric(scale), data=data)))
            if constant is None:
                built.inputs.append(operands[-1])
        built.outputs.append(built.op("SQUARED_DIFFERENCE", tuple(operands),
                                      Tensor(f"case{index}_out", np.broadcast_shapes(case.lhs, case.rhs), "int16",
                                             _symmetric(scales[2]))))
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path)


# The 16x8 LayerNormalization's quantizations (symmetric scales), of the ranges a converter gives over inputs in [-8, 8].
LAYER_NORM_16X8_SCALES = {"data": 2.0**-12, "mean": 2.0**-12, "squares": 0.002, "variance": 0.002, "epsilon": 1e-9,
                          "rsqrt": 0.0008, "gamma": 4e-5, "factor": 0.001, "scaled": 0.0008, "mean_scaled": 0.0008,
                          "beta": 2e-5}


def layer_normalization_16x8_model(tokens: int = 16, dim: int = 24) -> Model:
    """Keras' LayerNormalization over the last axis as TFLite's 16x8 converter writes it: MEAN, SQUARED_DIFFERENCE,
    MEAN, ADD of epsilon, RSQRT, MUL by gamma, MUL, MUL, SUB from beta, ADD; int16 constants."""
    rng = np.random.default_rng(16)
    scales = LAYER_NORM_16X8_SCALES
    built = ModelBuilder()
    shape, reduced = (1, tokens, dim), (1, tokens, 1)

    def tensor(name: str, tensor_shape, data=None, scale: str = "") -> Tensor:
        return Tensor(name, tensor_shape, "int16", _symmetric(scales[scale or name]), data=data)

    def binary(builtin: str, lhs: int, rhs: int, name: str, scale: str = "") -> int:
        out_shape = np.broadcast_shapes(built.tensors[lhs].shape, built.tensors[rhs].shape)
        return built.op(builtin, (lhs, rhs), tensor(name, out_shape, scale=scale))

    data = built.add(tensor("data", shape))
    built.inputs.append(data)
    axis = built.add(Tensor("axis", (1,), "int32", data=np.array([2], np.int32)))
    keep = Options("ReducerOptions", {"KeepDims": True})
    mean = built.op("MEAN", (data, axis), tensor("mean", reduced), keep)
    squares = binary("SQUARED_DIFFERENCE", data, mean, "squares")
    variance = built.op("MEAN", (squares, axis), tensor("variance", reduced), keep)
    epsilon = built.add(tensor("epsilon", (), np.array(1000, np.int16)))
    shifted = binary("ADD", variance, epsilon, "shifted", "variance")
    inverse = built.op("RSQRT", (shifted,), tensor("rsqrt", reduced))
    gamma = built.add(tensor("gamma", (dim,), rng.integers(-32767, 32768, dim).astype(np.int16)))
    factor = binary("MUL", inverse, gamma, "factor")
    scaled = binary("MUL", data, factor, "scaled")
    mean_scaled = binary("MUL", mean, factor, "mean_scaled")
    beta = built.add(tensor("beta", (dim,), rng.integers(-32767, 32768, dim).astype(np.int16)))
    offset = binary("SUB", beta, mean_scaled, "offset", "mean_scaled")
    built.outputs.append(binary("ADD", scaled, offset, "normalized", "scaled"))
    return built.model()


def test_a_16x8_layer_normalization_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(layer_normalization_16x8_model(), tmp_path)
