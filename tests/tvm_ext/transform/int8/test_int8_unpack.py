"""int8 UNPACK through the real pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro.

UNPACK keeps its input's quantization: each output is a copy of one slice of the stored int8 values (an
input whose axis has size one, unpacked into one output, is a view). One model holds an UNPACK per case,
each with its own input and outputs: every axis of 1-D to 5-D inputs, negative axes, num = 1, size-1 and odd
dimensions, zero points at both ends of int8; the bundle's self-test must be bit-identical and its C, on
random inputs, equal TFLite Micro exactly. TVM 0.27's own converter imports no UNPACK of several outputs.
"""
from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from test_int8_shape_ops import QUANTIZATIONS  # noqa: E402
from tflite_builder import Model, Operator, Options, Tensor  # noqa: E402

# (input shape, axis): each axis of 1-D to 5-D, negative axes, an axis of size one (num = 1), odd sizes.
UNPACKS = (
    ((3,), 0),
    ((2, 5), 0),
    ((3, 5), 1),
    ((3, 5), -1),
    ((1, 7), 0),
    ((2, 3, 5), -2),
    ((1, 3, 1, 5), 2),
    ((2, 1, 3, 5), -4),
    ((3, 2, 1, 3, 1), 3),
    ((1, 1, 1, 1), -1),
)


def unpack_model() -> Model:
    """One UNPACK per case of UNPACKS, each of its own input's RELU (a model of data movement alone has no
    quantize or dequantize for the int8 pass to start from), with its own outputs (``case<i>_out<j>``)."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, axis) in enumerate(UNPACKS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", shape, "int8", quant), Tensor(f"case{index}_relu", shape, "int8", quant)]
        operators.append(Operator("RELU", (inputs[-1],), (inputs[-1] + 1,)))
        count, position = shape[axis], axis % len(shape)
        pieces = tuple(range(len(tensors), len(tensors) + count))
        outputs += pieces
        tensors += [Tensor(f"case{index}_out{piece}", shape[:position] + shape[position + 1:], "int8", quant)
                    for piece in range(count)]
        operators.append(Operator("UNPACK", (inputs[-1] + 1,), pieces,
                                  Options("UnpackOptions", {"Num": count, "Axis": axis})))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_unpack_is_bit_exact_with_tflite_micro(tmp_path):
    views = frozenset(f"case{index}_out0" for index, (shape, axis) in enumerate(UNPACKS) if shape[axis] == 1)
    assert_bit_exact_with_tflite_micro(unpack_model(), tmp_path, views)


@pytest.mark.parametrize("num, outputs", ((3, 3), (2, 3)))  # num beyond the axis; more outputs than num
def test_an_unpack_whose_num_or_outputs_differ_from_its_axis_is_refused_in_one_line(num, outputs, tmp_path):
    quant = QUANTIZATIONS[0]
    pieces = tuple(range(1, outputs + 1))
    model = Model([Tensor("x", (2, 4), "int8", quant)] + [Tensor(f"y{i}", (4,), "int8", quant) for i in pieces],
                  [Operator("UNPACK", (0,), pieces, Options("UnpackOptions", {"Num": num, "Axis": 0}))], (0,), pieces)
    assert_refused_in_one_line(model, "(UNPACK): UNPACK of num", tmp_path)
