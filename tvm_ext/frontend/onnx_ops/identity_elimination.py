"""Identity nodes removed before anything matches node patterns, as onnxruntime's basic graph optimizer
(IdentityElimination) removes them before its QDQ fusions.

PyTorch's TorchScript exporter shares equal constants through Identity nodes (every zero bias of a torchvision
model is one initializer read through an Identity per Conv); after onnxruntime's ``quantize_static`` each such
Identity sits between a bias's DequantizeLinear and its Conv. onnxruntime selects those Conv groups as if the
Identity were not there (and fuses each whose bias scale meets its rule, ``qdq_fusion``); a pattern that expects
the DequantizeLinear as the Conv's own input would not see them as groups at all.
"""

from __future__ import annotations

import onnx


def without_identities(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with each default-domain ("" or "ai.onnx") Identity node of its main graph removed and its
    readers reading the Identity's input instead (a copy; ``model`` itself when it has none). An Identity whose
    output is a graph output stays: the output's name is the model's interface."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    removed = {n.output[0]: n.input[0] for n in graph.node
               if n.op_type == "Identity" and n.domain in ("", "ai.onnx") and n.output[0] not in outputs}
    if not removed:
        return model

    def source(name: str) -> str:
        while name in removed:  # an Identity of an Identity
            name = removed[name]
        return name

    result = onnx.ModelProto()
    result.CopyFrom(model)
    kept = [n for n in result.graph.node if not (n.op_type == "Identity" and n.output[0] in removed)]
    for node in kept:
        node.input[:] = [source(name) for name in node.input]
    del result.graph.node[:]
    result.graph.node.extend(kept)
    value_info = [v for v in result.graph.value_info if v.name not in removed]
    del result.graph.value_info[:]
    result.graph.value_info.extend(value_info)
    return result
