"""ONNX operator forms TVM 0.27 imports but cannot compile: operands that must be known at compile time.

TVM's ONNX converters read some operands as compile-time values (Slice's starts/ends/axes/steps,
Squeeze's and Unsqueeze's axes, Reshape's shape, Resize's roi/scales/sizes, Pad's pads, ReduceMean's axes). When such an operand is computed from a
graph input, TVM imports the node into a dynamic-shape or data-dependent form that fails later, inside
lowering or code generation, or refuses it with a message about its own types. Likewise MaxPool's optional second output (the
argmax indices) is not converted. These forms are refused here, in one line naming the node and operand.

An operand is "known at compile time" when no graph input reaches it: initializers, Constant nodes, and
what is computed from them or from tensor shapes (Shape and Size of any tensor: every shape is static).
"""

from __future__ import annotations

# Operator -> {input index: operand name} of the operands TVM needs as compile-time values.
COMPILE_TIME_OPERANDS: dict[str, dict[int, str]] = {
    "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"},
    "Squeeze": {1: "axes"},
    "Unsqueeze": {1: "axes"},
    "Reshape": {1: "shape"},
    "Resize": {1: "roi", 2: "scales", 3: "sizes"},
    "Pad": {1: "pads", 2: "constant_value", 3: "axes"},
    "ReduceMean": {1: "axes"},
    "GRU": {4: "sequence_lens"},  # our converters (onnx_ops.recurrent) unroll the full sequence
    "LSTM": {4: "sequence_lens"},
    "RNN": {4: "sequence_lens"},
}
# Operators whose outputs depend only on their input's (static) shape, never on its values.
_SHAPE_ONLY = frozenset({"Shape", "Size"})
# Operator -> (number of outputs TVM converts, what the first unconverted one is).
CONVERTED_OUTPUTS: dict[str, tuple[int, str]] = {
    "MaxPool": (1, "its Indices output (the argmax)"),
}


def input_dependent_names(graph) -> set[str]:
    """Names of the tensors whose values depend on a graph input (ONNX nodes are in topological order)."""
    initializers = {t.name for t in graph.initializer}
    dependent = {v.name for v in graph.input if v.name not in initializers}
    for node in graph.node:
        if node.op_type not in _SHAPE_ONLY and any(name in dependent for name in node.input):
            dependent.update(name for name in node.output if name)
    return dependent


def operand_refusals(graph) -> list[tuple[int, str]]:
    """(node index, why) for each node in a form TVM cannot compile, in graph order."""
    dependent = input_dependent_names(graph)
    refusals = []
    for index, node in enumerate(graph.node):
        domain_is_onnx = node.domain in ("", "ai.onnx")
        operands = COMPILE_TIME_OPERANDS.get(node.op_type, {}) if domain_is_onnx else {}
        runtime = [name for i, name in operands.items() if i < len(node.input) and node.input[i] in dependent]
        if runtime:
            names = ", ".join(runtime[:-1]) + " and " + runtime[-1] if len(runtime) > 1 else runtime[0]
            refusals.append((index, f"its {names} must be constants (initializers or Constant nodes), not"
                                    " computed from a graph input"))
        converted, what = CONVERTED_OUTPUTS.get(node.op_type, (None, ""))
        if domain_is_onnx and converted is not None and any(node.output[converted:]):
            refusals.append((index, f"{what} is not converted by TVM 0.27"))
    return refusals
