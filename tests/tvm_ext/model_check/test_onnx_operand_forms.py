"""ONNX operands TVM needs at compile time (Slice/Squeeze/Unsqueeze axes, Q/DQ scales) and MaxPool's
indices output: refused by the model check in one line, where TVM used to fail inside lowering (exit 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.compile import compile
from tvm_ext.model_check import ErrorKind, ModelError, check_model

OPSET = 13


def _save(tmp_path: Path, nodes, inputs, outputs, initializers=()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def _float(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _int64(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def _slice_model(tmp_path: Path, starts_is_input: bool) -> Path:
    starts = np.array([1], np.int64)
    constants = [numpy_helper.from_array(np.array([3], np.int64), "ends"),
                 numpy_helper.from_array(np.array([1], np.int64), "axes")]
    inputs = [_float("x", [2, 4])]
    if starts_is_input:
        inputs.append(_int64("starts", [1]))
    else:
        constants.append(numpy_helper.from_array(starts, "starts"))
    # The Relu keeps the Slice's output from being a pure view of the input.
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"], name="slice"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    return _save(tmp_path, nodes, inputs, [_float("y", [2, 2])], constants)


def test_slice_with_starts_from_a_graph_input_is_refused_in_one_line(tmp_path):
    with pytest.raises(ModelError) as caught:
        check_model(_slice_model(tmp_path, starts_is_input=True))
    assert caught.value.kind is ErrorKind.UNSUPPORTED_OPERATOR
    assert str(caught.value) == (
        "model.onnx: unsupported operators: Slice (its starts must be constants (initializers or Constant nodes),"
        " not computed from a graph input) at layer 'slice'")


def test_slice_with_constant_starts_compiles(tmp_path):
    bundle = compile(_slice_model(tmp_path, starts_is_input=False), "lowpower", tmp_path / "out")
    assert bundle.selftest.passed


@pytest.mark.parametrize("op", ["Squeeze", "Unsqueeze"])
def test_axes_computed_from_a_graph_input_are_refused(tmp_path, op):
    out_shape = [2] if op == "Squeeze" else [1, 1, 2]
    nodes = [helper.make_node("Add", ["a", "one"], ["axes"], name="axes"),
             helper.make_node(op, ["x", "axes"], ["y"], name="op")]
    one = numpy_helper.from_array(np.array([0], np.int64), "one")
    path = _save(tmp_path, nodes, [_float("x", [1, 2]), _int64("a", [1])], [_float("y", out_shape)], [one])
    with pytest.raises(ModelError, match=rf"{op} \(its axes must be constants .*\) at layer 'op'$"):
        check_model(path)


def test_axes_computed_from_a_shape_are_constants(tmp_path):
    # Shape of a graph input is static: the axes derived from it are known at compile time.
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Slice", ["shape", "zero", "one"], ["first"], name="first"),
             helper.make_node("Sub", ["first", "one"], ["axes"], name="axes"),
             helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="op")]
    constants = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
                 numpy_helper.from_array(np.array([1], np.int64), "one")]
    check_model(_save(tmp_path, nodes, [_float("x", [1, 2])], [_float("y", [1, 1, 2])], constants))


def test_maxpool_with_indices_output_is_refused(tmp_path):
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "indices"], kernel_shape=[2, 2], name="pool")]
    outputs = [_float("y", [1, 1, 1, 1]), _int64("indices", [1, 1, 1, 1])]
    path = _save(tmp_path, nodes, [_float("x", [1, 1, 2, 2])], outputs)
    with pytest.raises(ModelError, match=r"MaxPool \(its Indices output \(the argmax\) is not converted by TVM "
                                         r"0\.27\) at layer 'pool'$"):
        check_model(path)


@pytest.mark.parametrize(("op", "operand", "index"), [("Reshape", "shape", 1), ("Resize", "scales", 2),
                                                     ("Pad", "pads", 1)])
def test_shape_operands_from_a_graph_input_are_refused_naming_the_operand(tmp_path, op, operand, index):
    names = ["x", "", "", ""][: index + 1]
    names[index] = "operand"
    nodes = [helper.make_node(op, names, ["y"], name="op")]
    inputs = [_float("x", [1, 1, 2, 2]), _int64("operand", [8]) if op == "Pad" else
              (_int64("operand", [2]) if op == "Reshape" else _float("operand", [4]))]
    path = _save(tmp_path, nodes, inputs, [_float("y", [2, 2] if op == "Reshape" else [1, 1, 4, 4])])
    with pytest.raises(ModelError, match=rf"{op} \(its {operand} must be constants .*\) at layer 'op'$"):
        check_model(path)
