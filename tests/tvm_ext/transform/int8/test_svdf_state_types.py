"""SVDF's time weights and state must have one type. TFLite Micro has no int16-activation SVDF (its input is
int8); its integer kernel is a template on the time weights' type (int16 or int8) and reads the state as that
type too, so a model whose state has the other type makes it read the state's bytes as something else (past
their end for an int8 state). Such a model is refused in one line naming SVDF and both types; it once compiled
and then disagreed with TFLite Micro (exit 3). The matching int16 and int8 SVDFs are test_svdf.py's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")

from test_int8_elementwise_ops import assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402


def svdf_model(time_dtype: str, state_dtype: str) -> Model:
    """input [1, 6] -> SVDF (3 filters, rank 1, memory 4) -> output [1, 3], with the two types given."""
    rng = np.random.default_rng(0)

    def quant(scale: float, zero_point: int = 0) -> Quantization:
        return Quantization((scale,), (zero_point,))

    tensors = [Tensor("x", (1, 6), "int8", quant(0.06, -5)),
               Tensor("feature", (3, 6), "int8", quant(0.009), rng.integers(-127, 128, (3, 6)).astype(np.int8)),
               Tensor("time", (3, 4), time_dtype, quant(0.003), rng.integers(-100, 100, (3, 4)).astype(time_dtype)),
               Tensor("bias", (3,), "int32", quant(float(np.float32(0.004) * np.float32(0.003))),
                      rng.integers(-300, 300, 3).astype(np.int32)),
               Tensor("state", (1, 12), state_dtype, quant(0.004), variable=True),
               Tensor("y", (1, 3), "int8", quant(1.0, 2))]
    return Model(tensors, [Operator("SVDF", (0, 1, 2, 3, 4), (5,), Options("SVDFOptions", {"Rank": 1}))], (0,), (5,))


@pytest.mark.parametrize("time_dtype, state_dtype", (("int16", "int8"), ("int8", "int16")))
def test_an_svdf_whose_state_and_time_weights_differ_in_type_is_refused(time_dtype, state_dtype, tmp_path):
    assert_refused_in_one_line(svdf_model(time_dtype, state_dtype), f"SVDF time weights ({time_dtype}) and state "
                               f"({state_dtype})", tmp_path)
