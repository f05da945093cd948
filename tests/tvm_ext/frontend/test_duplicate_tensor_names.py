"""Tensors of the same name: TFLite and TFLite Micro tell tensors apart by index, and accept a file where two
tensors share a name; TVM's TFLite importer keys its tensors by name and once wired every reader of such a name
to the first tensor bound to it (only the self-test caught the wrong result). The import keys each tensor by a
name of its own now; the models here must compile and match TFLite Micro (int8) or LiteRT (float) exactly."""

from __future__ import annotations

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402

from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

_NONE = Options("AddOptions", {"FusedActivationFunction": ActivationFunctionType.NONE})


def inputs_of_one_name(dtype: str) -> Model:
    """``out = a - b`` where both inputs are named "x" (SUB: swapping or merging them changes the result)."""
    first, second, out = ((Quantization((0.05,), (3,)), Quantization((0.1,), (-7,)), Quantization((0.2,), (1,)))
                          if dtype == "int8" else (None, None, None))
    tensors = [Tensor("x", (2, 5), dtype, first), Tensor("x", (2, 5), dtype, second),
               Tensor("out", (2, 5), dtype, out)]
    return Model(tensors, [Operator("SUB", (0, 1), (2,), Options("SubOptions"))], (0, 1), (2,))


def intermediate_named_like_an_output() -> Model:
    """``h = relu(a)``, then ``h' = h - b`` also named "h", then ``out = h' + a``: the reader of the second "h"
    must read the SUB, not the RELU."""
    quant = (Quantization((0.05,), (3,)), Quantization((0.1,), (-7,)), Quantization((0.2,), (1,)),
             Quantization((0.3,), (-2,)))
    tensors = [Tensor("a", (3, 4), "int8", quant[0]), Tensor("b", (3, 4), "int8", quant[1]),
               Tensor("h", (3, 4), "int8", quant[0]), Tensor("h", (3, 4), "int8", quant[2]),
               Tensor("out", (3, 4), "int8", quant[3])]
    operators = [Operator("RELU", (0,), (2,)), Operator("SUB", (2, 1), (3,), Options("SubOptions")),
                 Operator("ADD", (3, 0), (4,), _NONE)]
    return Model(tensors, operators, (0, 1), (4,))


@pytest.mark.parametrize("model", (inputs_of_one_name("int8"), intermediate_named_like_an_output()),
                         ids=("inputs", "intermediate"))
def test_int8_tensors_of_one_name_are_bit_exact_with_tflite_micro(model, tmp_path):
    assert_bit_exact_with_tflite_micro(model, tmp_path)


def test_float_inputs_of_one_name_match_litert(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(build(inputs_of_one_name("float32")))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output


def test_every_tensor_gets_a_name_of_its_own():
    from tvm_ext.frontend.tflite_ops.tensor_names import unique_tensor_names

    names = ["x", "x", "", "y", "x#1", ""]  # a shared name, no names, and a name like a generated one
    keys = unique_tensor_names(names)
    assert len(set(keys)) == len(keys) and keys[3] == "y" and keys[4] == "x#1", keys
