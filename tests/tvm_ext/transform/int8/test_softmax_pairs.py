"""int8 SOFTMAX over rows of two (a 2-class head): one lookup per element in a compile-time table of the row's
difference (tvm_ext.kernels.softmax_pair_int8, int8_tables.softmax_pair_table), bit-exact with TFLite Micro over
random inputs of the whole int8 range, on a coarse input scale whose exp table ends in zeros, with beta 0.5 and
writing int16 (TFLM's int8-in, int16-out softmax);
no fixed-point arithmetic is left in the bundle's kernels."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402

SOFTMAX_OUTPUT = Quantization((1 / 256,), (-128,))
"""TFLite's int8 softmax output quantization."""


SOFTMAX_INT16_OUTPUT = Quantization((1 / 65536,), (-32768,))
"""TFLM's int8-in, int16-out softmax output quantization."""


def _pairs_model() -> Model:
    """Inputs a [1, 40, 2] (scale 0.3, zero point 7: its exp table ends in zeros), b [3, 2] (scale 0.05) and c
    [30, 2] (scale 0.02), and a SOFTMAX of each (b's with beta 0.5; c's writing int16), each a model output."""
    tensors = [Tensor("a", (1, 40, 2), "int8", Quantization((0.3,), (7,))),
               Tensor("b", (3, 2), "int8", Quantization((0.05,), (-3,))),
               Tensor("c", (30, 2), "int8", Quantization((0.02,), (4,))),
               Tensor("soft_a", (1, 40, 2), "int8", SOFTMAX_OUTPUT),
               Tensor("soft_b", (3, 2), "int8", SOFTMAX_OUTPUT),
               Tensor("soft_c", (30, 2), "int16", SOFTMAX_INT16_OUTPUT)]
    operators = [Operator("SOFTMAX", (0,), (3,), Options("SoftmaxOptions", {"Beta": 1.0})),
                 Operator("SOFTMAX", (1,), (4,), Options("SoftmaxOptions", {"Beta": 0.5})),
                 Operator("SOFTMAX", (2,), (5,), Options("SoftmaxOptions", {"Beta": 1.0}))]
    return Model(tensors, operators, (0, 1, 2), (3, 4, 5))


def test_softmax_over_rows_of_two_is_a_lookup_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(_pairs_model(), tmp_path)
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert "fixed_point_temps" not in kernels and "softmax" in kernels, kernels
