"""An ONNX integer Div by a model input compiles: the self-test's inputs never divide by zero (a zero
divisor crashed the reference runtime, and the compile was refused)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tvm_ext.compile import compile
from tvm_ext.frontend import TensorSpec
from tvm_ext.reference.outputs import test_inputs as make_test_inputs


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint32"])
def test_integer_inputs_for_a_dividing_model_are_never_zero_and_deterministic(dtype):
    specs = [TensorSpec("x", (4096,), dtype)]
    values = make_test_inputs(specs, nonzero_integers=True)[0]
    assert values.dtype == np.dtype(dtype) and not (values == 0).any()
    assert np.array_equal(values, make_test_inputs(specs, nonzero_integers=True)[0])


@pytest.mark.parametrize("nonzero_integers", [False, True])
def test_eight_bit_inputs_still_cover_the_type_range(nonzero_integers):
    values = make_test_inputs([TensorSpec("x", (65536,), "int8")], nonzero_integers=nonzero_integers)[0]
    assert values.min() == -128 and values.max() == 127


def test_other_models_keep_zero_in_their_integer_inputs():
    """Zero (uint8's minimum, a common zero point) stays in the inputs of models that divide by nothing."""
    assert (make_test_inputs([TensorSpec("x", (4096,), "uint8")])[0] == 0).any()


@pytest.mark.parametrize("elem_type", [TensorProto.INT32, TensorProto.INT8])
def test_integer_div_by_an_input_compiles_and_matches_onnxruntime(tmp_path, elem_type):
    node = helper.make_node("Div", ["a", "b"], ["y"], name="div")
    values = [helper.make_tensor_value_info(n, elem_type, [3, 4]) for n in ("a", "b", "y")]
    graph = helper.make_graph([node], "g", values[:2], values[2:])
    path = tmp_path / "div.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output
