"""The quantization of an ONNX graph's integer inputs and outputs, read from the nodes that define it.

ONNX types carry no quantization: an int8/uint8/int16 graph input gets its scale and zero point from the
node that reads it (DequantizeLinear, or a QLinear operator's operand), an integer graph output from the node
that writes it (QuantizeLinear, or a QLinear operator's result), when those are constants. An input its
readers quantize differently, or a float input (which the bundle quantizes itself), has none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from memory_planner.plan import QuantParams, QuantRounding

from .qdq_graph import QdqGraph

# Per quantized operator: each quantized operand's position -> the positions of its scale and zero point,
# and the positions of its result's scale and zero point (None: it has no quantized result).
_OPERANDS: dict[str, tuple[dict[int, tuple[int, int]], tuple[int, int] | None]] = {
    "DequantizeLinear": ({0: (1, 2)}, None),
    "QuantizeLinear": ({}, (1, 2)),
    "QLinearConv": ({0: (1, 2), 3: (4, 5)}, (6, 7)),
    "QLinearMatMul": ({0: (1, 2), 3: (4, 5)}, (6, 7)),
    "QGemm": ({0: (1, 2), 3: (4, 5)}, (7, 8)),
    "QLinearAdd": ({0: (1, 2), 3: (4, 5)}, (6, 7)),
    "QLinearMul": ({0: (1, 2), 3: (4, 5)}, (6, 7)),
    "QLinearAveragePool": ({0: (1, 2)}, (3, 4)),
    "QLinearGlobalAveragePool": ({0: (1, 2)}, (3, 4)),
    "QLinearSoftmax": ({0: (1, 2)}, (3, 4)),
    "QLinearLeakyRelu": ({0: (1, 2)}, (3, 4)),
}


@dataclass(frozen=True)
class GraphIoQuant:
    """The quantized graph inputs and outputs, by name."""

    inputs: dict[str, QuantParams]
    outputs: dict[str, QuantParams]


def onnx_io_quant(graph: onnx.GraphProto) -> GraphIoQuant:
    """The quantization of each graph input and output that has one (constant scale and zero point, the same
    for every reader of an input). ONNX's QuantizeLinear rounds half to even."""
    view = QdqGraph(graph)
    ranks = {value.name: len(value.type.tensor_type.shape.dim) for value in (*graph.input, *graph.output)}

    def read(node: onnx.NodeProto, scale_at: int, zero_point_at: int, rank: int) -> QuantParams | None:
        names = list(node.input) + [""] * 10
        scale = view.constants.get(names[scale_at])
        # An omitted zero point is 0 (ONNX's default).
        zero_point = (view.constants.get(names[zero_point_at]) if names[zero_point_at]
                      else None if scale is None else np.zeros(scale.shape, np.int32))
        if scale is None or zero_point is None or scale.size != zero_point.size or scale.size == 0:
            return None
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("block_size", 0):
            return None
        axis = None if scale.size == 1 else int(attrs.get("axis", 1)) % max(rank, 1)
        return QuantParams(tuple(float(s) for s in scale.reshape(-1)), tuple(int(z) for z in zero_point.reshape(-1)),
                           axis, QuantRounding.HALF_TO_EVEN)

    def agreed(found: list[QuantParams | None]) -> QuantParams | None:
        return found[0] if found and found[0] is not None and all(q == found[0] for q in found) else None

    def of_input(name: str) -> QuantParams | None:
        found = []
        for node in view.consumers.get(name, []):
            operands = _OPERANDS.get(node.op_type, ({}, None))[0]
            found += [read(node, *operands[k], ranks.get(name, 0)) if k in operands else None
                      for k, operand in enumerate(node.input) if operand == name]
        return agreed(found)

    def of_output(name: str) -> QuantParams | None:
        node = view.producer.get(name)
        result = None if node is None else _OPERANDS.get(node.op_type, ({}, None))[1]
        return None if result is None or node.output[0] != name else read(node, *result, ranks.get(name, 0))

    initializers = {init.name for init in graph.initializer}
    inputs = {i.name: of_input(i.name) for i in graph.input if i.name not in initializers}
    outputs = {o.name: of_output(o.name) for o in graph.output}
    return GraphIoQuant({n: q for n, q in inputs.items() if q is not None},
                        {n: q for n, q in outputs.items() if q is not None})
