"""The rules a TFLite model must pass, applied to the records of `tflite_reader`.

Each rule gathers every problem of its kind and raises them together; rules run in the order of
`check_tflite`, so a later rule may rely on what an earlier one established (e.g. indices in range).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .dilated_convolutions import dilated_convolution_chains
from .errors import ErrorKind, ModelError, ProblemList, layers_phrase, quote, refuse_unsupported_operators
from .tflite_layers import tflite_layer_name
from .facts import ModelFacts, ModelFormat, OperatorFacts, TensorFacts
from .limits import (MAX_TENSOR_BYTES, has_c_type, io_problem, operators_problem, oversize_problem, refuse_beyond_limit,
                     shape_problem, tensor_bytes, weights_problem)
from .operator_support import DILATION_FRAMES, TFLITE_CUSTOM_CODES, tflite_refusal
from .signal_ops import SIGNAL_OPERATORS, SignalOptionsError, TensorView, operator_problem, read_options
from .tflite_reader import TfliteModel, TfliteOperator, TfliteQuantization, TfliteSubgraph, TfliteTensor, read_tflite
from .tflite_versions import known_versions

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
OFFLINE_PLAN_METADATA = "OfflineMemoryAllocation"
OFFLINE_PLAN_VERSION = 1
OFFLINE_PLAN_HEADER_WORDS = 3  # version, subgraph index, number of offsets


@dataclass(frozen=True)
class _DType:
    name: str
    bits: int
    integer: bool  # quantizable integer type

    @property
    def value_range(self) -> tuple[int, int]:
        """Smallest and largest value of a quantizable integer type."""
        if self.name.startswith("u"):
            return 0, (1 << self.bits) - 1
        return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1


# TFLite TensorType codes (schema.fbs) our compiler accepts. STRING, COMPLEX64/128, RESOURCE and VARIANT
# are refused: they have no fixed element size or no meaning in a C bundle; FLOAT64, UINT16 and BFLOAT16
# too: TVM's TFLite frontend has no dtype for them (a KeyError inside TVM).
_DTYPES: dict[int, _DType] = {
    0: _DType("float32", 32, False),
    1: _DType("float16", 16, False),
    2: _DType("int32", 32, False),
    3: _DType("uint8", 8, True),
    4: _DType("int64", 64, False),
    6: _DType("bool", 8, False),
    7: _DType("int16", 16, True),
    9: _DType("int8", 8, True),
    12: _DType("uint64", 64, False),
    15: _DType("uint32", 32, False),
    17: _DType("int4", 4, True),
}
_FLOAT32 = 0
_WEIGHT_TYPES = {"int8", "uint8", "int4"}
_CUSTOM_BUILTIN = 32  # BuiltinOperator.CUSTOM
_SMALLEST_NORMAL_FLOAT32 = float(np.finfo(np.float32).tiny)
_LARGEST_FLOAT32 = float(np.finfo(np.float32).max)
# TFLite's QuantizeMultiplier stores a requantization multiplier as a Q31 fraction in [0.5, 1) times
# 2^shift, shift <= 30 (it saturates larger ones); it flushes multipliers with a shift below -31 to zero.
_MAX_MULTIPLIER_SHIFT = 30
_MIN_MULTIPLIER_SHIFT = -31
# Operators whose requantization multiplier is input scale x weight scale / output scale.
_WEIGHTED_OPERATORS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "CONV_3D"})
# Reads a float16 constant only to give float32: TVM's import turns the pair into a float32 constant.
_DEQUANTIZE = "DEQUANTIZE"


def tflite_dtype_name(code: int) -> str:
    """Our dtype name ("float32", "uint16", ...) of a TFLite TensorType code the model check accepts."""
    return _DTYPES[code].name


def _type_name(code: int) -> str:
    """TFLite's name of a TensorType code ("STRING"), or the number when the schema does not know it."""
    from tflite.TensorType import TensorType

    return _enum_names(TensorType).get(code, f"code {code}")


def builtin_names() -> dict[int, str]:
    """TFLite builtin operator code -> its name ("CONV_2D")."""
    from tflite.BuiltinOperator import BuiltinOperator

    return _enum_names(BuiltinOperator)


@functools.cache
def _enum_names(enum_class: type) -> dict[int, str]:
    """value -> name of a flatbuffers-generated enum class (plain class attributes)."""
    return {value: name for name, value in vars(enum_class).items() if not name.startswith("_")}


def check_tflite(model: str, path: str, data: bytes, root, refuse_unsupported: bool = True) -> ModelFacts:
    """Check the bytes `data` of a .tflite file and their `tflite.Model` table `root` (`parsed.parse_model`);
    return its facts or raise ModelError naming `model` (with `refuse_unsupported` False, unsupported operators
    are recorded in the facts instead: `check_model`)."""
    if data[4:8] != FILE_IDENTIFIER:
        raise ModelError(
            model,
            ErrorKind.FORMAT,
            f"wrong file identifier {data[4:8]!r}, expected {FILE_IDENTIFIER!r} (not a TFLite model)",
        )
    flat = read_tflite(model, root, len(data))
    if flat.schema_version != SCHEMA_VERSION:
        raise ModelError(
            model,
            ErrorKind.STRUCTURE,
            f"schema version {flat.schema_version}, only version {SCHEMA_VERSION} is supported",
        )
    _check_subgraphs(model, flat)
    graph = flat.subgraphs[0]
    refuse_beyond_limit(model, operators_problem(len(graph.operators)))
    _check_indices(model, flat, graph)
    _check_tensors(model, graph)
    _check_sizes(model, graph)
    _check_buffers(model, flat, graph)
    refuse_beyond_limit(model, weights_problem(_weight_bytes(flat, graph)))
    op_names = _operator_names(model, flat, graph)
    _check_c_types(model, flat, graph, op_names)
    io = [graph.tensors[index] for index in (*graph.inputs, *graph.outputs)]
    refuse_beyond_limit(model, io_problem(sum(_tensor_bytes(tensor) for tensor in io)))
    _check_graph(model, flat, graph, op_names)
    _check_constant_inputs(model, flat, graph)
    _check_offline_plan(model, flat)
    _check_hybrid(model, flat, graph, op_names)
    _check_quantized_operators(model, graph, op_names)
    _check_requantization_multipliers(model, graph, op_names)
    refusals = _operator_refusals(model, graph, op_names, refuse_unsupported)
    _check_signal_operators(model, flat, graph, op_names)
    return _facts(path, flat, graph, op_names, refusals)


def _tensor_label(tensor: TfliteTensor) -> str:
    return f"tensor {tensor.index} {quote(tensor.name)}"


def _layer(graph: TfliteSubgraph, op: TfliteOperator) -> str:
    """An operator's layer name: its first output tensor's name, or its index when that is missing or unnamed."""
    if op.outputs and 0 <= op.outputs[0] < len(graph.tensors):
        return tflite_layer_name(graph.tensors[op.outputs[0]].name, op.index)
    return tflite_layer_name("", op.index)


def _check_subgraphs(model: str, flat: TfliteModel) -> None:
    count = len(flat.subgraphs)
    if count != 1:
        raise ModelError(
            model,
            ErrorKind.SUBGRAPHS,
            f"{count} subgraphs; only single-subgraph models are supported (no control flow, one signature)",
        )


def _check_indices(model: str, flat: TfliteModel, graph: TfliteSubgraph) -> None:
    problems = ProblemList(model, ErrorKind.INDEX, "index out of range")
    n_tensors, n_buffers, n_codes = len(graph.tensors), len(flat.buffers), len(flat.opcodes)
    for tensor in graph.tensors:
        if not 0 <= tensor.buffer < n_buffers:
            problems.add(f"{_tensor_label(tensor)} uses buffer {tensor.buffer} of {n_buffers}")
    for op in graph.operators:
        if not 0 <= op.opcode_index < n_codes:
            problems.add(f"operator {op.index} uses operator code {op.opcode_index} of {n_codes}")
        for index in op.inputs:
            if not -1 <= index < n_tensors:
                problems.add(f"operator {op.index} reads tensor {index} of {n_tensors}")
        for index in op.outputs:
            if not 0 <= index < n_tensors:
                problems.add(f"operator {op.index} writes tensor {index} of {n_tensors}")
    for role, indices in (("input", graph.inputs), ("output", graph.outputs)):
        for index in indices:
            if not 0 <= index < n_tensors:
                problems.add(f"model {role} is tensor {index} of {n_tensors}")
    for name, buffer in flat.metadata:
        if not 0 <= buffer < n_buffers:
            problems.add(f"metadata {quote(name)} uses buffer {buffer} of {n_buffers}")
    problems.raise_if_any()


def _check_tensors(model: str, graph: TfliteSubgraph) -> None:
    problems = ProblemList(model, ErrorKind.TENSOR, "bad tensor")
    for tensor in graph.tensors:
        dtype = _DTYPES.get(tensor.type_code)
        if dtype is None:
            problems.add(f"{_tensor_label(tensor)} has unsupported type {_type_name(tensor.type_code)}")
            continue
        problem = shape_problem(tensor.shape, dtype.bits)
        if problem:
            problems.add(f"{_tensor_label(tensor)} {problem}")
            continue
        quant = tensor.quantization
        if quant is None:
            continue
        low, high = quant.scale_range
        if not _SMALLEST_NORMAL_FLOAT32 <= low <= high <= _LARGEST_FLOAT32:  # False for NaN
            problems.add(
                f"{_tensor_label(tensor)} has quantization scales in [{low:.9g}, {high:.9g}], not all positive "
                "normal finite float32 values"
            )
        if quant.zero_points != quant.scales:
            problems.add(
                f"{_tensor_label(tensor)} has {quant.scales} scales but {quant.zero_points} zero points"
            )
        if quant.scales > 1 and not _scales_fit_axis(quant, tensor.shape):
            problems.add(
                f"{_tensor_label(tensor)} {list(tensor.shape)} has {quant.scales} per-channel scales "
                f"on dimension {quant.dimension}"
            )
        problem = _zero_point_problem(quant, dtype)
        if problem:
            problems.add(f"{_tensor_label(tensor)} {problem}")
    for role, indices in (("input", graph.inputs), ("output", graph.outputs)):
        for index in indices:
            if 0 in graph.tensors[index].shape:
                problems.add(f"model {role} {_tensor_label(graph.tensors[index])} has no elements")
    problems.raise_if_any()


def _check_sizes(model: str, graph: TfliteSubgraph) -> None:
    """No tensor is larger than any target's memory (shapes already checked by `_check_tensors`)."""
    problems = ProblemList(model, ErrorKind.TENSOR, "tensors too large for any target")
    for tensor in graph.tensors:
        dtype = _DTYPES[tensor.type_code]
        problem = oversize_problem(tensor.shape, dtype.bits)
        if problem:
            problems.add(f"{_tensor_label(tensor)} {dtype.name}{problem}")
    problems.raise_if_any()


def _check_c_types(model: str, flat: TfliteModel, graph: TfliteSubgraph, op_names: list[str]) -> None:
    """Every tensor the bundle holds has a C99 type. Exempt: float16 constants only DEQUANTIZE reads (the
    float16-quantized format: TVM imports them as float32 constants) and constant weights of a quantized
    integer type (int4), which integer kernels read."""
    readers: dict[int, set[str]] = {}
    for op, name in zip(graph.operators, op_names, strict=True):
        for index in op.inputs:
            readers.setdefault(index, set()).add(name)
    problems = ProblemList(
        model, ErrorKind.TENSOR, "tensors of a type C99 has no portable type for", "convert the model to float32"
    )
    for tensor in graph.tensors:
        dtype = _DTYPES[tensor.type_code]
        constant = _is_constant(flat, tensor) and tensor.index not in graph.outputs
        dequantized = dtype.name == "float16" and readers.get(tensor.index, set()) <= {_DEQUANTIZE}
        if not has_c_type(dtype.name) and not (constant and (dequantized or dtype.integer)):
            problems.add(f"{_tensor_label(tensor)} is {dtype.name}")
    problems.raise_if_any()


def _scales_fit_axis(quant: TfliteQuantization, shape: tuple[int, ...]) -> bool:
    """Whether a per-channel tensor has one scale per element of its quantized dimension. A 1-D tensor
    whose scale count equals its length is quantized along its only axis, whatever dimension the file
    names: TFLite's converter writes the weights' dimension (3) on depthwise biases, and TFLite Micro,
    our int8 reference, runs such files."""
    if len(shape) == 1:
        return shape[0] == quant.scales
    return 0 <= quant.dimension < len(shape) and shape[quant.dimension] == quant.scales


def _zero_point_problem(quant: TfliteQuantization, dtype: _DType) -> str | None:
    """What is wrong with a tensor's zero points, if anything: TFLite's per-channel quantization has every
    zero point 0, and a zero point must be a value of the tensor's type."""
    low, high = quant.zero_point_range
    if quant.scales > 1 and (low, high) != (0, 0):
        return f"has per-channel zero points in [{low}, {high}]; per-channel quantization needs them all 0"
    if dtype.integer and not dtype.value_range[0] <= low <= high <= dtype.value_range[1]:
        return f"has zero points in [{low}, {high}], outside {dtype.name}'s range"
    return None


def _check_buffers(model: str, flat: TfliteModel, graph: TfliteSubgraph) -> None:
    problems = ProblemList(model, ErrorKind.BUFFER, "constant data does not match its tensor")
    for buffer_index, buffer in enumerate(flat.buffers):
        if buffer.offset > 1 and buffer.offset + buffer.size > flat.file_bytes:
            problems.add(
                f"buffer {buffer_index} data at offset {buffer.offset} runs past the end of the file"
            )
    for tensor in graph.tensors:
        buffer = flat.buffers[tensor.buffer]
        held = buffer.size if buffer.offset > 1 else len(buffer.data)
        if held == 0 or tensor.sparse:
            continue
        needed = _tensor_bytes(tensor)
        if held != needed:
            problems.add(
                f"{_tensor_label(tensor)} {list(tensor.shape)} {_DTYPES[tensor.type_code].name} "
                f"needs {needed} bytes, "
                f"buffer {tensor.buffer} holds {held}"
            )
    problems.raise_if_any()


def _tensor_bytes(tensor: TfliteTensor) -> int:
    """Bytes of a tensor's data, from its shape and type (both checked by `_check_tensors`)."""
    return tensor_bytes(tensor.shape, _DTYPES[tensor.type_code].bits)


def _weight_bytes(flat: TfliteModel, graph: TfliteSubgraph) -> int:
    """Bytes of the graph's constant tensors, each counted (TVM's import makes a constant of each, also of
    tensors that share one buffer)."""
    return sum(_tensor_bytes(tensor) for tensor in graph.tensors if _is_constant(flat, tensor))


def _operator_names(model: str, flat: TfliteModel, graph: TfliteSubgraph) -> list[str]:
    """Each operator's name ("CONV_2D", "CUSTOM:Foo", ...), checking its code and version are known."""
    builtins = builtin_names()
    problems = ProblemList(model, ErrorKind.OPERATOR_VERSION, "unknown operator")
    names = []
    for op in graph.operators:
        code = flat.opcodes[op.opcode_index]
        layer = quote(_layer(graph, op))
        if code.builtin_code == _CUSTOM_BUILTIN:
            custom = code.custom_code or ""
            names.append(TFLITE_CUSTOM_CODES.get(custom, f"CUSTOM:{custom}"))
            continue
        name = builtins.get(code.builtin_code)
        if name is None:
            problems.add(f"operator code {code.builtin_code} at layer {layer} is not a TFLite builtin")
            names.append(f"BUILTIN:{code.builtin_code}")
            continue
        low, high = known_versions(name)
        if not low <= code.version <= high:
            problems.add(f"{name} version {code.version} at layer {layer} (known versions {low}..{high})")
        names.append(name)
    problems.raise_if_any()
    return names


def _is_constant(flat: TfliteModel, tensor: TfliteTensor) -> bool:
    buffer = flat.buffers[tensor.buffer]
    return len(buffer.data) > 0 or buffer.offset > 1


def _check_graph(model: str, flat: TfliteModel, graph: TfliteSubgraph, op_names: list[str]) -> None:
    problems = ProblemList(model, ErrorKind.GRAPH, "bad graph")
    if not graph.operators:
        problems.add("the graph has no operators")
    inputs, outputs = set(graph.inputs), set(graph.outputs)
    written = set(inputs) | {t.index for t in graph.tensors if _is_constant(flat, t) or t.is_variable}
    read: set[int] = set()
    for op, name in zip(graph.operators, op_names, strict=True):
        layer = quote(_layer(graph, op))
        for index in op.inputs:
            if index >= 0 and index not in written:
                problems.add(
                    f"{name} at layer {layer} reads {_tensor_label(graph.tensors[index])} "
                    "before anything writes it"
                )
            read.add(index)
        for index in op.outputs:
            if index in inputs or _is_constant(flat, graph.tensors[index]):
                problems.add(f"{name} at layer {layer} overwrites {_tensor_label(graph.tensors[index])}")
            written.add(index)
    for index in graph.inputs:
        if index in outputs:
            problems.add(f"{_tensor_label(graph.tensors[index])} is both a model input and a model output")
        elif index not in read:
            problems.add(f"model input {_tensor_label(graph.tensors[index])} is not read by any operator")
    for index in graph.outputs:
        if index not in written:
            problems.add(f"model output {_tensor_label(graph.tensors[index])} is never written")
    if not graph.inputs:
        problems.add("the model has no inputs")
    if not graph.outputs:
        problems.add("the model has no outputs")
    problems.raise_if_any()


def _check_constant_inputs(model: str, flat: TfliteModel, graph: TfliteSubgraph) -> None:
    """Refuse model inputs whose buffer holds data: the caller fills an input, and LiteRT crashes (a
    segmentation fault, not an error) when asked to set one."""
    problems = ProblemList(model, ErrorKind.GRAPH, "bad graph")
    for index in graph.inputs:
        tensor = graph.tensors[index]
        if _is_constant(flat, tensor):
            problems.add(f"model input {_tensor_label(tensor)} has constant data (buffer {tensor.buffer})")
    problems.raise_if_any()


def _check_offline_plan(model: str, flat: TfliteModel) -> None:
    """Bounds-check TFLite Micro's offline memory plan metadata, if present.

    Layout (int32 little-endian): version, subgraph index, n, then n byte offsets, one per tensor of that
    subgraph, -1 meaning "plan at run time".
    """
    problems = ProblemList(model, ErrorKind.MEMORY_PLAN, f"bad {OFFLINE_PLAN_METADATA} metadata")
    for name, buffer_index in flat.metadata:
        if name != OFFLINE_PLAN_METADATA:
            continue
        data = flat.buffers[buffer_index].data
        words = len(data) // 4
        if len(data) % 4 or words < OFFLINE_PLAN_HEADER_WORDS:
            problems.add(
                f"buffer {buffer_index} holds {len(data)} bytes, not a whole int32 header and offsets"
            )
            continue
        values = np.frombuffer(data, dtype="<i4")
        version, subgraph, count = (int(v) for v in values[:OFFLINE_PLAN_HEADER_WORDS])
        offsets = values[OFFLINE_PLAN_HEADER_WORDS:]
        if version != OFFLINE_PLAN_VERSION:
            problems.add(f"format version {version}, known: {OFFLINE_PLAN_VERSION}")
        if not 0 <= subgraph < len(flat.subgraphs):
            problems.add(f"subgraph index {subgraph} of {len(flat.subgraphs)}")
            continue
        n_tensors = len(flat.subgraphs[subgraph].tensors)
        if count != n_tensors:
            problems.add(f"declares {count} offsets for a subgraph of {n_tensors} tensors")
        if count != len(offsets):
            problems.add(f"declares {count} offsets but holds {len(offsets)}")
        bad = [int(v) for v in offsets if v < -1]
        if bad:
            problems.add(f"{len(bad)} negative offsets other than -1 (first {bad[0]})")
        elif count == n_tensors == len(offsets):
            for tensor, offset in zip(flat.subgraphs[subgraph].tensors, offsets, strict=True):
                end = int(offset) + _tensor_bytes(tensor)
                if offset >= 0 and end > MAX_TENSOR_BYTES:
                    problems.add(
                        f"{_tensor_label(tensor)} at offset {int(offset)} ends past {MAX_TENSOR_BYTES} bytes"
                    )
    problems.raise_if_any()


def _is_quantized(tensor: TfliteTensor) -> bool:
    return tensor.quantization is not None and _DTYPES[tensor.type_code].integer


def _has_int16_activations(graph: TfliteSubgraph, op: TfliteOperator) -> bool:
    """Whether the operator's first input and first output are int16 (a 16x8 operator)."""
    ends = [graph.tensors[i] for i in (op.inputs[:1] + op.outputs[:1]) if i >= 0]
    return len(ends) == 2 and all(_DTYPES[t.type_code].name == "int16" for t in ends)


def _check_hybrid(model: str, flat: TfliteModel, graph: TfliteSubgraph, op_names: list[str]) -> None:
    """Refuse operators with a float activation input and integer constant weights, grouped by operator."""
    hybrid: dict[tuple[str, str], list[str]] = {}
    for op, name in zip(graph.operators, op_names, strict=True):
        tensors = [graph.tensors[i] for i in op.inputs if i >= 0]
        float_activation = any(t.type_code == _FLOAT32 and not _is_constant(flat, t) for t in tensors)
        weights = [t for t in tensors if _DTYPES[t.type_code].name in _WEIGHT_TYPES and _is_constant(flat, t)]
        if float_activation and weights:
            hybrid.setdefault((name, _DTYPES[weights[0].type_code].name), []).append(_layer(graph, op))
    problems = ProblemList(model, ErrorKind.HYBRID, "hybrid (dynamic-range quantized) model", "not supported")
    for (name, weight_dtype), layers in hybrid.items():
        problems.add(f"operator {name} at {layers_phrase(layers)} has float input and {weight_dtype} weights")
    problems.raise_if_any()


def _check_quantized_operators(model: str, graph: TfliteSubgraph, op_names: list[str]) -> None:
    """In an operator with quantized tensors, every tensor of a quantizable integer type has a scale:
    TFLite's integer kernels cannot run without one (TFLite Micro's signal operators read raw integers, and
    no scale)."""
    unscaled: dict[int, list[str]] = {}  # tensor index -> layers of the quantized operators using it
    for op, name in zip(graph.operators, op_names, strict=True):
        if name in SIGNAL_OPERATORS:
            continue
        tensors = [graph.tensors[i] for i in (*op.inputs, *op.outputs) if i >= 0]
        if any(_is_quantized(t) for t in tensors):
            for tensor in tensors:
                if _DTYPES[tensor.type_code].integer and tensor.quantization is None:
                    unscaled.setdefault(tensor.index, []).append(f"{_layer(graph, op)} ({name})")
    problems = ProblemList(model, ErrorKind.TENSOR, "bad tensor")
    for index, layers in unscaled.items():
        problems.add(f"{_tensor_label(graph.tensors[index])} has no quantization scale, yet quantized "
                     f"operators use it at {layers_phrase(layers)}")
    problems.raise_if_any()


def _check_requantization_multipliers(model: str, graph: TfliteSubgraph, op_names: list[str]) -> None:
    """Each quantized CONV/FULLY_CONNECTED's multipliers, input scale x weight scale / output scale per
    channel, are ones TFLite's QuantizeMultiplier can express: none of 2^30 or more (a shift above 30), and not
    all below 2^-32 (flushed to zero, the output would not depend on the input). Some channels flushing to
    zero is TFLite's own behaviour and real models have it."""
    problems = ProblemList(model, ErrorKind.TENSOR, "requantization multipliers TFLite cannot express")
    for op, name in zip(graph.operators, op_names, strict=True):
        if name not in _WEIGHTED_OPERATORS or len(op.inputs) < 2 or not op.outputs:
            continue
        tensors = [graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]) if i >= 0]
        if len(tensors) < 3 or not all(_is_quantized(t) for t in tensors):
            continue
        (in_low, in_high), (w_low, w_high), (out_low, out_high) = (t.quantization.scale_range for t in tensors)
        low, high = in_low * w_low / out_high, in_high * w_high / out_low
        if not _MIN_MULTIPLIER_SHIFT <= _quantize_multiplier_shift(high) <= _MAX_MULTIPLIER_SHIFT:
            problems.add(
                f"{_tensor_label(tensors[2])} of {name} at layer {quote(_layer(graph, op))}: input scale x weight "
                f"scale / output scale in [{low:.3g}, {high:.3g}], its largest outside [2^-32, 2^30)"
            )
    problems.raise_if_any()


def _quantize_multiplier_shift(multiplier: float) -> int:
    """The shift TFLite's QuantizeMultiplier gives a positive `multiplier` before flushing or saturating:
    frexp's exponent, one more when the Q31 fraction rounds up to 2^31."""
    fraction, shift = math.frexp(multiplier)
    return shift + 1 if round(fraction * 2**31) == 2**31 else shift


def _operator_refusals(model: str, graph: TfliteSubgraph, op_names: list[str],
                       refuse_unsupported: bool) -> list[str | None]:
    """Why our compiler refuses each operator ("int8 GATHER (indices read at run time: ...)"), None where it is
    supported; with `refuse_unsupported`, ModelError(UNSUPPORTED_OPERATOR) listing them instead."""
    refusals: list[str | None] = []
    refused: dict[tuple[str, str], list[str]] = {}
    # SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND framing a convolution: one dilated convolution to our import.
    in_dilated_convolutions = {index for chain in dilated_convolution_chains(graph, op_names)
                               for index in (chain.space_to_batch, chain.batch_to_space)}
    for op, name in zip(graph.operators, op_names, strict=True):
        tensors = [graph.tensors[i] for i in (*op.inputs, *op.outputs) if i >= 0]
        quantized = any(_is_quantized(t) for t in tensors)
        int16 = _has_int16_activations(graph, op)
        if name.startswith("CUSTOM:"):
            reason = "custom operator"
        elif name in DILATION_FRAMES and op.index in in_dilated_convolutions and not int16:
            reason = None
        else:
            reason = tflite_refusal(name, quantized, int16)
        label = f"{'16x8' if int16 else 'int8'} {name}" if quantized else name
        refusals.append(None if reason is None else f"{label} ({reason})")
        if reason is not None:
            refused.setdefault((label, reason), []).append(_layer(graph, op))
    if refuse_unsupported:
        refuse_unsupported_operators(model, refused)
    return refusals


def _check_signal_operators(model: str, flat: TfliteModel, graph: TfliteSubgraph, op_names: list[str]) -> None:
    """Each of TFLite Micro's signal-library operators has the custom options its kernel reads and tensors it
    can run on (`signal_ops`: TFLite Micro checks neither, and would read or write out of bounds)."""
    problems = ProblemList(model, ErrorKind.OPERATOR, "signal-library operators TFLite Micro cannot run as given")
    for op, name in zip(graph.operators, op_names, strict=True):
        if name not in SIGNAL_OPERATORS:
            continue
        spec = SIGNAL_OPERATORS[name]
        try:
            options = read_options(spec, op.custom_options)
            problem = operator_problem(spec, options, [_tensor_view(flat, graph, i) for i in op.inputs],
                                       [_tensor_view(flat, graph, i) for i in op.outputs])
        except SignalOptionsError as err:
            problem = str(err)
        if problem is not None:
            problems.add(f"{name} at layer {quote(_layer(graph, op))}: {problem}")
    problems.raise_if_any()


def _tensor_view(flat: TfliteModel, graph: TfliteSubgraph, index: int) -> TensorView:
    """An operator's tensor as `signal_ops` reads it (an omitted input: an empty float32 tensor, which no
    signal operator reads)."""
    if index < 0:
        return TensorView((0,), "float32")
    tensor = graph.tensors[index]
    dtype = _DTYPES[tensor.type_code].name
    data = flat.buffers[tensor.buffer].data
    whole_bytes = _DTYPES[tensor.type_code].bits % 8 == 0  # int4 constants are packed
    values = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")) if len(data) and whole_bytes else None
    return TensorView(tensor.shape, dtype, values)


def _facts(path: str, flat: TfliteModel, graph: TfliteSubgraph, op_names: list[str],
           refusals: list[str | None]) -> ModelFacts:
    def tensor_facts(index: int) -> TensorFacts:
        tensor = graph.tensors[index]
        return TensorFacts(tensor.name, tensor.shape, _DTYPES[tensor.type_code].name)

    operators = tuple(
        OperatorFacts(name, _layer(graph, op), flat.opcodes[op.opcode_index].version, refusal)
        for op, name, refusal in zip(graph.operators, op_names, refusals, strict=True)
    )
    return ModelFacts(
        path=path,
        format=ModelFormat.TFLITE,
        inputs=tuple(tensor_facts(i) for i in graph.inputs),
        outputs=tuple(tensor_facts(i) for i in graph.outputs),
        operators=operators,
        quantized=any(_is_quantized(t) for t in graph.tensors),
        weight_bytes=_weight_bytes(flat, graph),
        state_bytes=sum(_tensor_bytes(tensor) for tensor in graph.tensors if tensor.is_variable),
    )
