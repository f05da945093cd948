"""The rules an ONNX model must pass, before TVM's ONNX frontend sees it.

Order (after the protobuf parse, `parsed.parse_model`): model structure, operator count, external data, graph (empty, undefined names, one
writer per name, cycles, input == output, unused inputs), tensors (static input/output shapes, dtypes,
constant data sizes), `onnx.checker` full check with shape inference, the bytes of all constants together,
of inputs and outputs together, then operator support. Each step gathers every problem of its kind and raises them together.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .errors import ErrorKind, ModelError, ProblemList, one_line, quote, refuse_unsupported_operators
from .facts import ModelFacts, ModelFormat, OperatorFacts, TensorFacts
from .limits import (has_c_type, io_problem, operators_problem, oversize_problem, refuse_beyond_limit, shape_problem,
                     tensor_bytes, weights_problem)
from .onnx_operands import operand_refusals
from .operator_support import onnx_refusal

_DEFAULT_DOMAINS = ("", "ai.onnx")
_QUANTIZED_OPS = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "ConvInteger",
        "MatMulInteger",
        "MatMulInteger16",
    }
)


@dataclass(frozen=True)
class _DType:
    name: str
    bits: int


def _dtypes() -> dict[int, _DType]:
    """ONNX TensorProto element types our compiler accepts (strings, complex, float8 and 4-bit are not)."""
    from onnx import TensorProto as P

    return {
        P.FLOAT: _DType("float32", 32),
        P.DOUBLE: _DType("float64", 64),
        P.FLOAT16: _DType("float16", 16),
        P.BFLOAT16: _DType("bfloat16", 16),
        P.INT8: _DType("int8", 8),
        P.UINT8: _DType("uint8", 8),
        P.INT16: _DType("int16", 16),
        P.UINT16: _DType("uint16", 16),
        P.INT32: _DType("int32", 32),
        P.UINT32: _DType("uint32", 32),
        P.INT64: _DType("int64", 64),
        P.UINT64: _DType("uint64", 64),
        P.BOOL: _DType("bool", 8),
    }


def _dtype_name(code: int) -> str:
    """ONNX's name of an element type code ("STRING"), or the number when ONNX does not know it."""
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(code)
    except ValueError:
        return str(code)


def check_onnx(model: str, path: str, proto, refuse_unsupported: bool = True) -> ModelFacts:
    """Check the `onnx.ModelProto` of a .onnx file (`parsed.parse_model`); return its facts or raise ModelError
    naming `model` (with `refuse_unsupported` False, unsupported operators are recorded in the facts instead:
    `check_model`). Reads `proto`, never changes it."""
    _check_structure(model, proto)
    graph = proto.graph
    refuse_beyond_limit(model, operators_problem(_node_count(graph)))
    _check_names(model, graph)
    dtypes = _dtypes()
    _check_external_data(model, graph)
    _check_graph(model, graph)
    _check_inputs(model, graph, dtypes)
    _check_constants(model, graph, dtypes)
    _run_checker(model, proto)
    inferred = _infer_shapes(proto)
    _check_c_types(model, inferred.graph, dtypes)
    _check_sizes(model, inferred.graph, dtypes)
    known = _known_constants(inferred.graph)
    refuse_beyond_limit(model, weights_problem(_tensors_bytes(inferred.graph, dtypes, known)))
    weight_bytes = _stored_constant_bytes(inferred.graph, dtypes, known)
    inputs, outputs = _input_facts(graph, dtypes), _output_facts(model, proto, inferred, dtypes)
    refuse_beyond_limit(model, io_problem(sum(tensor.nbytes for tensor in (*inputs, *outputs))))
    refusals = _operator_refusals(model, graph, refuse_unsupported)
    return _facts(path, proto, inputs, outputs, weight_bytes, refusals)


def _check_structure(model: str, proto) -> None:
    problems = ProblemList(model, ErrorKind.STRUCTURE, "not a complete ONNX model")
    if proto.ir_version <= 0:
        problems.add("no IR version")
    if not proto.HasField("graph"):
        problems.add("no graph")
    if not any(o.domain in _DEFAULT_DOMAINS for o in proto.opset_import):
        problems.add("no opset for the default ONNX domain")
    problems.raise_if_any()


def _node_count(graph) -> int:
    """The graph's nodes and those of every subgraph its nodes hold (If, Loop, Scan bodies), at any depth.
    Iterative: no recursion on deeply nested graphs."""
    from onnx import AttributeProto

    count, graphs = 0, [graph]
    while graphs:
        nodes = graphs.pop().node
        count += len(nodes)
        for node in nodes:
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    graphs.append(attr.g)
                elif attr.type == AttributeProto.GRAPHS:
                    graphs.extend(attr.graphs)
    return count


def _check_names(model: str, graph) -> None:
    """Every name the later checks read must be text: protobuf hands invalid UTF-8 over as bytes."""
    problems = ProblemList(model, ErrorKind.STRUCTURE, "names that are not valid UTF-8")
    values = [*graph.input, *graph.output, *graph.initializer]
    names = [v.name for v in values]
    for node in graph.node:
        names += [node.name, node.op_type, node.domain, *node.input, *node.output]
    for name in names:
        if isinstance(name, bytes):
            problems.add(quote(name))
    problems.raise_if_any()


def _tensor_protos(graph) -> Iterator[tuple[str, object]]:
    """(label, TensorProto) for every constant in the graph: initializers and tensor attributes of nodes."""
    from onnx import AttributeProto

    for tensor in graph.initializer:
        yield f"initializer {quote(tensor.name)}", tensor
    for index, node in enumerate(graph.node):
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR:
                yield f"attribute {quote(attr.name)} of node {_node_label(index, node)}", attr.t


def _sparse_attributes(graph) -> Iterator[str]:
    """A label for every sparse tensor attribute of a node (a Constant's `sparse_value`): TVM's importer cannot
    parse one (an internal error), so the check refuses it."""
    from onnx import AttributeProto

    for index, node in enumerate(graph.node):
        for attr in node.attribute:
            if attr.type in (AttributeProto.SPARSE_TENSOR, AttributeProto.SPARSE_TENSORS):
                yield f"attribute {quote(attr.name)} of node {_node_label(index, node)}"


def _check_external_data(model: str, graph) -> None:
    from onnx import TensorProto

    problems = ProblemList(
        model,
        ErrorKind.EXTERNAL_DATA,
        "tensor data stored outside the model file",
        "not supported: save the model with onnx.save(model, path, save_as_external_data=False)",
    )
    for label, tensor in _tensor_protos(graph):
        if tensor.data_location == TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "?")
            problems.add(f"{label} in {quote(location)}")
    problems.raise_if_any()


def _node_label(index: int, node) -> str:
    return f"{quote(_layer(index, node))} ({one_line(node.op_type, 40)})"


def _layer(index: int, node) -> str:
    """A node's layer name: its name, else its first output, else its position."""
    return node.name or (node.output[0] if node.output else f"node {index}")


def _check_graph(model: str, graph) -> None:
    problems = ProblemList(model, ErrorKind.GRAPH, "bad graph")
    nodes = list(graph.node)
    if not nodes:
        problems.add("the graph has no nodes (empty graph)")
    # A sparse initializer defines its name too (the constants' check refuses it, naming it).
    initializers = {t.name for t in graph.initializer} | {s.values.name for s in graph.sparse_initializer}
    inputs = [v.name for v in graph.input if v.name not in initializers]
    outputs = [v.name for v in graph.output]
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if name in producer:
                first = _node_label(producer[name], nodes[producer[name]])
                problems.add(f"{quote(name)} is written by nodes {first} and {_node_label(index, node)}")
            elif name in initializers or name in inputs:
                problems.add(
                    f"node {_node_label(index, node)} overwrites graph input or initializer {quote(name)}"
                )
            elif name:
                producer[name] = index
    defined = set(producer) | initializers | set(inputs)
    read: set[str] = set()
    for index, node in enumerate(nodes):
        for name in node.input:
            if name and name not in defined:
                problems.add(f"node {_node_label(index, node)} reads {quote(name)} that nothing defines")
            read.add(name)
        read |= _read_by_subgraphs(node)  # an If/Loop/Scan branch reads the graph's names by their names
    cycle = _find_cycle(nodes, producer)
    if cycle:
        problems.add("cycle through nodes " + " -> ".join(_node_label(i, nodes[i]) for i in cycle))
    for name in inputs:
        if name in outputs:
            problems.add(f"{quote(name)} is both a graph input and a graph output")
        elif name not in read:
            problems.add(f"graph input {quote(name)} is not read by any node")
    for name in outputs:
        if name not in defined:
            problems.add(f"graph output {quote(name)} is never written")
    if not inputs:
        problems.add("the graph has no inputs")
    if not outputs:
        problems.add("the graph has no outputs")
    problems.raise_if_any()


def _read_by_subgraphs(node) -> set[str]:
    """The names the subgraphs of `node`'s graph attributes (If's branches, Loop's and Scan's bodies) read,
    at any depth: the enclosing graph's values they use. Those nodes are control flow, which the operator
    check refuses by name; their reads must not make a graph input look unread."""
    read: set[str] = set()
    pending = _subgraphs(node)
    while pending:
        for inner in pending.pop().node:
            read.update(inner.input)
            pending += _subgraphs(inner)
    return read


def _subgraphs(node) -> list:
    """The graphs of `node`'s GRAPH and GRAPHS attributes."""
    from onnx import AttributeProto

    return [graph for attr in node.attribute
            for graph in ([attr.g] if attr.type == AttributeProto.GRAPH else
                          attr.graphs if attr.type == AttributeProto.GRAPHS else [])]


def _find_cycle(nodes: list, producer: dict[str, int]) -> list[int]:
    """One cycle of node indices (first node repeated at the end), or [] when the graph is acyclic.

    Kahn's algorithm removes every node outside a cycle; each node left has a predecessor left, so
    walking predecessors from any of them must revisit a node. Iterative: no recursion on big graphs.
    """
    preds = [sorted({producer[n] for n in node.input if n in producer}) for node in nodes]
    succs: list[list[int]] = [[] for _ in nodes]
    for index, pred_list in enumerate(preds):
        for pred in pred_list:
            succs[pred].append(index)
    indegree = [len(p) for p in preds]
    ready = [i for i, d in enumerate(indegree) if d == 0]
    removed = 0
    while ready:
        index = ready.pop()
        removed += 1
        for succ in succs[index]:
            indegree[succ] -= 1
            if indegree[succ] == 0:
                ready.append(succ)
    if removed == len(nodes):
        return []
    start = next(i for i, d in enumerate(indegree) if d > 0)
    seen: dict[int, int] = {}
    walk: list[int] = []
    current = start
    while current not in seen:
        seen[current] = len(walk)
        walk.append(current)
        current = next(p for p in preds[current] if indegree[p] > 0)
    cycle = walk[seen[current] :] + [current]
    return cycle[::-1]


def _static_shape(value) -> tuple[tuple[int, ...] | None, str]:
    """The static shape of a ValueInfo's tensor type, or (None, why not)."""
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None, "has no shape"
    shape = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value > 0:
            shape.append(dim.dim_value)
        elif dim.HasField("dim_param"):
            return None, f"dimension {axis} is dynamic ({quote(dim.dim_param)})"
        else:
            return None, f"dimension {axis} is {dim.dim_value if dim.HasField('dim_value') else 'unknown'}"
    return tuple(shape), ""


def _value_problem(value, dtypes: dict[int, _DType]) -> str | None:
    """What stops a graph input/output from being a static tensor of an accepted dtype, or None."""
    if value.type.WhichOneof("value") != "tensor_type":
        return "is not a tensor"
    dtype = dtypes.get(value.type.tensor_type.elem_type)
    if dtype is None:
        return f"has unsupported element type {_dtype_name(value.type.tensor_type.elem_type)}"
    shape, why = _static_shape(value)
    if shape is None:
        return why
    return shape_problem(shape, dtype.bits)


def _check_inputs(model: str, graph, dtypes: dict[int, _DType]) -> None:
    problems = ProblemList(model, ErrorKind.TENSOR, "bad model input")
    initializers = {t.name for t in graph.initializer}
    for value in graph.input:
        if value.name in initializers:
            continue
        problem = _value_problem(value, dtypes)
        if problem:
            problems.add(f"input {quote(value.name)} {problem}")
    problems.raise_if_any()


def _check_constants(model: str, graph, dtypes: dict[int, _DType]) -> None:
    """Constants: dims, dtype, and data length against shape x dtype (raw bytes or typed values)."""
    from onnx.helper import tensor_dtype_to_field

    tensors = ProblemList(model, ErrorKind.TENSOR, "bad constant")
    sizes = ProblemList(model, ErrorKind.BUFFER, "constant data does not match its dims")
    for sparse in graph.sparse_initializer:
        tensors.add(f"initializer {quote(sparse.values.name)} is a sparse tensor (not supported: store it dense)")
    for label in _sparse_attributes(graph):
        tensors.add(f"{label} is a sparse tensor (not supported: store it dense, as `value`)")
    for label, tensor in _tensor_protos(graph):
        dtype = dtypes.get(tensor.data_type)
        if dtype is None:
            tensors.add(f"{label} has unsupported element type {_dtype_name(tensor.data_type)}")
            continue
        dims = tuple(tensor.dims)
        problem = shape_problem(dims, dtype.bits)
        if problem:
            tensors.add(f"{label} {problem}")
            continue
        if tensor.HasField("segment"):
            tensors.add(f"{label} is segmented (not supported)")
            continue
        elements = 1
        for dim in dims:
            elements *= dim
        if tensor.HasField("raw_data"):
            needed, held, unit = tensor_bytes(dims, dtype.bits), len(tensor.raw_data), "bytes"
        else:
            needed, held, unit = (
                elements,
                len(getattr(tensor, tensor_dtype_to_field(tensor.data_type))),
                "values",
            )
        if needed != held:
            sizes.add(f"{label} {list(dims)} {dtype.name} needs {needed} {unit}, holds {held}")
    tensors.raise_if_any()
    sizes.raise_if_any()


def _run_checker(model: str, proto) -> None:
    import onnx.checker

    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:  # noqa: BLE001 - the checker raises ValidationError, InferenceError, ...
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise ModelError(model, ErrorKind.ONNX_CHECKER, f"onnx.checker: {one_line(first, 300)}") from None


def _infer_shapes(proto):
    """`proto` with ONNX's inferred types and shapes of every tensor (`graph.value_info`), constant shape
    inputs propagated (data_prop: Expand, Reshape, ConstantOfShape of constant shapes get static shapes), on
    the model as the frontend imports it: its shape arithmetic folded (`fold_shape_arithmetic`; data_prop does
    not see through a Transpose, and an exporter then declares the outputs' dims symbolic).

    Shapes are inferred from dims alone; no tensor is computed. Falls back to `proto` when inference fails.
    """
    import onnx.shape_inference

    from tvm_ext.model_check.onnx_fold_shapes import fold_shape_arithmetic

    try:
        return onnx.shape_inference.infer_shapes(fold_shape_arithmetic(proto), data_prop=True)
    except Exception:  # noqa: BLE001 - inference already passed in the checker; keep what the model declares
        return proto


def _typed_values(graph) -> Iterator[tuple[str, int, tuple[int, ...] | None]]:
    """(label, ONNX element type, dims or None when not all known) of every tensor of an inferred graph:
    inputs, outputs, intermediates and constants."""
    initializers = {t.name for t in graph.initializer}
    writers = {name: _node_label(i, node) for i, node in enumerate(graph.node) for name in node.output}
    roles = [("input", v) for v in graph.input if v.name not in initializers]
    roles += [("output", v) for v in graph.output] + [("tensor", v) for v in graph.value_info]
    for role, value in roles:
        if value.type.WhichOneof("value") != "tensor_type":
            continue
        written_by = f" written by node {writers[value.name]}" if role == "tensor" and value.name in writers else ""
        yield f"{role} {quote(value.name)}{written_by}", value.type.tensor_type.elem_type, _known_dims(value)
    for label, tensor in _tensor_protos(graph):
        yield label, tensor.data_type, tuple(tensor.dims)


def _known_dims(value) -> tuple[int, ...] | None:
    """A ValueInfo's dims when every one is a known value (0 included), else None."""
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = tuple(dim.dim_value if dim.HasField("dim_value") else -1 for dim in tensor_type.shape.dim)
    return None if any(d < 0 for d in dims) else dims


def _check_c_types(model: str, graph, dtypes: dict[int, _DType]) -> None:
    """Every tensor has a C99 type in the bundle: float16 and bfloat16 have none (TVM's ONNX import keeps
    them as they are), so a model using them anywhere, even inside, is refused."""
    problems = ProblemList(
        model, ErrorKind.TENSOR, "tensors of a type C99 has no portable type for", "convert the model to float32"
    )
    for label, elem_type, _ in _typed_values(graph):
        dtype = dtypes.get(elem_type)
        if dtype is not None and not has_c_type(dtype.name):
            problems.add(f"{label} is {dtype.name}")
    problems.raise_if_any()


def _check_sizes(model: str, graph, dtypes: dict[int, _DType]) -> None:
    """No tensor, intermediates and constant-folded ones included, is larger than any target's memory."""
    problems = ProblemList(model, ErrorKind.TENSOR, "tensors too large for any target")
    for label, elem_type, dims in _typed_values(graph):
        dtype = dtypes.get(elem_type)
        problem = None if dtype is None or dims is None else oversize_problem(dims, dtype.bits)
        if problem:
            problems.add(f"{label} {dtype.name}{problem}")
    problems.raise_if_any()


def _stored_constant_bytes(graph, dtypes: dict[int, _DType], producers: dict[str, object]) -> int:
    """Bytes of the constants the model's computation reads, as a bundle stores them: every tensor known before
    any input (`producers`, from `_known_constants`) that a node reading some input-dependent tensor reads, or that is
    a graph output, each once. The constants only other constants read are folded away on the host, so they
    count nothing. A DequantizeLinear's result counts its quantized operand's bytes: the integer lowering, and
    the float kernels that keep a QDQ model's weights quantized, store those (a QDQ model's int8 weights, not
    four times their bytes as float32). An estimate from the file alone, for a fit check before the passes:
    the passes' plan gives the stored bytes."""
    read = {name for node in graph.node if not all(name in producers for name in node.input if name)
            for name in node.input if name in producers}
    read |= {value.name for value in graph.output if value.name in producers}
    stored = set()
    for name in read:
        node = producers[name]
        while node is not None and node.op_type == "DequantizeLinear":
            name = node.input[0]
            node = producers[name]
        stored.add(name)
    return _tensors_bytes(graph, dtypes, stored)


def _known_constants(graph) -> dict[str, object]:
    """Every tensor of `graph` whose value is known before any input is, by name, with the node computing it
    (None for an initializer): initializers, Constant values, and the results of nodes reading only such
    tensors. Their bytes, each once, are what TVM computes and holds on the host (its import and constant
    folding), the figure the file's size limit bounds; the bundle stores fewer (`_stored_constant_bytes`)."""
    producers: dict[str, object] = {tensor.name: None for tensor in graph.initializer}
    for node in graph.node:
        reads = [name for name in node.input if name]
        if node.op_type == "Constant" or (reads and all(name in producers for name in reads)):
            producers.update((name, node) for name in node.output if name)
    return producers


def _tensors_bytes(graph, dtypes: dict[int, _DType], names) -> int:
    """Bytes of the tensors of an inferred graph named in `names` (initializers, value infos, outputs); one
    whose dims inference left open, or whose dtype has no C type, counts nothing."""
    sizes = {tensor.name: (tensor.data_type, tuple(tensor.dims))
             for tensor in graph.initializer if tensor.name in names}
    for value in (*graph.value_info, *graph.output):
        if value.name in names and value.name not in sizes and value.type.WhichOneof("value") == "tensor_type":
            sizes[value.name] = (value.type.tensor_type.elem_type, _known_dims(value))
    return sum(tensor_bytes(dims, dtypes[elem_type].bits) for elem_type, dims in sizes.values()
               if dims is not None and elem_type in dtypes)


def _output_facts(model: str, proto, inferred, dtypes: dict[int, _DType]) -> tuple[TensorFacts, ...]:
    """Graph outputs with static shapes, from the model or, when it leaves them open, ONNX shape inference
    (`inferred`, from `_infer_shapes`)."""
    by_name = {value.name: value for value in inferred.graph.output}
    problems = ProblemList(model, ErrorKind.TENSOR, "bad model output")
    facts = []
    for declared in proto.graph.output:
        value = declared if _value_problem(declared, dtypes) is None else by_name.get(declared.name, declared)
        problem = _value_problem(value, dtypes)
        if problem:
            problems.add(f"output {quote(declared.name)} {problem}")
            continue
        shape, _ = _static_shape(value)
        facts.append(TensorFacts(declared.name, shape, dtypes[value.type.tensor_type.elem_type].name))
    problems.raise_if_any()
    return tuple(facts)


def _operator_refusals(model: str, graph, refuse_unsupported: bool) -> list[str | None]:
    """Why our compiler refuses each node ("GridSample (...)"), None where it is supported; with
    `refuse_unsupported`, ModelError(UNSUPPORTED_OPERATOR) listing them instead."""
    reasons = [(index, onnx_refusal(node.domain, node.op_type)) for index, node in enumerate(graph.node)]
    refusals: list[str | None] = [None] * len(graph.node)
    refused: dict[tuple[str, str], list[str]] = {}
    for index, reason in [*reasons, *operand_refusals(graph)]:
        if reason is not None:
            node = graph.node[index]
            op = one_line(f"{node.domain}:{node.op_type}" if node.domain else node.op_type, 60)
            refused.setdefault((op, reason), []).append(_layer(index, node))
            refusals[index] = refusals[index] or f"{op} ({reason})"
    if refuse_unsupported:
        refuse_unsupported_operators(model, refused)
    return refusals


def _input_facts(graph, dtypes: dict[int, _DType]) -> tuple[TensorFacts, ...]:
    """Graph inputs (not initializers) with the static shapes `_check_inputs` made sure of."""
    initializers = {t.name for t in graph.initializer}
    return tuple(
        TensorFacts(v.name, _static_shape(v)[0], dtypes[v.type.tensor_type.elem_type].name)
        for v in graph.input
        if v.name not in initializers
    )


def _facts(path: str, proto, inputs: tuple[TensorFacts, ...], outputs: tuple[TensorFacts, ...],
           weight_bytes: int, refusals: list[str | None]) -> ModelFacts:
    graph = proto.graph
    opsets = {("ai.onnx" if o.domain == "" else o.domain): o.version for o in proto.opset_import}
    operators = tuple(
        OperatorFacts(node.op_type, _layer(i, node), opsets.get(node.domain or "ai.onnx", 0), refusal)
        for (i, node), refusal in zip(enumerate(graph.node), refusals, strict=True)
    )
    quantized = any(
        node.op_type in _QUANTIZED_OPS or node.op_type.startswith("QLinear") for node in graph.node
    )
    return ModelFacts(path, ModelFormat.ONNX, inputs, outputs, operators, quantized, weight_bytes, state_bytes=0)
