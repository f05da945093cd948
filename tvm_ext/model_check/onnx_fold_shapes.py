"""Shape arithmetic of an ONNX graph computed at compile time, before import.

Exporters write sizes a model computes from its tensors' shapes: PyTorch's ``torch.chunk`` becomes Shape ->
Gather -> Add -> Div -> Mul -> Slice, a ``view`` a Reshape whose shape is a Concat of Gathers of a Shape, the pads
of ``F.pad`` a chain of constants (ConstantOfShape, Concat, Reshape, Slice, Transpose, Reshape, Cast) that reads
no shape at all, which TVM's importer leaves a Pad with dynamic pads (refused). Every
shape in a model we compile is static (the model check makes sure of it), so these values are constants; but
TVM's importer folds only some of them, and a Slice whose ends it did not fold gets a tensor without a static
shape, which the passes after it cannot handle. This rewrite evaluates every such node once, in graph order:
a Shape (or Size) of a tensor whose shape ONNX's shape inference knows or of a constant (tf2onnx writes Shape of
an initializer -> Gather -> ReduceProd -> Concat for a Reshape's shape), and an operator of ``FOLDED`` whose
inputs are all constants (initializers, Constant nodes, or values folded before), whose result is small
(``LARGEST_FOLDED`` elements at most: shapes, indices, scales; never weights) and whose node writes no graph
output. Each folded value becomes an initializer under its tensor's name, computed by ONNX's reference
implementation (``onnx.reference``), and the folded nodes are removed; nodes the rest of the graph no longer
reads stay out.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

# Operators of shape and index arithmetic: integer or small float computations ONNX defines exactly.
FOLDED = frozenset({"Add", "Cast", "Ceil", "Concat", "ConstantOfShape", "Div", "Equal", "Expand", "Floor",
                    "Gather", "Identity", "Max", "Min", "Mod", "Mul", "Neg", "Range", "ReduceProd", "Reshape",
                    "Slice", "Squeeze", "Sub", "Transpose", "Unsqueeze", "Where"})
LARGEST_FOLDED = 1024  # elements of a folded value
# Of FOLDED, the operators whose result has their inputs' broadcast shape.
BROADCAST = frozenset({"Add", "Div", "Equal", "Max", "Min", "Mod", "Mul", "Sub", "Where"})


def static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape where ONNX's shape inference (or the graph) gives every dimension as a number."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the model check reports an inconsistent model; fold nothing then
        inferred = model
    shapes = {}
    graph = inferred.graph
    for info in (*graph.input, *graph.value_info, *graph.output):
        dims = info.type.tensor_type.shape.dim
        if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape") \
                and all(d.HasField("dim_value") for d in dims):
            shapes[info.name] = tuple(int(d.dim_value) for d in dims)
    return shapes


def _shape_of(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    """What Shape or Size computes for an input of ``shape``."""
    if node.op_type == "Size":
        return np.array(int(np.prod(shape)), np.int64)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return np.array(shape[slice(start, end)], np.int64)


def _evaluate(node: onnx.NodeProto, values: list[np.ndarray | None], opset: list) -> list[np.ndarray]:
    """The outputs of ``node`` on constant inputs (None for an omitted one), by ONNX's reference implementation."""
    names = [name for name in node.input]
    initializers = [numpy_helper.from_array(value, name) for name, value in zip(names, values) if name]
    graph = helper.make_graph([node], "fold", [], [helper.make_value_info(name, onnx.TypeProto()) for name in
                                                   node.output], initializers)
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=opset)).run(None, {})


def _too_large(node: onnx.NodeProto, values: list[np.ndarray | None]) -> bool:
    """Whether folding ``node`` on the constant ``values`` (None for an omitted input) might read or compute more
    than LARGEST_FOLDED elements, judged before computing anything: an input that large (weights), or the result's
    size from the inputs' shapes, or from their values where they give it (ConstantOfShape, Expand, Range: a model
    may ask for 2**32 elements). Other results are their inputs' broadcast, a Gather's at most the indices times
    the data, any other one at most the inputs' elements together."""
    present = [np.asarray(v) for v in values if v is not None]
    if any(v.size > LARGEST_FOLDED for v in present):
        return True
    try:
        if node.op_type == "ConstantOfShape":
            size = math.prod(int(d) for d in present[0].reshape(-1)) if present else 1
        elif node.op_type == "Expand":
            target = tuple(int(d) for d in present[1].reshape(-1))
            size = math.prod(np.broadcast_shapes(present[0].shape, target))
        elif node.op_type == "Range":
            start, limit, delta = (float(v) for v in present)
            size = max(math.ceil((limit - start) / delta), 0)
        elif node.op_type == "Gather":
            size = present[0].size * max(present[1].size, 1)
        elif node.op_type in BROADCAST:
            size = math.prod(np.broadcast_shapes(*(v.shape for v in present)))
        else:
            size = sum(v.size for v in present)
    except (ValueError, IndexError, OverflowError, ZeroDivisionError):  # a node ONNX would reject: not folded
        return True
    return size > LARGEST_FOLDED


def fold_shape_arithmetic(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its shape arithmetic computed (a copy; ``model`` itself when nothing folds), round after round:
    a size folded into a Reshape's shape gives its output a static shape, whose Shape the next round folds (tf2onnx's
    attention writes Reshape -> Transpose -> Shape -> Gather -> ReduceProd -> Concat -> Reshape, head after head)."""
    while True:
        folded = _fold_once(model)
        if folded is model:
            return model
        model = folded


def _fold_once(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with the shape arithmetic its static shapes compute now folded (a copy; ``model`` itself when
    nothing folds)."""
    graph = model.graph
    known: dict[str, np.ndarray] = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    shapes = static_shapes(model)
    outputs = {o.name for o in graph.output}
    folded: list[onnx.NodeProto] = []
    for node in graph.node:
        if any(name in outputs for name in node.output) or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Constant":
            if node.attribute and node.attribute[0].name == "value":
                known[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
            continue
        if node.op_type in ("Shape", "Size") and node.input[0] in shapes:
            results = [_shape_of(node, shapes[node.input[0]])]
        elif node.op_type in ("Shape", "Size") and node.input[0] in known:  # of a constant: its array's shape
            results = [_shape_of(node, tuple(known[node.input[0]].shape))]
        elif node.op_type in FOLDED and all(not name or name in known for name in node.input):
            values = [known.get(name) for name in node.input]
            if _too_large(node, values):
                continue
            results = _evaluate(node, values, list(model.opset_import))
        else:
            continue
        if any(np.asarray(r).size > LARGEST_FOLDED for r in results):
            continue
        known.update((name, np.asarray(r)) for name, r in zip(node.output, results))
        folded.append(node)
    if not folded:
        return model
    removed = {id(node) for node in folded}
    kept = [node for node in graph.node if id(node) not in removed]
    read = {name for node in kept for name in node.input} | outputs
    initializer_names = {init.name for init in graph.initializer}
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    result.graph.node.extend(kept)
    result.graph.initializer.extend(numpy_helper.from_array(known[name], name) for node in folded
                                    for name in node.output if name in read and name not in initializer_names)
    return result
