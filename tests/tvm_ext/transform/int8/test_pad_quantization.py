"""PAD and PADV2 whose input is quantized unlike their output, as TFLite Micro runs them: the stored int8 values
are copied as they are and read with the output's quantization, the padding is the output's zero point (PAD) or
PADV2's stored constant. TVM's converter refused them (naming PADV2 for a PAD too); now they compile and match
TFLite Micro exactly, and a PADV2 whose constant TFLite Micro refuses is refused in one line naming PADV2."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

INPUT = Quantization((0.05,), (3,))
OUTPUT = Quantization((0.08,), (-20,))  # another scale and zero point
SHAPE, PADDINGS = (1, 3, 4, 2), ((0, 0), (1, 2), (0, 1), (0, 0))
PADDED = (1, 6, 5, 2)


def pad_then_add(builtin: str, constant: Quantization = OUTPUT) -> Model:
    """``out = PAD(x) + y``, the PAD's output quantized unlike its input (the ADD reads it with the output's
    quantization); PADV2 pads with its constant -77, quantized as ``constant``; and ``direct``, the PAD of a
    second input as a model output of its own."""
    tensors = [Tensor("x", SHAPE, "int8", INPUT), Tensor("y", PADDED, "int8", OUTPUT),
               Tensor("paddings", (4, 2), "int32", data=np.array(PADDINGS, np.int32)),
               Tensor("padded", PADDED, "int8", OUTPUT), Tensor("out", PADDED, "int8", Quantization((0.1,), (5,))),
               Tensor("z", SHAPE, "int8", INPUT), Tensor("direct", PADDED, "int8", OUTPUT)]
    operands = [(0, 2), (5, 2)]
    if builtin == "PADV2":
        tensors.append(Tensor("value", (1,), "int8", constant, data=np.array([-77], np.int8)))
        operands = [(0, 2, 7), (5, 2, 7)]
    operators = [Operator(builtin, operands[0], (3,)),
                 Operator("ADD", (3, 1), (4,), Options("AddOptions", {"FusedActivationFunction":
                                                                       ActivationFunctionType.NONE})),
                 Operator(builtin, operands[1], (6,))]
    return Model(tensors, operators, (0, 1, 5), (4, 6))


@pytest.mark.parametrize("builtin", ("PAD", "PADV2"))
def test_a_pad_quantized_unlike_its_input_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(pad_then_add(builtin), tmp_path)


def test_a_padv2_constant_quantized_unlike_its_output_is_refused_naming_padv2(tmp_path):
    assert_refused_in_one_line(pad_then_add("PADV2", constant=INPUT), "(PADV2)", tmp_path)
