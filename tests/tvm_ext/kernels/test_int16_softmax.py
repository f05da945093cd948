"""16x8 SOFTMAX (int16 input and output, zero points 0, output scale 1/32768) through the real pipeline
(tvm_ext.compile, lowpower), bit-exact with TFLite Micro on random inputs over the whole int16 range.

TFLite Micro's kernel reads two 513-entry int16 tables its Prepare() fills in float32 (exp over [-10, 0] and
1/(1+x) over [0, 1]); the bundle carries the same tables as constants. The model holds several independent
SOFTMAX instances: one element, a depth of one, odd depths, rows of every rank up to 4, an input scale so fine
that every difference stays near exp(0), and one so coarse that most differences fall off the table's end.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro, assert_refused_in_one_line  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor  # noqa: E402
from tvm_ext.kernels.lut_int16 import LUT_INT16_SIZE  # noqa: E402
from tvm_ext.kernels.softmax_int16 import softmax_int16_luts  # noqa: E402

OUTPUT = Quantization((1 / 32768,), (0,))
# (input shape, input scale): odd depths, depth one, one element, ranks 1 to 4, fine and coarse scales.
CASES = (
    ((1, 10), 0.0005),
    ((3, 7), 0.002),
    ((2, 3, 5), 0.00002),
    ((1, 2, 2, 9), 0.01),
    ((4, 1), 0.001),
    ((1,), 0.003),
    ((2, 64), 0.0003),
)


def softmax_model(output: Quantization = OUTPUT, input_zero_point: int = 0) -> Model:
    """One 16x8 SOFTMAX (beta 1) per case, each with its own input and output."""
    tensors, operators = [], []
    for index, (shape, scale) in enumerate(CASES):
        tensors += [Tensor(f"case{index}_in", shape, "int16", Quantization((scale,), (input_zero_point,))),
                    Tensor(f"case{index}_out", shape, "int16", output)]
        operators.append(Operator("SOFTMAX", (2 * index,), (2 * index + 1,),
                                  Options("SoftmaxOptions", {"Beta": 1.0}), version=3))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


def test_16x8_softmax_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(softmax_model(), tmp_path)


def test_the_tables_are_tflite_micros():
    """Spot values of TFLite Micro's tables: exp(-10) and exp(0) at the ends (Q0.15), 1/(1+0) and 1/(1+1)."""
    luts = softmax_int16_luts()
    assert luts.exp.shape == luts.one_over_one_plus_x.shape == (LUT_INT16_SIZE,)
    assert (luts.exp[0], luts.exp[-1]) == (2, 32767)
    assert (luts.one_over_one_plus_x[0], luts.one_over_one_plus_x[-1]) == (32767, 16384)
    assert np.all(np.diff(luts.exp.astype(int)) >= 0) and np.all(np.diff(luts.one_over_one_plus_x.astype(int)) <= 0)


@pytest.mark.parametrize("output, input_zero_point", (
    (Quantization((1 / 32768,), (5,)), 0),  # TFLite Micro requires the output zero point 0
    (Quantization((1 / 256,), (0,)), 0),  # ... and the scale 1/32768
    (OUTPUT, 3),  # ... and the input zero point 0
))
def test_a_16x8_softmax_quantized_unlike_tflite_micros_is_refused_in_one_line(output, input_zero_point, tmp_path):
    # The line names the model's layer and operator (it once named the pass's var, "layer0").
    assert_refused_in_one_line(softmax_model(output, input_zero_point), "at layer case0_out (SOFTMAX)", tmp_path)
