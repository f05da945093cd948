"""ONNX QDQ node groups -> QLinearConv and QLinearMatMul, as onnxruntime fuses them before running a QDQ model.

onnxruntime's quantization tools (``quantize_static`` with ``QuantFormat.QDQ``) write a quantized model as
float operators between DequantizeLinear and QuantizeLinear nodes; onnxruntime runs ``DQ(x), DQ(w)[, DQ(b)]
-> Conv -> Q`` as one QLinearConv and ``DQ(a), DQ(b) -> MatMul -> Q`` as one QLinearMatMul (integer
accumulation, float32 requantization), and drops a DequantizeLinear / QuantizeLinear pair of the same
parameters around an operator that only moves elements. This rewrite does the same on the ONNX graph
before import, so those groups take the integer path (``tvm_ext.frontend.onnx_ops.qlinear_ops``) and compute what
onnxruntime computes.

A group is fused only when every scale and zero point is a constant (an initializer or a Constant node) and
given explicitly, the activations are quantized per tensor, a weight per output channel at most (Conv: axis
0; MatMul: per column of a 2-D B), a bias is int32 with zero points of 0, and the float result's only
consumer is the QuantizeLinear (and it is no graph output). The fused node takes the float node's name; the
QuantizeLinear's output keeps its name; DequantizeLinear nodes left without consumers are removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

# Operators that only move elements: between a DequantizeLinear and a QuantizeLinear of the same parameters
# they run on the quantized tensor itself.
DATA_MOVEMENT = ("Flatten", "Reshape", "Squeeze", "Transpose", "Unsqueeze")


@dataclass(frozen=True)
class _Quantized:
    """A DequantizeLinear's inputs: the quantized tensor, its scale and zero point (names) and their values."""

    tensor: str
    scale: str
    zero_point: str
    scale_value: np.ndarray
    zero_point_value: np.ndarray
    axis: int


class _Graph:
    """The producers, consumers and constants of an ONNX graph's tensors."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in graph.output}
        self.constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def dequantized(self, name: str) -> _Quantized | None:
        """The inputs of the DequantizeLinear producing ``name`` when its scale and zero point are constants."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or len(node.input) != 3:
            return None
        return self._quantization(node, node.input[0])

    def quantized_by_only_consumer(self, name: str) -> tuple[onnx.NodeProto, _Quantized] | None:
        """The QuantizeLinear that is the only consumer of ``name`` (no graph output), with its parameters."""
        users = self.consumers.get(name, [])
        if name in self.outputs or len(users) != 1 or users[0].op_type != "QuantizeLinear" or len(users[0].input) != 3:
            return None
        quantization = self._quantization(users[0], users[0].output[0])
        return None if quantization is None else (users[0], quantization)

    def _quantization(self, node: onnx.NodeProto, tensor: str) -> _Quantized | None:
        scale, zero_point = node.input[1], node.input[2]
        if scale not in self.constants or zero_point not in self.constants:
            return None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("block_size", 0):
            return None
        return _Quantized(tensor, scale, zero_point, self.constants[scale], self.constants[zero_point],
                          int(attrs.get("axis", 1)))


def _per_tensor(q: _Quantized) -> bool:
    return q.scale_value.size == 1 and q.zero_point_value.size == 1


def _per_channel_on(q: _Quantized, axis: int, rank: int) -> bool:
    """Per tensor, or per channel along ``axis`` of a tensor of rank ``rank``."""
    return _per_tensor(q) or (q.scale_value.ndim == 1 and q.axis % rank == axis)


def _fused(graph: _Graph, node: onnx.NodeProto) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """(the QLinear node replacing ``node``, the QuantizeLinear it absorbs), or None when ``node`` is no
    fusable group."""
    if node.op_type not in ("Conv", "MatMul", *DATA_MOVEMENT) or len(node.output) != 1:
        return None
    quantized = graph.quantized_by_only_consumer(node.output[0])
    if node.op_type in DATA_MOVEMENT:
        return _on_quantized(graph, node, quantized)
    data, weight = (graph.dequantized(name) for name in node.input[:2])
    if quantized is None or data is None or weight is None or weight.tensor not in graph.constants:
        return None
    quantize, out = quantized
    if not (_per_tensor(data) and _per_tensor(out)):
        return None
    rank = graph.constants[weight.tensor].ndim
    operands = [data.tensor, data.scale, data.zero_point, weight.tensor, weight.scale, weight.zero_point,
                out.scale, out.zero_point]
    if node.op_type == "MatMul":
        if not _per_channel_on(weight, rank - 1, rank) or (rank != 2 and not _per_tensor(weight)):
            return None
        return helper.make_node("QLinearMatMul", operands, list(quantize.output), name=node.name), quantize
    if not _per_channel_on(weight, 0, rank):
        return None
    if len(node.input) > 2 and node.input[2]:
        bias = graph.dequantized(node.input[2])
        if bias is None or bias.tensor not in graph.constants or graph.constants[bias.tensor].dtype != np.int32 \
                or np.any(bias.zero_point_value != 0):
            return None
        operands.append(bias.tensor)
    fused = helper.make_node("QLinearConv", operands, list(quantize.output), name=node.name)
    fused.attribute.extend(node.attribute)
    return fused, quantize


def _on_quantized(graph: _Graph, node: onnx.NodeProto,
                  quantized: tuple[onnx.NodeProto, _Quantized] | None) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """``node`` (data movement) on the quantized tensor when its DequantizeLinear and QuantizeLinear have the
    same per-tensor parameters: q(dq(x)) is x for such parameters, and onnxruntime drops the pair so too."""
    data = graph.dequantized(node.input[0])
    if quantized is None or data is None:
        return None
    quantize, out = quantized
    same = (_per_tensor(data) and _per_tensor(out) and data.zero_point_value.dtype == out.zero_point_value.dtype
            and np.array_equal(data.scale_value.reshape(-1), out.scale_value.reshape(-1))
            and np.array_equal(data.zero_point_value.reshape(-1), out.zero_point_value.reshape(-1)))
    if not same:
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.input[0] = data.tensor
    moved.output[0] = quantize.output[0]
    return moved, quantize


def fuse_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its fusable QDQ groups as QLinearConv / QLinearMatMul (a copy; ``model`` itself when
    there is none)."""
    graph = _Graph(model.graph)
    replacements, absorbed = {}, set()
    for node in model.graph.node:
        fused = _fused(graph, node)
        if fused is not None:
            replacements[id(node)] = fused[0]
            absorbed.add(id(fused[1]))
    if not replacements:
        return model
    result = onnx.ModelProto()
    result.CopyFrom(model)
    nodes = [replacements.get(id(n), n) for n in model.graph.node if id(n) not in absorbed]
    while True:  # drop the DequantizeLinear nodes no node reads any more
        read = {name for n in nodes for name in n.input} | {o.name for o in model.graph.output}
        kept = [n for n in nodes if n.op_type != "DequantizeLinear" or n.output[0] in read]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del result.graph.node[:]
    result.graph.node.extend(nodes)
    return result
