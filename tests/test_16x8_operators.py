"""16x8 (int16 activations of zero point 0) PAD, PADV2, STRIDED_SLICE, RESHAPE, LEAKY_RELU, ABS, MEAN, SUM and
TRANSPOSE_CONV through the real pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro on random inputs
over the whole int16 range (SUB is test_int16_ops.py's, beside ADD).

Each operator's model is its int8 test's (the same attribute variants: paddings of 1-D to 5-D tensors, negative
strides, begin/end/shrink masks, every axis and keep_dims, SAME/VALID, strides, output padding, fused activations)
with int16 tensors and symmetric quantizations; TFLite Micro runs each with its int16 kernel (LEAKY_RELU, ABS, MEAN,
SUM and TRANSPOSE_CONV with their own int16 arithmetic, the others copying the stored values).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_int8_elementwise_ops import Unary, assert_bit_exact_with_tflite_micro, unary_model  # noqa: E402
from test_int8_matmul_ops import TRANSPOSE_CONV_CASES, transpose_conv_model  # noqa: E402
from test_int8_misc_ops import reduction_model  # noqa: E402
from test_int8_shape_ops import PAD_VIEWS, STRIDED_SLICE_VIEWS, pad_model, strided_slice_model  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor  # noqa: E402


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
