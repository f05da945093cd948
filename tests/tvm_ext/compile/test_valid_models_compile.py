"""Valid models whose outputs have no storage of their own compile and pass their self-test.

An output that is a model input or a view of one (Identity, Flatten, Reshape of the input), a constant, or
the same tensor as another output (`Y` and `Identity(Y)`), gets a copy kernel: the bundle writes every output buffer.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tvm_ext.compile import compile as compile_model


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _value(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def output_and_its_identity() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="relu"), helper.make_node("Identity", ["Y"], ["Z"], name="id")]
    return _model(nodes, [_value("X", [1, 4])], [_value("Y", [1, 4]), _value("Z", [1, 4])])


def uint8_identity() -> onnx.ModelProto:
    nodes = [helper.make_node("Identity", ["X"], ["Y"], name="id")]
    return _model(nodes, [_value("X", [1, 4], TensorProto.UINT8)], [_value("Y", [1, 4], TensorProto.UINT8)])


def flatten_of_input() -> onnx.ModelProto:
    nodes = [helper.make_node("Flatten", ["X"], ["F"], name="flat")]
    return _model(nodes, [_value("X", [1, 2, 2, 3])], [_value("F", [1, 12])])


def reshape_of_input_beside_a_result() -> onnx.ModelProto:
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 4])
    nodes = [helper.make_node("Reshape", ["X", "shape"], ["R"], name="reshape"),
             helper.make_node("Relu", ["X"], ["A"], name="relu")]
    return _model(nodes, [_value("X", [2, 6])], [_value("R", [3, 4]), _value("A", [2, 6])], [shape])


def constant_output_beside_a_result() -> onnx.ModelProto:
    value = helper.make_tensor("value", TensorProto.FLOAT, [1, 4], [1.0, 2.0, 3.0, 4.0])
    nodes = [helper.make_node("Relu", ["X"], ["Y"], name="relu"),
             helper.make_node("Constant", [], ["C"], name="const", value=value)]
    return _model(nodes, [_value("X", [1, 4])], [_value("Y", [1, 4]), _value("C", [1, 4])])


@pytest.mark.parametrize(
    ("make", "copied_outputs"),
    [
        (output_and_its_identity, ["Z"]),
        (uint8_identity, ["Y"]),
        (flatten_of_input, ["F"]),
        (reshape_of_input_beside_a_result, ["R"]),
        (constant_output_beside_a_result, ["C"]),
    ],
    ids=["output and its identity", "uint8 identity", "flatten of input", "reshape of input", "constant output"],
)
def test_output_without_own_storage_compiles_and_passes(tmp_path: Path, make, copied_outputs) -> None:
    path = tmp_path / f"{make.__name__}.onnx"
    onnx.save(make(), path)
    bundle = compile_model(path, target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed
    assert len(bundle.selftest.max_errors) == len(bundle.plan.outputs)
    entry = (tmp_path / "out" / f"{bundle.plan.model}_model.c").read_text()
    for name in copied_outputs:
        assert f"{name} (output copy)" in entry, entry
