"""int8 SOFTMAX, RESHAPE and int8 -> int8 QUANTIZE on awkward shapes (issue 15), bit-exact with TFLite Micro.

SOFTMAX (tests/tvm_ext/transform/int8/test_softmax_beta.py covers beta on (2, 9)): ranks 1 to 4, one element, a row of one, odd
rows, input scales whose rescale saturates TFLite's input radius. RESHAPE: to and from rank 1, a -1 in the
new shape, the new shape as a constant tensor and as the options' vector only, one element. SOFTMAX and
RESHAPE models are made of these operators alone, which TVM imports without quantize/dequantize (the frontend
marks the model quantized). QUANTIZE: rescales above and below one, zero points at both ends of int8.
Compiled through tvm_ext.compile (lowpower), checked as tests/tvm_ext/transform/int8/test_int8_elementwise_ops.py does.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

SOFTMAX_OUTPUT = Quantization((1 / 256,), (-128,))  # the output quantization TFLite Micro requires
# (shape, input quantization): ranks 1 to 4, one element, rows of one, odd rows, a wide input scale.
SOFTMAXES = (
    ((7,), Quantization((0.1,), (3,))),
    ((1, 1), Quantization((0.05,), (-128,))),
    ((5, 1), Quantization((0.2,), (10,))),
    ((2, 3, 5), Quantization((0.5,), (-7,))),
    ((1, 2, 2, 3), Quantization((0.01,), (0,))),
    ((3, 13), Quantization((1.0,), (127,))),
)


def softmax_model() -> Model:
    """One SOFTMAX (beta 1) per case of SOFTMAXES, each with its own graph input and output."""
    tensors, operators = [], []
    for index, (shape, quant) in enumerate(SOFTMAXES):
        tensors += [Tensor(f"case{index}_in", shape, "int8", quant),
                    Tensor(f"case{index}_out", shape, "int8", SOFTMAX_OUTPUT)]
        operators.append(Operator("SOFTMAX", (2 * index,), (2 * index + 1,), Options("SoftmaxOptions", {"Beta": 1.0})))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


# (input shape, the new shape as written (may hold -1), output shape, whether the new shape is a tensor)
RESHAPES = (
    ((2, 3, 5), (30,), (30,), True),
    ((30,), (5, -1), (5, 6), True),
    ((1, 1, 1, 1), (1,), (1,), False),
    ((1, 4, 3, 2), (1, -1, 2), (1, 12, 2), False),
    ((3, 7), (7, 3), (7, 3), True),
)


def reshape_model() -> Model:
    """One RESHAPE per case of RESHAPES, each with its own graph input and output (a view: no kernel)."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, new_shape, out_shape, as_tensor) in enumerate(RESHAPES):
        quant = Quantization((0.05 * (index + 1),), (index - 2,))
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", shape, "int8", quant))
        operands = (inputs[-1],)
        if as_tensor:
            operands += (len(tensors),)
            tensors.append(Tensor(f"case{index}_shape", (len(new_shape),), "int32",
                                  data=np.array(new_shape, np.int32)))
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", out_shape, "int8", quant))
        operators.append(Operator("RESHAPE", operands, (outputs[-1],),
                                  Options("ReshapeOptions", {"NewShape": new_shape})))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_softmax_shapes_are_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(softmax_model(), tmp_path)


# (input scale, beta) of the exhaustive softmax check: scales from fine (no difference reaches TFLite's cut) to
# coarse (most differences are beyond it), betas below and above one.
EXHAUSTIVE_SOFTMAXES = ((0.0039, 1.0), (0.05, 1.0), (0.1446925, 1.0), (0.9, 1.0), (7.5, 1.0), (0.1, 0.5), (0.03, 3.0))
# Row 0 holds every int8 value: every difference 0..255 to its maximum (127). Row 1 holds 126 twice, then the
# values down to -128 (two elements at its maximum, differences 0..254); row 2 is one value (every difference 0).
EXHAUSTIVE_ROWS = np.stack([np.arange(-128, 128), np.concatenate([[126], np.arange(126, -129, -1)]),
                            np.full(256, -5)]).astype(np.int8)
# Row d is (127, 127 - d): its second output is exp(-d)/(1 + exp(-d)), one exp table entry alone. Written as
# int16 (scale 1/65536, zero point -32768, TFLM's int8-in int16-out softmax), 16 bits of it are compared.
EXHAUSTIVE_PAIRS = np.stack([np.full(256, 127), np.arange(127, -129, -1)], axis=1).astype(np.int8)
INT16_SOFTMAX_OUTPUT = Quantization((1 / 65536,), (-32768,))


def test_every_softmax_difference_is_bit_exact_with_tflite_micro(tmp_path):
    """Per case of EXHAUSTIVE_SOFTMAXES, every difference 0..255 to the row maximum (every entry of the exp
    table): in long rows written as int8, and alone beside the maximum written as int16. The zero point does
    not matter to softmax (differences only)."""
    tensors, operators, inputs = [], [], []
    for index, (scale, beta) in enumerate(EXHAUSTIVE_SOFTMAXES):
        options = Options("SoftmaxOptions", {"Beta": beta})
        in_quant = Quantization((scale,), (index - 3,))
        for kind, values, dtype, out_quant in (("rows", EXHAUSTIVE_ROWS, "int8", SOFTMAX_OUTPUT),
                                               ("pairs", EXHAUSTIVE_PAIRS, "int16", INT16_SOFTMAX_OUTPUT)):
            tensors += [Tensor(f"case{index}_{kind}_in", values.shape, "int8", in_quant),
                        Tensor(f"case{index}_{kind}_out", values.shape, dtype, out_quant)]
            operators.append(Operator("SOFTMAX", (len(tensors) - 2,), (len(tensors) - 1,), options))
            inputs.append(values)
    model = Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=inputs)


def test_reshapes_are_views_bit_exact_with_tflite_micro(tmp_path):
    model = reshape_model()
    assert_bit_exact_with_tflite_micro(model, tmp_path, frozenset(model.tensors[i].name for i in model.outputs))


# (shape, input quantization, output quantization): int8 -> int8 QUANTIZE (a requantize), rescales above and
# below one, zero points at both ends of int8, one element.
REQUANTIZES = (
    ((3, 7), Quantization((0.05,), (3,)), Quantization((0.02,), (-128,))),
    ((1, 1, 1, 1), Quantization((0.01,), (-128,)), Quantization((0.3,), (127,))),
    ((2, 3, 5), Quantization((0.2,), (10,)), Quantization((0.2,), (-10,))),
)


def requantize_model() -> Model:
    """One int8 -> int8 QUANTIZE per case of REQUANTIZES, each with its own graph input and output."""
    tensors, operators = [], []
    for index, (shape, in_quant, out_quant) in enumerate(REQUANTIZES):
        tensors += [Tensor(f"case{index}_in", shape, "int8", in_quant),
                    Tensor(f"case{index}_out", shape, "int8", out_quant)]
        operators.append(Operator("QUANTIZE", (2 * index,), (2 * index + 1,)))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


def test_int8_requantize_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(requantize_model(), tmp_path)


@pytest.mark.parametrize("option, name, output_shape", [("EllipsisMask", "ellipsis_mask", (3, 7)),
                                                        ("NewAxisMask", "new_axis_mask", (1, 3, 7)),
                                                        ("Offset", "offset", (3, 5))])
def test_a_strided_slice_option_tflite_micro_lacks_is_refused_in_one_line(option, name, output_shape, tmp_path):
    quant = Quantization((0.05,), (1,))
    vectors = {"begin": (0, 2), "end": (3, 5), "strides": (1, 1)}
    tensors = [Tensor("x", (3, 7), "int8", quant),
               *(Tensor(key, (2,), "int32", data=np.array(values, np.int32)) for key, values in vectors.items()),
               Tensor("y", output_shape, "int8", quant)]
    options = Options("StridedSliceOptions", {option: True})
    model = Model(tensors, [Operator("STRIDED_SLICE", (0, 1, 2, 3), (4,), options)], (0,), (4,))
    assert_refused_in_one_line(model, f"STRIDED_SLICE with {name}", tmp_path)
