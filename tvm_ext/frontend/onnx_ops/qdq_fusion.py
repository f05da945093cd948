"""ONNX QDQ node groups -> the QLinear operators onnxruntime runs them as, before import.

onnxruntime's quantization tools (``quantize_static`` with ``QuantFormat.QDQ``) write a quantized model as
float operators between DequantizeLinear and QuantizeLinear nodes. onnxruntime's CPU provider does not run
most of them in float: after making int8 pairs uint8 where it can (``qdq_unsigned``), its
QDQSelectorActionTransformer replaces each node group ``DQ(inputs) -> op -> [Relu | Clip] -> Q`` it selects
by one integer operator, and keeps the others as written. This rewrite selects the same groups, by the same
rules, and writes the same operators, so that our kernels compute what onnxruntime computes:

- Conv -> QLinearConv, MatMul -> QLinearMatMul, Gemm -> com.microsoft QGemm: integer accumulation, float32
  requantization. (onnxruntime leaves a Conv or MatMul with int8 activations in float on x86-64; its float
  convolution of the dequantized values rounds to the same integers as the integer one, but where its float
  sum lies within a float rounding of a tie. Ours is the integer one.) A Conv with a bias only when the bias
  scale is x_scale * w_scale within onnxruntime's tolerance (``_bias_scale_is_input_times_weight_scale``);
  a Gemm whatever its bias scale, as onnxruntime.
- Add, Mul -> com.microsoft QLinearAdd, QLinearMul, when both inputs and the output have one type: their
  own float arithmetic (``tvm_ext.kernels.onnxruntime_elementwise``). An Add or Mul of mixed types stays
  float: onnxruntime's DequantizeLinear, float Add, QuantizeLinear (rounding x / scale half to even).
- AveragePool, GlobalAveragePool -> com.microsoft QLinearAveragePool, QLinearGlobalAveragePool, when input
  and output have one type (``tvm_ext.kernels.onnxruntime_pool``).
- Softmax -> com.microsoft QLinearSoftmax, when input and output have one type: onnxruntime's float32 table of
  exponentials (``tvm_ext.kernels.onnxruntime_softmax``), not a float softmax quantized; its ``opset`` attribute
  the model's, as onnxruntime writes it (the default axis differs before opset 13).
- LeakyRelu -> com.microsoft QLinearLeakyRelu, when input and output are int8: onnxruntime's table of each input's
  float result (dequantized, ``v >= 0 ? v : alpha * v``, quantized), one lookup per element
  (``tvm_ext.kernels.onnxruntime_lookup``), which a convolution before it takes as its epilogue.
- Concat -> com.microsoft QLinearConcat when its inputs and output have one type: each input requantized as
  DequantizeLinear then QuantizeLinear would (the numbers of the float path, without its float tensors).
- A DequantizeLinear / QuantizeLinear pair of the same type, scale and zero point around an operator that
  only moves elements (Reshape, Transpose, ..., MaxPool, nearest Resize; Split with one such QuantizeLinear per
  output) is dropped: the operator runs on the quantized tensor.

A group is selected only when each of the operator's inputs (the first for one-input operators) comes from a
DequantizeLinear whose scale and zero point are constants, each of its outputs goes to a QuantizeLinear and
nowhere else (a Relu or Clip between them only when the QuantizeLinear's range makes it redundant, as
onnxruntime checks), and no output is a graph output. The fused node takes the operator's name; the
QuantizeLinear's output keeps its name; DequantizeLinear nodes no node reads any more are removed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from .qdq_graph import QdqGraph, Quantized

MS_DOMAIN = "com.microsoft"
# Operators that only move elements: between a DequantizeLinear and a QuantizeLinear of the same parameters
# they run on the quantized tensor itself (onnxruntime's DropQDQNodesRules; MaxPool also needs a positive scale).
DATA_MOVEMENT = ("Expand", "Flatten", "Gather", "GatherElements", "Reshape", "Slice", "Squeeze", "Tile",
                 "Transpose", "Unsqueeze", "MaxPool", "Resize")
_ALL_INPUTS = -1  # a group's operator reads a DequantizeLinear on every input it has
# onnxruntime's tolerance on a Conv bias scale against x_scale * w_scale (float32 constants of its selector).
_BIAS_SCALE_RTOL = np.float32(1e-2)
_BIAS_SCALE_ATOL = np.float32(1e-6)


@dataclass(frozen=True)
class _Group:
    """A node with the quantizations of its dequantized inputs, the QuantizeLinear of its output and that
    quantization, and the redundant Relu or Clip between them (or None)."""

    node: onnx.NodeProto
    inputs: tuple[Quantized, ...]
    quantize: onnx.NodeProto
    output: Quantized
    clip: onnx.NodeProto | None


def _clip_is_redundant(graph: QdqGraph, clip: onnx.NodeProto, output: Quantized) -> bool:
    """Whether quantizing to ``output`` already clamps as ``clip`` (a Relu or Clip) does (onnxruntime's
    IsClipMadeRedundantByQ: a scalar zero point; Relu when it is the type's minimum; Clip when its bounds,
    quantized, cover the type's range)."""
    if output.scale_value.ndim != 0 or output.zero_point_value.ndim != 0:
        return False
    info = np.iinfo(output.dtype)
    zero_point = int(output.zero_point_value)
    if clip.op_type == "Relu":
        return zero_point == info.min
    bounds = [graph.constants.get(name) for name in clip.input[1:3]]
    if len(bounds) != 2 or any(b is None or b.size != 1 for b in bounds):
        return False  # onnxruntime reads Clip's bounds from constant inputs only (opset 11 and later)
    scale = np.float32(output.scale_value)
    low, high = (int(np.rint(np.float32(b.reshape(-1)[0]) / scale)) + zero_point for b in bounds)
    return low <= info.min and high >= info.max


def _group(graph: QdqGraph, node: onnx.NodeProto, dequantized_inputs: int) -> _Group | None:
    """The node group onnxruntime selects around ``node`` whose first ``dequantized_inputs`` inputs (all, for
    _ALL_INPUTS) come from DequantizeLinear nodes, and only those; None when it selects none."""
    present = [name for name in node.input if name]
    wanted = len(present) if dequantized_inputs == _ALL_INPUTS else dequantized_inputs
    if len(node.output) != 1 or len(present) < wanted:
        return None
    from_dequantize = [graph.producer.get(name) for name in present]
    if sum(p is not None and p.op_type == "DequantizeLinear" for p in from_dequantize) != wanted:
        return None
    inputs = tuple(graph.dequantized(name) for name in present[:wanted])
    if any(q is None for q in inputs):
        return None
    end, clip = node, None
    user = graph.only_consumer(node.output[0])
    if user is not None and user.op_type in ("Relu", "Clip") and graph.only_consumer(user.output[0]) is not None:
        end, clip = user, user
    quantized = graph.quantized_by_only_consumer(end.output[0])
    if quantized is None or not quantized[1].per_tensor:
        return None
    quantize, output = quantized
    if clip is not None and not _clip_is_redundant(graph, clip, output):
        return None
    return _Group(node, inputs, quantize, output, clip)


def _operands(group: _Group, *per_input: int) -> list[str]:
    """The QLinear operator's inputs: (tensor, scale, zero point) of each input named by position, then the
    output's scale and zero point."""
    names = []
    for index in per_input:
        q = group.inputs[index]
        names += [q.tensor, q.scale, q.zero_point]
    return [*names, group.output.scale, group.output.zero_point]


def _fused_node(op_type: str, group: _Group, inputs: list[str], domain: str = "",
                attributes: list[onnx.AttributeProto] | None = None) -> onnx.NodeProto:
    node = helper.make_node(op_type, inputs, list(group.quantize.output), name=group.node.name, domain=domain)
    node.attribute.extend(attributes if attributes is not None else group.node.attribute)
    return node


def _same_types(group: _Group) -> bool:
    return len({q.dtype for q in (*group.inputs, group.output)}) == 1


def _constant_weight(graph: QdqGraph, group: _Group, channel_axis: int) -> bool:
    """Whether the group's second input is a constant weight quantized per tensor or along ``channel_axis``."""
    weight = group.inputs[1]
    return weight.tensor in graph.constants and weight.on_axis(
        channel_axis % graph.constants[weight.tensor].ndim, graph.constants[weight.tensor].ndim)


def _integer_bias(graph: QdqGraph, group: _Group) -> bool:
    """Whether the group's third input (a bias) is an int32 constant with zero points of 0."""
    bias = group.inputs[2]
    return (bias.tensor in graph.constants and graph.constants[bias.tensor].dtype == np.int32
            and not np.any(bias.zero_point_value))


def _bias_scale_is_input_times_weight_scale(graph: QdqGraph, group: _Group) -> bool:
    """Whether the bias DequantizeLinear's scale is the input's scale times the weight's, per output channel, as
    onnxruntime's ConvNodeGroupSelector requires before it fuses (microsoft/onnxruntime#28229, in 1.32):
    float32 scales, an input scale of rank 0 or 1, bias and weight scales of one element or one per bias element,
    and for each channel ``|b_scale - x_scale * w_scale| <= 1e-6 + 1e-2 * |x_scale * w_scale|``, evaluated in
    float32 (so NaN never matches and an infinite product matches any finite bias scale). QLinearConv takes the
    bias in units of ``x_scale * w_scale``; the bias DequantizeLinear's scale is dropped by the fusion."""
    x, w, b = group.inputs
    channels = graph.constants[b.tensor].size
    if any(q.scale_value.dtype != np.float32 for q in group.inputs) or x.scale_value.ndim > 1 \
            or any(q.scale_value.size not in (1, channels) for q in (w, b)):
        return False
    expected = x.scale_value.reshape(()) * w.scale_value.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.abs(b.scale_value.reshape(-1) - expected)
        return bool(np.all(distance <= _BIAS_SCALE_ATOL + _BIAS_SCALE_RTOL * np.abs(expected)))


def _conv(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    group = _group(graph, node, _ALL_INPUTS)
    if group is None or len(group.inputs) < 2 or not group.inputs[0].per_tensor \
            or not _constant_weight(graph, group, 0) or (len(group.inputs) == 3 and not (
                _integer_bias(graph, group) and _bias_scale_is_input_times_weight_scale(graph, group))):
        return None
    inputs = _operands(group, 0, 1)
    if len(group.inputs) == 3:
        inputs.append(group.inputs[2].tensor)
    return _fused_node("QLinearConv", group, inputs)


def _matmul(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    group = _group(graph, node, 2)
    if group is None or not group.inputs[0].per_tensor or not _constant_weight(graph, group, -1) or (
            graph.constants[group.inputs[1].tensor].ndim != 2 and not group.inputs[1].per_tensor):
        return None
    return _fused_node("QLinearMatMul", group, _operands(group, 0, 1))


def _gemm(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """Gemm -> QGemm (onnxruntime's GemmSelector: beta 1 with an int32 bias); ours takes no transposed A and
    alpha 1 only."""
    group = _group(graph, node, _ALL_INPUTS)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if group is None or len(group.inputs) < 2 or attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 \
            or not group.inputs[0].per_tensor or (len(group.inputs) == 3 and (
                attrs.get("beta", 1.0) != 1.0 or not _integer_bias(graph, group))):
        return None
    if not _constant_weight(graph, group, 0 if attrs.get("transB", 0) else 1):
        return None
    a, b = group.inputs[:2]
    inputs = [a.tensor, a.scale, a.zero_point, b.tensor, b.scale, b.zero_point,
              group.inputs[2].tensor if len(group.inputs) == 3 else "", group.output.scale, group.output.zero_point]
    return _fused_node("QGemm", group, inputs, MS_DOMAIN,
                       [helper.make_attribute("transB", int(attrs.get("transB", 0)))])


def _binary(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """Add, Mul -> QLinearAdd, QLinearMul (onnxruntime's BinarySelector: inputs and output of one type)."""
    group = _group(graph, node, 2)
    if group is None or not all(q.per_tensor for q in group.inputs) or not _same_types(group):
        return None
    return _fused_node(f"QLinear{node.op_type}", group, _operands(group, 0, 1), MS_DOMAIN, [])


def _pool(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """AveragePool, GlobalAveragePool -> their QLinear operators (onnxruntime's UnarySelector: input and output
    of one type)."""
    group = _group(graph, node, 1)
    if group is None or not group.inputs[0].per_tensor or not _same_types(group):
        return None
    return _fused_node(f"QLinear{node.op_type}", group, _operands(group, 0), MS_DOMAIN)


def _softmax(graph: QdqGraph, node: onnx.NodeProto, opset: int) -> onnx.NodeProto | None:
    """Softmax -> QLinearSoftmax (onnxruntime's UnarySelector: input and output of one type), with the model's
    opset."""
    group = _group(graph, node, 1)
    if group is None or not group.inputs[0].per_tensor or not _same_types(group):
        return None
    return _fused_node("QLinearSoftmax", group, _operands(group, 0), MS_DOMAIN,
                       [*node.attribute, helper.make_attribute("opset", opset)])


def _leaky_relu(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """LeakyRelu -> QLinearLeakyRelu (onnxruntime's UnarySelector: input and output of one type; its kernel a
    table of the 256 inputs' float results), for int8 only: a uint8 one stays as written, the same numbers in float
    (the table holds each input's float result)."""
    group = _group(graph, node, 1)
    if group is None or group.clip is not None or not group.inputs[0].per_tensor or not _same_types(group) \
            or group.output.dtype != np.int8:
        return None
    return _fused_node("QLinearLeakyRelu", group, _operands(group, 0), MS_DOMAIN)


def _data_movement(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """``node`` on the quantized tensor when its DequantizeLinear and QuantizeLinear have the same per-tensor
    parameters: q(dq(x)) is x for such parameters, and onnxruntime drops the pair so too (MaxPool only for a
    positive scale; Resize ours only in nearest mode, which picks elements)."""
    group = _group(graph, node, 1)
    if group is None or group.clip is not None or not group.inputs[0].same_parameters(group.output):
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "MaxPool" and not np.float32(group.output.scale_value) > 0:
        return None
    if node.op_type == "Resize" and attrs.get("mode", b"nearest") not in (b"nearest", "nearest"):
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.input[0] = group.inputs[0].tensor
    moved.output[0] = group.quantize.output[0]
    return moved


def _concat(graph: QdqGraph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """Concat -> QLinearConcat (onnxruntime's VariadicSelector: inputs and output of one type), each input
    requantized to the output's parameters as DequantizeLinear then QuantizeLinear would."""
    group = _group(graph, node, _ALL_INPUTS)
    if group is None or not all(q.per_tensor for q in group.inputs) or not _same_types(group):
        return None
    inputs = [group.output.scale, group.output.zero_point]
    for q in group.inputs:
        inputs += [q.tensor, q.scale, q.zero_point]
    return _fused_node("QLinearConcat", group, inputs, MS_DOMAIN)


def _split(graph: QdqGraph, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    """Split on the quantized tensor, when each output goes to a QuantizeLinear of the input's type, scale and
    zero point and nowhere else (onnxruntime's SplitSelector with equal parameters); the QuantizeLinear nodes to
    drop with it."""
    source = graph.dequantized(node.input[0]) if node.input else None
    if source is None or not source.per_tensor or graph.producer.get(node.input[0]) is None:
        return None
    quantizes = [graph.quantized_by_only_consumer(name) for name in node.output]
    if any(q is None or not q[1].same_parameters(source) for q in quantizes):
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.input[0] = source.tensor
    for index, (quantize, _) in enumerate(quantizes):
        moved.output[index] = quantize.output[0]
    return [moved, *(quantize for quantize, _ in quantizes)]


_FUSIONS: dict[str, Callable[[QdqGraph, onnx.NodeProto], onnx.NodeProto | None]] = {
    "Conv": _conv, "MatMul": _matmul, "Gemm": _gemm, "Add": _binary, "Mul": _binary, "Concat": _concat,
    "AveragePool": _pool, "GlobalAveragePool": _pool, "LeakyRelu": _leaky_relu,
    **dict.fromkeys(DATA_MOVEMENT, _data_movement),
}


def fuse_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its fusable QDQ groups as the operators onnxruntime runs (a copy; ``model`` itself when
    there is nothing to fuse)."""
    graph = QdqGraph(model.graph)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    fusions = {**_FUSIONS, "Softmax": functools.partial(_softmax, opset=opset)}
    replacements, absorbed = {}, set()
    for node in model.graph.node:
        split = _split(graph, node) if node.op_type == "Split" and not node.domain else None
        if split is not None:
            replacements[id(node)] = split[0]
            absorbed.update(id(quantize) for quantize in split[1:])
            continue
        fused = fusions[node.op_type](graph, node) if node.op_type in fusions and not node.domain else None
        if fused is not None:
            replacements[id(node)] = fused
            quantize = graph.producer[fused.output[0]]
            absorbed.add(id(quantize))
            clip = graph.producer[quantize.input[0]]
            if clip is not node:
                absorbed.add(id(clip))
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
    if any(n.domain == MS_DOMAIN for n in nodes) and not any(o.domain == MS_DOMAIN for o in result.opset_import):
        result.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return result
