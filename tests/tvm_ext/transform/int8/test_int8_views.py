"""Copies of a contiguous block become views (tvm_ext.transform.contiguous_views), through the real pipeline.

One model reads its input's RELU three ways: an UNPACK along its outermost axis (each piece one 16-byte row
block), a SLICE of two whole rows and a STRIDED_SLICE of one row further on, each piece then read by a
kernel no copy fuses into (a SOFTMAX; a RELU would take the copy into its own loop), so no piece is a model
output. Every piece is a view: no UNPACK, SLICE or STRIDED_SLICE call
is left, the bundle's self-test (its arena's free bytes poisoned before each call, under sanitizers) is
bit-identical, and its C equals TFLite Micro exactly on random inputs. A slice that is no contiguous block
(a column) stays a copy.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from test_int8_shape_ops import QUANTIZATIONS  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

SHAPE = (4, 2, 8)  # 4 blocks of 16 int8
SOFTMAX_OUTPUT = Quantization((1 / 256,), (-128,))  # TFLite's int8 SOFTMAX output


def views_model() -> Model:
    """input -> RELU -> UNPACK (4 pieces), SLICE rows 1..2, STRIDED_SLICE row 3, a column SLICE; each -> SOFTMAX."""
    quant = QUANTIZATIONS[0]
    tensors = [Tensor("x", SHAPE, "int8", quant), Tensor("relu", SHAPE, "int8", quant)]
    operators = [Operator("RELU", (0,), (1,))]
    pieces = []

    def add(name: str, shape: tuple[int, ...]) -> int:
        tensors.append(Tensor(name, shape, "int8", quant))
        return len(tensors) - 1

    def const(name: str, values) -> int:
        tensors.append(Tensor(name, (len(values),), "int32", data=np.array(values, np.int32)))
        return len(tensors) - 1

    unpacked = tuple(add(f"unpack{k}", SHAPE[1:]) for k in range(SHAPE[0]))
    operators.append(Operator("UNPACK", (1,), unpacked, Options("UnpackOptions", {"Num": SHAPE[0], "Axis": 0})))
    pieces += unpacked
    rows = add("rows", (2, *SHAPE[1:]))
    operators.append(Operator("SLICE", (1, const("rows_begin", (1, 0, 0)), const("rows_size", (2, 2, 8))), (rows,)))
    pieces.append(rows)
    last = add("last", (1, *SHAPE[1:]))
    operators.append(Operator("STRIDED_SLICE", (1, const("last_begin", (3, 0, 0)), const("last_end", (4, 2, 8)),
                                                const("last_strides", (1, 1, 1))), (last,),
                              Options("StridedSliceOptions", {})))
    pieces.append(last)
    column = add("column", (4, 2, 1))
    operators.append(Operator("SLICE", (1, const("column_begin", (0, 0, 3)), const("column_size", (4, 2, 1))),
                              (column,)))
    pieces.append(column)
    outputs = []
    for piece in pieces:
        tensors.append(Tensor(f"{tensors[piece].name}_softmax", tensors[piece].shape, "int8", SOFTMAX_OUTPUT))
        outputs.append(len(tensors) - 1)
        operators.append(Operator("SOFTMAX", (piece,), (outputs[-1],), Options("SoftmaxOptions", {"Beta": 1.0})))
    return Model(tensors, operators, (0,), tuple(outputs))


def test_contiguous_pieces_are_views_and_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(views_model(), tmp_path, frozenset({"unpack0", "rows", "last"}))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    offsets = sorted(t["view_offset"] for t in manifest["tensors"] if "view_offset" in t)
    assert offsets == [16, 16, 32, 48, 48]  # unpack1..3, rows at row 1, last at row 3 (unpack0 and at 0: no offset)
