"""The facts of an ONNX graph the QDQ rewrites read: each tensor's producer and consumers, the constants, and the
quantization parameters of its QuantizeLinear and DequantizeLinear nodes.

A read-only view of one ``onnx.GraphProto``; a rewrite that changes the graph builds a new view.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper


@dataclass(frozen=True)
class Quantized:
    """A QuantizeLinear's or DequantizeLinear's quantization: the quantized tensor (the DequantizeLinear's input,
    the QuantizeLinear's output), its scale and zero point (tensor names) and their constant values, and the axis."""

    tensor: str
    scale: str
    zero_point: str
    scale_value: np.ndarray
    zero_point_value: np.ndarray
    axis: int

    @property
    def per_tensor(self) -> bool:
        return self.scale_value.size == 1 and self.zero_point_value.size == 1

    @property
    def dtype(self) -> np.dtype:
        """The quantized tensor's element type (its zero point's)."""
        return self.zero_point_value.dtype

    def same_parameters(self, other: Quantized) -> bool:
        """Whether both quantize per tensor with the same type, scale and zero point."""
        return (self.per_tensor and other.per_tensor and self.dtype == other.dtype
                and np.array_equal(self.scale_value.reshape(-1), other.scale_value.reshape(-1))
                and np.array_equal(self.zero_point_value.reshape(-1), other.zero_point_value.reshape(-1)))

    def on_axis(self, axis: int, rank: int) -> bool:
        """Per tensor, or per channel along ``axis`` of a tensor of rank ``rank``."""
        return self.per_tensor or (self.scale_value.ndim == 1 and self.axis % rank == axis)


class QdqGraph:
    """The producers, consumers and constants of an ONNX graph's tensors."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.producer = {out: node for node in graph.node for out in node.output if out}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in graph.output}
        self.initializers = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
        self.constants = dict(self.initializers)
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def edges(self, name: str) -> int:
        """How many node inputs read ``name`` (a node reading it twice counts twice)."""
        return len(self.consumers.get(name, []))

    def only_consumer(self, name: str) -> onnx.NodeProto | None:
        """The one node that reads ``name`` (once), when it is also no graph output; else None."""
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def dequantized(self, name: str) -> Quantized | None:
        """The quantization of the DequantizeLinear producing ``name``, when its scale and zero point are constants."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or len(node.input) != 3:
            return None
        return self.quantization(node)

    def quantization(self, node: onnx.NodeProto) -> Quantized | None:
        """The quantization of a QuantizeLinear or DequantizeLinear node with a constant scale and zero point (and
        no blocks); None otherwise."""
        if len(node.input) != 3:
            return None
        scale, zero_point = node.input[1], node.input[2]
        if scale not in self.constants or zero_point not in self.constants:
            return None
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("block_size", 0):
            return None
        tensor = node.input[0] if node.op_type == "DequantizeLinear" else node.output[0]
        return Quantized(tensor, scale, zero_point, self.constants[scale], self.constants[zero_point],
                         int(attrs.get("axis", 1)))

    def quantized_by_only_consumer(self, name: str) -> tuple[onnx.NodeProto, Quantized] | None:
        """The QuantizeLinear that is the only consumer of ``name`` (no graph output), with its quantization."""
        user = self.only_consumer(name)
        if user is None or user.op_type != "QuantizeLinear":
            return None
        quantization = self.quantization(user)
        return None if quantization is None else (user, quantization)
