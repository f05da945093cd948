"""A per-row value that a fused kernel broadcasts along its rows is computed once per row, not once per element
(tvm_ext/schedule/kernel_schedule.py `_recomputed_when_inlined`), bit-exactly with TFLite Micro.

A layer normalization's MEAN -> ADD -> RSQRT -> MUL over (ROWS, COLUMNS): FuseOps fuses the ADD and the RSQRT (a
table lookup, elementwise) into the MUL that broadcasts their (ROWS, 1) result. Inlined there, the ADD's two
requantizations and the lookup were recomputed for each of the COLUMNS elements of a row (the zoo's ViT on
cortex-m4f: 6,795,271 -> 6,927,990 instructions when the lookups began to fuse).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor  # noqa: E402

ROWS, COLUMNS = 5, 24


def _row_scale_model() -> ModelBuilder:
    """x (ROWS, COLUMNS) -> MEAN over the columns (kept) -> ADD of a constant -> RSQRT -> MUL by x (broadcast)."""
    built = ModelBuilder()
    data = built.add(Tensor("x", (ROWS, COLUMNS), "int8", Quantization((0.02,), (-128,))))
    built.inputs.append(data)
    axis = built.add(Tensor("axis", (1,), "int32", data=np.array([1], np.int32)))
    mean = built.op("MEAN", (data, axis), Tensor("mean", (ROWS, 1), "int8", Quantization((0.015,), (-128,))),
                    Options("ReducerOptions", {"KeepDims": True}))
    epsilon = built.add(Tensor("epsilon", (), "int8", Quantization((0.001,), (-128,)), data=np.array(-100, np.int8)))
    # Zero point -128: every int8 value is a valid RSQRT input for TFLite Micro.
    shifted = built.op("ADD", (mean, epsilon), Tensor("shifted", (ROWS, 1), "int8", Quantization((0.016,), (-128,))))
    inverse = built.op("RSQRT", (shifted,), Tensor("inverse", (ROWS, 1), "int8", Quantization((0.05,), (-128,))))
    built.outputs.append(built.op("MUL", (data, inverse),
                                  Tensor("scaled", (ROWS, COLUMNS), "int8", Quantization((0.04,), (3,)))))
    return built


def _innermost_statements(kernels_c: str) -> list[str]:
    """The statements of kernels.c inside two loops (a row's elements), as a brace count nests them."""
    depth, statements = 0, []
    for line in kernels_c.splitlines():
        if depth >= 3 and not line.strip().startswith("for"):  # the function's brace, then two loops
            statements.append(line)
        depth += line.count("{") - line.count("}")
    return statements


def test_row_values_are_computed_once_per_row_bit_exactly(tmp_path):
    assert_bit_exact_with_tflite_micro(_row_scale_model().model(), tmp_path)
    kernels_c = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    per_element = "\n".join(_innermost_statements(kernels_c))
    # Per element only the MUL's own requantization: the ADD's (of its two inputs and its sum) are per row.
    assert len(re.findall(r"requantize\w*\(", per_element)) == 1, kernels_c
