"""SOFTMAX with beta other than 1 (TFLite's exp(beta * (x - max)), normalised): TVM's converter dropped beta,
so such a model computed softmax(x) and only the self-test caught it (exit 3). The int8 and 16x8 kernels take
beta into their input rescale, bit-exact with TFLite Micro; a float one matches LiteRT."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

BETAS = (0.3, 2.5, 1e-3)  # below and above one, and small enough that every row is nearly flat
# (input, output) quantizations TFLite Micro requires of each SOFTMAX form, and the operator's version.
FORMS = {
    "int8": (Quantization((0.1,), (3,)), Quantization((1 / 256,), (-128,)), 1),
    "int16": (Quantization((0.0007,), (0,)), Quantization((1 / 32768,), (0,)), 3),
}


def softmax_model(dtype: str) -> Model:
    """One SOFTMAX per beta of BETAS, each with its own input and output of ``dtype``."""
    quant_in, quant_out, version = FORMS.get(dtype, (None, None, 1))
    tensors, operators = [], []
    for index, beta in enumerate(BETAS):
        tensors += [Tensor(f"case{index}_in", (2, 9), dtype, quant_in),
                    Tensor(f"case{index}_out", (2, 9), dtype, quant_out)]
        operators.append(Operator("SOFTMAX", (2 * index,), (2 * index + 1,),
                                  Options("SoftmaxOptions", {"Beta": beta}), version=version))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


@pytest.mark.parametrize("dtype", sorted(FORMS))
def test_softmax_with_beta_is_bit_exact_with_tflite_micro(dtype, tmp_path):
    assert_bit_exact_with_tflite_micro(softmax_model(dtype), tmp_path)


def test_float_softmax_with_beta_matches_litert(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(build(softmax_model("float32")))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
