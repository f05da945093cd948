"""Bad models for the model check, generated at test time (no binary blobs in the repository).

Three sources:
- real models (../shared/models or $TVM_EXT_MODELS) patched in place: truncations, byte flips, wrong
  identifier, huge or negative shape dims, out-of-range buffer/tensor/opcode indices, huge vector lengths;
- a tiny TFLite model written with the `tflite` package's flatbuffer builder, then varied field by field:
  two subgraphs, unknown operator version, short constant buffer, hybrid weights, unsupported operators,
  offline memory-plan metadata (valid and broken), an input that is also the output, no operators,
  an input with constant data, a refused layer whose name forges a second error line;
- small ONNX models written with onnx.helper: a cycle, an empty graph, an input that is also the output,
  dynamic input shapes, wrong initializer sizes, unsupported operators, external data, checker failures,
  constant indices outside their axis (valid to the check; the compiler refuses them), an input only an If
  branch reads, a sparse initializer, a node named with terminal escapes;
plus files that are not models at all (empty, text).

Each case says which ErrorKind it must raise, or None when the mutation may be harmless (random flips and
truncations: then the check must either pass or raise ModelError, nothing else); the valid baselines the
variants start from are marked `must_pass`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import signal
import struct
from collections.abc import Callable, Iterator
from typing import Any
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from tvm_ext.model_check import ErrorKind
from tflite_builder import Quantization, quantization_table
from tflite_builder import build as build_model

REPO_ROOT = Path(__file__).resolve().parents[1]
TRUNCATION_LENGTHS = (4, 7, 8, 12, 16, 24, 64, 256)  # plus half and all-but-one byte of each model
FLIPS_PER_MODEL = 24
# A case still running after this many seconds is a hang (checks take milliseconds; the first one that
# reads TVM's converter lists imports TVM, a few seconds on a loaded machine).
HANG_GUARD_SECONDS = 120


class Hang(Exception):
    """Raised inside a check that outlived the hang guard."""


@contextlib.contextmanager
def hang_guard(seconds: int = HANG_GUARD_SECONDS) -> Iterator[None]:
    """Interrupt the block with `Hang` if it runs longer than `seconds` (SIGALRM: main thread, POSIX)."""

    def interrupt(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class BadModel:
    """One corpus entry: bytes to write under `file_name` (its extension picks the format)."""

    case: str
    file_name: str
    data: bytes
    expected: ErrorKind | None  # None: the mutation may be harmless (or, with must_pass, is a valid model)
    must_pass: bool = False


def shared_models_dir() -> Path:
    return Path(os.environ.get("TVM_EXT_MODELS", REPO_ROOT.parent / "shared" / "models"))


def shared_tflite_models() -> list[Path]:
    return sorted(shared_models_dir().glob("*/*.tflite"))


# ----------------------------------------------------------------------------------------------------------
# Patching real TFLite files in place. Positions come from the flatbuffer tables the `tflite` package reads.


def _root(data: bytes):
    import tflite

    return tflite.Model.GetRootAsModel(data, 0)


def _field_position(table, vtable_offset: int) -> int:
    """Absolute position of a scalar field (or of the uoffset to a vector) in the file; 0 if absent."""
    relative = table._tab.Offset(vtable_offset)
    return table._tab.Pos + relative if relative else 0


def _vector_position(table, vtable_offset: int) -> int:
    """Absolute position of a vector's first element (its uint32 length is just before)."""
    return table._tab.Vector(table._tab.Offset(vtable_offset))


def _patch(data: bytes, position: int, fmt: str, value: int) -> bytes:
    patched = bytearray(data)
    struct.pack_into(fmt, patched, position, value)
    return bytes(patched)


# vtable offsets of the fields patched (schema.fbs field id i sits at 4 + 2 * i)
_TENSOR_SHAPE, _TENSOR_BUFFER = 4, 8
_OPERATOR_OPCODE_INDEX, _OPERATOR_INPUTS = 4, 6
_SUBGRAPH_TENSORS = 4


def real_tflite_cases(path: Path) -> list[BadModel]:
    """Targeted and random corruptions of one real .tflite file."""
    data = path.read_bytes()
    name = path.name
    graph = _root(data).Subgraphs(0)
    input_tensor = graph.Tensors(int(graph.InputsAsNumpy()[0]))
    operator = graph.Operators(0)
    shape_at = _vector_position(input_tensor, _TENSOR_SHAPE)
    huge_shape = _patch(_patch(data, shape_at, "<i", 2**31 - 1), shape_at + 4, "<i", 2**31 - 1)
    cases = [
        BadModel("wrong identifier", name, data[:4] + b"TFL2" + data[8:], ErrorKind.FORMAT),
        BadModel("huge declared shape", name, huge_shape, ErrorKind.TENSOR),
        BadModel("negative shape dim", name, _patch(data, shape_at, "<i", -1), ErrorKind.TENSOR),
        BadModel(
            "operator reads tensor -5",
            name,
            _patch(data, _vector_position(operator, _OPERATOR_INPUTS), "<i", -5),
            ErrorKind.INDEX,
        ),
        BadModel(
            "huge declared tensor vector",
            name,
            _patch(data, _vector_position(graph, _SUBGRAPH_TENSORS) - 4, "<I", 2**31 - 1),
            ErrorKind.STRUCTURE,
        ),
        BadModel("root offset past the end", name, _patch(data, 0, "<I", len(data) + 4), ErrorKind.STRUCTURE),
    ]
    # A tensor's buffer index is stored only when it is not the default 0: patch the first tensor that has one.
    for i in range(graph.TensorsLength()):
        buffer_at = _field_position(graph.Tensors(i), _TENSOR_BUFFER)
        if buffer_at:
            cases.append(BadModel("negative buffer index", name, _patch(data, buffer_at, "<i", -1), ErrorKind.INDEX))
            break
    # The opcode index is stored only when it is not the default 0: patch the first operator that has one.
    for i in range(graph.OperatorsLength()):
        opcode_at = _field_position(graph.Operators(i), _OPERATOR_OPCODE_INDEX)
        if opcode_at:
            cases.append(
                BadModel(
                    "opcode index out of range", name, _patch(data, opcode_at, "<I", 1000), ErrorKind.INDEX
                )
            )
            break
    lengths = (*TRUNCATION_LENGTHS, len(data) // 2, len(data) - 1)
    cases += [BadModel(f"truncated to {n} bytes", name, data[:n], None) for n in lengths if n < len(data)]
    rng = random.Random(name)
    for i in range(FLIPS_PER_MODEL):
        flipped = bytearray(data)
        position = (
            rng.randrange(len(data)) if i % 2 else rng.randrange(min(len(data), 4096))
        )  # half in the tables
        flipped[position] ^= 1 << rng.randrange(8)
        cases.append(BadModel(f"bit flip at byte {position}", name, bytes(flipped), None))
    return cases


# ----------------------------------------------------------------------------------------------------------
# A tiny TFLite model written with the flatbuffer builder: input [1,4] -> FULLY_CONNECTED -> output [1,3].

FLOAT32, FLOAT16, INT32, INT8 = 0, 1, 2, 9
FULLY_CONNECTED, RELU, CUSTOM, SUB = 9, 19, 32, 41


@dataclass
class TinyTensor:
    name: str | bytes  # bytes are written as they are (a name that is not UTF-8)
    shape: tuple[int, ...]
    type_code: int
    buffer: int
    zero_points: tuple[int, ...] = ()  # one per scale, on dimension 0; none: not quantized
    scale: float = 0.05
    variable: bool = False  # a variable tensor (e.g. SVDF's state)


@dataclass
class TinyOperator:
    opcode_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # An all-defaults FullyConnectedOptions table (TFLite reads a missing one as defaults; TVM's converter
    # requires it).
    fully_connected_options: bool = False
    # Writes another options table with the builder: returns (its tflite.BuiltinOptions type, its offset).
    builtin_options: Callable[[Any], tuple[int, int]] | None = None


@dataclass
class TinyTflite:
    """Everything the builder writes; defaults form a valid float FULLY_CONNECTED model."""

    opcodes: list[tuple[int, int, str | None]] = field(default_factory=lambda: [(FULLY_CONNECTED, 1, None)])
    tensors: list[TinyTensor] = field(
        default_factory=lambda: [
            TinyTensor("input", (1, 4), FLOAT32, 0),
            TinyTensor("weights", (3, 4), FLOAT32, 1),
            TinyTensor("bias", (3,), FLOAT32, 2),
            TinyTensor("dense/output", (1, 3), FLOAT32, 0),
        ]
    )
    operators: list[TinyOperator] = field(default_factory=lambda: [TinyOperator(0, (0, 1, 2), (3,), True)])
    inputs: tuple[int, ...] = (0,)
    outputs: tuple[int, ...] = (3,)
    buffers: list[bytes] = field(
        default_factory=lambda: [
            b"",
            np.arange(12, dtype="<f4").tobytes(),
            np.zeros(3, dtype="<f4").tobytes(),
        ]
    )
    metadata: list[tuple[str, int]] = field(default_factory=list)
    subgraph_copies: int = 1


class _IntVectors:
    """Writes int32 vectors, sharing identical ones (flatbuffers allows it; crafted files use it)."""

    def __init__(self, builder) -> None:
        self.builder = builder
        self.written: dict[tuple[int, ...], int] = {}
        self.by_identity: dict[int, tuple[tuple[int, ...], int]] = {}
        """id(tuple) -> (the tuple, kept alive so that its id is not reused; its vector's offset): one tuple read by
        many operators (`_aliased_vectors`: 20,000 times a 20,000-entry tuple) is then not hashed again for each (a
        tuple does not keep its hash: 3 CPU-seconds for that case, in each process that builds the corpus)."""

    def __call__(self, values: tuple[int, ...]) -> int:
        known = self.by_identity.get(id(values))
        if known is not None and known[0] is values:
            return known[1]
        if values not in self.written:
            self.builder.StartVector(4, len(values), 4)
            for value in reversed(values):
                self.builder.PrependInt32(value)
            self.written[values] = self.builder.EndVector()
        self.by_identity[id(values)] = values, self.written[values]
        return self.written[values]


def _table_vector(builder, offsets: list[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def subgraph_table(builder, tensors: int, operators: int, inputs: int, outputs: int) -> int:
    """A SubGraph table of vectors already written (offsets in `builder`)."""
    import tflite

    tflite.SubGraphStart(builder)
    tflite.SubGraphAddTensors(builder, tensors)
    tflite.SubGraphAddOperators(builder, operators)
    tflite.SubGraphAddInputs(builder, inputs)
    tflite.SubGraphAddOutputs(builder, outputs)
    return tflite.SubGraphEnd(builder)


def build_tflite(spec: TinyTflite) -> bytes:
    """Serialize `spec` as a .tflite flatbuffer with the "TFL3" identifier."""
    import flatbuffers
    import tflite

    b = flatbuffers.Builder(1024)
    int_vector = _IntVectors(b)
    buffers = []
    for data in spec.buffers:
        vector = b.CreateByteVector(data) if data else None
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffers.append(tflite.BufferEnd(b))
    tensors = []
    for tensor in spec.tensors:
        name = b.CreateString(tensor.name)
        shape = int_vector(tensor.shape)
        quant = None
        if tensor.zero_points:
            scales = (tensor.scale,) * len(tensor.zero_points)
            quant = quantization_table(b, Quantization(scales, tensor.zero_points))
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, tensor.type_code)
        tflite.TensorAddBuffer(b, tensor.buffer)
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if tensor.variable:
            tflite.TensorAddIsVariable(b, True)
        tensors.append(tflite.TensorEnd(b))
    operators = []
    for op in spec.operators:
        inputs, outputs = int_vector(op.inputs), int_vector(op.outputs)
        if op.fully_connected_options:
            tflite.FullyConnectedOptionsStart(b)
            options = tflite.FullyConnectedOptionsEnd(b)
        if op.builtin_options is not None:
            options_type, options = op.builtin_options(b)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, op.opcode_index)
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if op.fully_connected_options:
            tflite.OperatorAddBuiltinOptionsType(b, tflite.BuiltinOptions.FullyConnectedOptions)
            tflite.OperatorAddBuiltinOptions(b, options)
        if op.builtin_options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, options_type)
            tflite.OperatorAddBuiltinOptions(b, options)
        operators.append(tflite.OperatorEnd(b))
    subgraphs = []
    for _ in range(spec.subgraph_copies):
        tensor_vector, operator_vector = _table_vector(b, tensors), _table_vector(b, operators)
        inputs, outputs = int_vector(spec.inputs), int_vector(spec.outputs)
        subgraphs.append(subgraph_table(b, tensor_vector, operator_vector, inputs, outputs))
    opcodes = []
    for builtin, version, custom in spec.opcodes:
        custom_name = b.CreateString(custom) if custom else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, builtin)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))
        tflite.OperatorCodeAddVersion(b, version)
        if custom_name is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_name)
        opcodes.append(tflite.OperatorCodeEnd(b))
    metadata = []
    for name, buffer in spec.metadata:
        name_offset = b.CreateString(name)
        tflite.MetadataStart(b)
        tflite.MetadataAddName(b, name_offset)
        tflite.MetadataAddBuffer(b, buffer)
        metadata.append(tflite.MetadataEnd(b))
    vectors = [_table_vector(b, items) for items in (opcodes, subgraphs, buffers, metadata)]
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, vectors[0])
    tflite.ModelAddSubgraphs(b, vectors[1])
    tflite.ModelAddBuffers(b, vectors[2])
    if metadata:
        tflite.ModelAddMetadata(b, vectors[3])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _offline_plan(words: list[int]) -> bytes:
    return np.array(words, dtype="<i4").tobytes()


def _with_offline_plan(words: list[int]) -> TinyTflite:
    spec = TinyTflite()
    spec.buffers.append(_offline_plan(words))
    spec.metadata.append(("OfflineMemoryAllocation", 3))
    return spec


def _hybrid() -> TinyTflite:
    spec = TinyTflite()
    spec.tensors[1] = TinyTensor("weights_int8", (3, 4), INT8, 1, zero_points=(0,))
    spec.buffers[1] = np.arange(12, dtype=np.int8).tobytes()
    return spec


def _int8_fully_connected(
    input_zero_point: int = 0, weight_zero_points: tuple[int, ...] = (0,), output_quantized: bool = True
) -> TinyTflite:
    """The tiny model's FULLY_CONNECTED in int8 (int32 bias), with the quantization a case gets wrong."""
    spec = TinyTflite()
    spec.tensors = [
        TinyTensor("input", (1, 4), INT8, 0, zero_points=(input_zero_point,)),
        TinyTensor("weights", (3, 4), INT8, 1, zero_points=weight_zero_points),
        # TFLite's rule for integer kernels: bias scale = input scale x weight scale.
        TinyTensor("bias", (3,), INT32, 2, zero_points=(0,) * len(weight_zero_points), scale=0.05 * 0.05),
        TinyTensor("dense/output", (1, 3), INT8, 0, zero_points=(0,) if output_quantized else ()),
    ]
    spec.buffers = [b"", np.arange(-6, 6, dtype=np.int8).tobytes(), np.arange(3, dtype="<i4").tobytes()]
    return spec


def _int8_sub_and_custom() -> TinyTflite:
    spec = TinyTflite()
    spec.opcodes = [(SUB, 1, None), (CUSTOM, 1, "MyVendorOp")]
    spec.tensors = [
        TinyTensor("input", (1, 4), INT8, 0, zero_points=(0,)),
        TinyTensor("offset", (1, 4), INT8, 1, zero_points=(0,)),
        TinyTensor("sub/output", (1, 4), INT8, 0, zero_points=(0,)),
        TinyTensor("vendor/output", (1, 4), INT8, 0, zero_points=(0,)),
    ]
    spec.buffers = [b"", bytes(4)]
    spec.operators = [TinyOperator(0, (0, 1), (2,)), TinyOperator(1, (2,), (3,))]
    spec.outputs = (3,)
    return spec


def constant_input() -> TinyTflite:
    """The tiny model with constant data in its input's buffer (LiteRT segfaults setting such an input)."""
    spec = TinyTflite()
    spec.buffers.append(np.ones(4, dtype="<f4").tobytes())
    spec.tensors[0] = replace(spec.tensors[0], buffer=len(spec.buffers) - 1)
    return spec


def _aliased_vectors() -> TinyTflite:
    """20,000 operators reading one shared 20,000-entry vector: 4e8 entries declared in a ~0.5 MB file."""
    spec = TinyTflite()
    reads = (0,) * 20_000
    spec.operators = [TinyOperator(0, reads, (3,)) for _ in range(20_000)]
    return spec


def _hostile_names() -> TinyTflite:
    from hostile_names import hostile_tflite  # imports this module: loaded on first use

    return hostile_tflite()


def with_scales(spec: TinyTflite, scales: dict[str, float]) -> TinyTflite:
    """`spec` with the quantization scale of each named tensor replaced."""
    spec.tensors = [replace(t, scale=scales.get(t.name, t.scale)) for t in spec.tensors]
    return spec


def float16_input_tflite() -> TinyTflite:
    spec = TinyTflite()
    spec.tensors[0] = replace(spec.tensors[0], type_code=FLOAT16)
    return spec


OVERSIZED_ELEMENTS = 2**25  # float32: 128 MiB, more than any built-in profile's memory (hifi4: 64 MiB flash)


def oversized_relu_tflite() -> TinyTflite:
    """input [1, 2^25] -> RELU -> output: every byte of it declared, none of it stored in the file."""
    shape = (1, OVERSIZED_ELEMENTS)
    return TinyTflite(
        opcodes=[(RELU, 1, None)],
        tensors=[TinyTensor("input", shape, FLOAT32, 0), TinyTensor("relu/output", shape, FLOAT32, 0)],
        operators=[TinyOperator(0, (0,), (1,))],
        inputs=(0,),
        outputs=(1,),
        buffers=[b""],
    )


LARGE_IO_ELEMENTS = 2**24  # float32: 64 MiB, the largest tensor a target (hifi4's flash) holds, as input and output


def large_io_relu_tflite() -> TinyTflite:
    """input [1, 2^24] -> RELU -> output: each tensor fits a target, together they are 128 MiB of self-test data."""
    spec = oversized_relu_tflite()
    spec.tensors = [replace(tensor, shape=(1, LARGE_IO_ELEMENTS)) for tensor in spec.tensors]
    return spec


def too_many_operators_tflite() -> TinyTflite:
    """The tiny model's FULLY_CONNECTED repeated MAX_OPERATORS + 1 times, all sharing its tensors."""
    from tvm_ext.model_check.limits import MAX_OPERATORS

    spec = TinyTflite()
    spec.operators = spec.operators * (MAX_OPERATORS + 1)
    return spec


TINY_TFLITE_VARIANTS: dict[str, tuple[Callable[[], TinyTflite], ErrorKind | None]] = {
    "valid tiny model": (TinyTflite, None),
    "valid int8 tiny model": (_int8_fully_connected, None),
    "valid tiny model with hostile tensor names": (_hostile_names, None),
    "int8 output without a scale": (lambda: _int8_fully_connected(output_quantized=False), ErrorKind.TENSOR),
    "zero point outside int8": (lambda: _int8_fully_connected(input_zero_point=200), ErrorKind.TENSOR),
    "per-channel weights with a non-zero zero point": (
        lambda: _int8_fully_connected(weight_zero_points=(0, 5, 0)),
        ErrorKind.TENSOR,
    ),
    "denormal quantization scale": (
        lambda: with_scales(_int8_fully_connected(), {"input": 1e-45}),
        ErrorKind.TENSOR,
    ),
    "requantization multiplier above 2^30": (
        lambda: with_scales(_int8_fully_connected(), {"dense/output": 1e-30}),
        ErrorKind.TENSOR,
    ),
    "requantization multiplier below 2^-32": (
        lambda: with_scales(_int8_fully_connected(), {"input": 1e-15, "weights": 1e-15, "bias": 1e-30}),
        ErrorKind.TENSOR,
    ),
    "float16 input": (float16_input_tflite, ErrorKind.TENSOR),
    "tensor larger than any target": (oversized_relu_tflite, ErrorKind.TENSOR),
    "64 MiB input and output": (large_io_relu_tflite, ErrorKind.RESOURCES),
    "more operators than the limit": (too_many_operators_tflite, ErrorKind.RESOURCES),
    "two subgraphs": (lambda: replace(TinyTflite(), subgraph_copies=2), ErrorKind.SUBGRAPHS),
    "no subgraph": (lambda: replace(TinyTflite(), subgraph_copies=0), ErrorKind.SUBGRAPHS),
    "operator version 99": (
        lambda: replace(TinyTflite(), opcodes=[(FULLY_CONNECTED, 99, None)]),
        ErrorKind.OPERATOR_VERSION,
    ),
    "unknown builtin code": (
        lambda: replace(TinyTflite(), opcodes=[(250, 1, None)]),
        ErrorKind.OPERATOR_VERSION,
    ),
    "short weight buffer": (
        lambda: replace(TinyTflite(), buffers=[b"", bytes(40), bytes(12)]),
        ErrorKind.BUFFER,
    ),
    "dynamic input shape": (
        lambda: replace(
            TinyTflite(), tensors=[TinyTensor("input", (-1, 4), FLOAT32, 0), *TinyTflite().tensors[1:]]
        ),
        ErrorKind.TENSOR,
    ),
    "string tensor": (
        lambda: replace(TinyTflite(), tensors=[TinyTensor("input", (1, 4), 5, 0), *TinyTflite().tensors[1:]]),
        ErrorKind.TENSOR,
    ),
    "input is also output": (lambda: replace(TinyTflite(), outputs=(0,)), ErrorKind.GRAPH),
    "no operators": (lambda: replace(TinyTflite(), operators=[]), ErrorKind.GRAPH),
    "input with constant data": (constant_input, ErrorKind.GRAPH),
    "reads a tensor nothing writes": (
        lambda: replace(TinyTflite(), operators=[TinyOperator(0, (3, 1, 2), (3,))]),
        ErrorKind.GRAPH,
    ),
    "hybrid int8 weights": (_hybrid, ErrorKind.HYBRID),
    "int8 SUB and a custom operator": (_int8_sub_and_custom, ErrorKind.UNSUPPORTED_OPERATOR),
    "a signal-library operator without its options": (
        lambda: replace(TinyTflite(), opcodes=[(CUSTOM, 1, "SignalFilterBankLog")]),
        ErrorKind.OPERATOR,
    ),
    "valid offline memory plan": (lambda: _with_offline_plan([1, 0, 4, -1, -1, -1, 0]), None),
    "offline plan with too few offsets": (
        lambda: _with_offline_plan([1, 0, 4, -1, 0]),
        ErrorKind.MEMORY_PLAN,
    ),
    "offline plan declaring a huge count": (
        lambda: _with_offline_plan([1, 0, 2**31 - 1, 0]),
        ErrorKind.MEMORY_PLAN,
    ),
    "offline plan for subgraph 7": (
        lambda: _with_offline_plan([1, 7, 4, -1, -1, -1, 0]),
        ErrorKind.MEMORY_PLAN,
    ),
    "offline plan shorter than its header": (lambda: _with_offline_plan([1]), ErrorKind.MEMORY_PLAN),
    "offline plan with offset -8": (
        lambda: _with_offline_plan([1, 0, 4, -1, -8, -1, 0]),
        ErrorKind.MEMORY_PLAN,
    ),
    "offline plan offset past 2 GiB": (
        lambda: _with_offline_plan([1, 0, 4, -1, -1, -1, 2**31 - 8]),
        ErrorKind.MEMORY_PLAN,
    ),
    "operators sharing one huge inputs vector": (_aliased_vectors, ErrorKind.STRUCTURE),
    "metadata buffer out of range": (
        lambda: replace(TinyTflite(), metadata=[("OfflineMemoryAllocation", 99)]),
        ErrorKind.INDEX,
    ),
}


def tiny_tflite_cases() -> list[BadModel]:
    from hostile_names import FORGED_LINE, unlowerable_softmax_tflite  # imports this module: loaded on first use

    return [
        BadModel(case, "tiny.tflite", build_tflite(make()), expected, must_pass=case.startswith("valid"))
        for case, (make, expected) in TINY_TFLITE_VARIANTS.items()
    ] + [BadModel("refused layer whose name forges an error line", "tiny.tflite",
                  build_model(unlowerable_softmax_tflite(f"out{FORGED_LINE}")), None)]


# ----------------------------------------------------------------------------------------------------------
# Small ONNX models written with onnx.helper.

ONNX_OPSET = 17


def small_onnx_model() -> onnx.ModelProto:
    """x[1,3,8,8] -> Conv(4 filters 3x3) -> Relu -> Flatten -> Gemm(4*6*6 -> 5) -> y[1,5]."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, (4, 3, 3, 3), rng.standard_normal(108).astype(np.float32))
    fc = helper.make_tensor("fc", TensorProto.FLOAT, (5, 144), rng.standard_normal(720).astype(np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv"], name="conv1"),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu1"),
        helper.make_node("Flatten", ["relu"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc"], ["y"], name="fc1", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 5))],
        [w, fc],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])


def _graph_model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])


def _vector(name: str, shape=(1, 4)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _cycle() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
        helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
        helper.make_node("Identity", ["b"], ["y"], name="out"),
    ]
    return _graph_model(nodes, [_vector("x")], [_vector("y")])


def _input_is_output() -> onnx.ModelProto:
    return _graph_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [_vector("x")], [_vector("x"), _vector("y")]
    )


def _dynamic_input() -> onnx.ModelProto:
    return _graph_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [_vector("x", ("N", 4))],
        [_vector("y", ("N", 4))],
    )


def _bad_initializer() -> onnx.ModelProto:
    model = small_onnx_model()
    model.graph.initializer[0].dims[0] = 40  # 40x3x3x3 declared, 4x3x3x3 held
    return model


def _huge_initializer_dims() -> onnx.ModelProto:
    model = small_onnx_model()
    model.graph.initializer[1].dims[:] = [2**40, 144]
    return model


def _unsupported_ops() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("NonZero", ["r"], ["nz"], name="nonzero"),
        helper.make_node("VendorOp", ["r"], ["y"], name="vendor", domain="com.vendor"),
    ]
    model = _graph_model(
        nodes, [_vector("x")], [_vector("y"), helper.make_tensor_value_info("nz", TensorProto.INT64, (2, 4))]
    )
    model.opset_import.append(helper.make_opsetid("com.vendor", 1))
    return model


def _external_data() -> onnx.ModelProto:
    model = small_onnx_model()
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    return model


def _checker_failure() -> onnx.ModelProto:
    """Conv with a kernel of the wrong rank: structurally fine, refused by shape inference."""
    model = small_onnx_model()
    model.graph.node[0].attribute.append(helper.make_attribute("kernel_shape", [3, 3, 3]))
    return model


def _colliding_hostile_names() -> onnx.ModelProto:
    from hostile_names import colliding_onnx  # imports this module: loaded on first use

    return colliding_onnx()


def float16_relu_onnx() -> onnx.ModelProto:
    value = helper.make_tensor_value_info
    return _graph_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [value("x", TensorProto.FLOAT16, (1, 4))],
        [value("y", TensorProto.FLOAT16, (1, 4))],
    )


def float16_inside_onnx() -> onnx.ModelProto:
    """float32 in and out, float16 between: x -> Cast(float16) -> Cast(float32) -> y."""
    nodes = [
        helper.make_node("Cast", ["x"], ["half"], name="to_half", to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["half"], ["y"], name="to_float", to=TensorProto.FLOAT),
    ]
    return _graph_model(nodes, [_vector("x")], [_vector("y")])


def expand_to_2_32_onnx() -> onnx.ModelProto:
    """A one-element constant expanded to [65536, 65536] (16 GiB of float32), summed, added to x."""
    nodes = [
        helper.make_node("Expand", ["one", "big_shape"], ["big"], name="expand"),
        helper.make_node("ReduceSum", ["big"], ["total"], name="sum", keepdims=0),
        helper.make_node("Add", ["x", "total"], ["y"], name="add"),
    ]
    constants = [
        helper.make_tensor("one", TensorProto.FLOAT, (1,), [1.0]),
        helper.make_tensor("big_shape", TensorProto.INT64, (2,), [65536, 65536]),
    ]
    return _graph_model(nodes, [_vector("x")], [_vector("y")], constants)


def _constant_gather_outside_its_axis() -> onnx.ModelProto:
    """x gathered at the constant rows 0 and 1000 of its 1 x 4: valid to the check, refused by the compiler."""
    index = helper.make_tensor("rows", TensorProto.INT64, (2,), [0, 1000])
    nodes = [helper.make_node("Gather", ["x", "rows"], ["y"], name="gather", axis=0)]
    return _graph_model(nodes, [_vector("x")], [_vector("y", (2, 4))], [index])


def _constant_scatter_at_10_to_the_8() -> onnx.ModelProto:
    """A ScatterElements of constants at index 10^8, added to x: TVM's constant folding once ran it on the
    compiler's host (a write 400 MB past a buffer)."""
    constants = [helper.make_tensor("zeros", TensorProto.FLOAT, (1, 4), [0.0] * 4),
                 helper.make_tensor("at", TensorProto.INT64, (1, 1), [100_000_000]),
                 helper.make_tensor("one", TensorProto.FLOAT, (1, 1), [1.0])]
    nodes = [helper.make_node("ScatterElements", ["zeros", "at", "one"], ["s"], name="scatter", axis=1),
             helper.make_node("Add", ["x", "s"], ["y"], name="add")]
    return _graph_model(nodes, [_vector("x")], [_vector("y")], constants)


def sparse_constant_onnx() -> onnx.ModelProto:
    """y = x + c, c a Constant whose value is a sparse tensor (two of eight elements set)."""
    sparse = helper.make_sparse_tensor(helper.make_tensor("values", TensorProto.FLOAT, [2], [1.0, 2.0]),
                                       helper.make_tensor("indices", TensorProto.INT64, [2], [1, 5]), [1, 4])
    nodes = [
        helper.make_node("Constant", [], ["c"], name="sparse_constant", sparse_value=sparse),
        helper.make_node("Add", ["x", "c"], ["y"], name="add"),
    ]
    return _graph_model(nodes, [_vector("x")], [_vector("y")])


def large_io_relu_onnx() -> onnx.ModelProto:
    """x [1, 2^24] -> Relu -> y: 64 MiB each, 75 bytes of file (the self-test embedded both, 480 MB of C)."""
    shape = (1, LARGE_IO_ELEMENTS)
    return _graph_model([helper.make_node("Relu", ["x"], ["y"])], [_vector("x", shape)], [_vector("y", shape)])


def relu_chain_onnx(length: int) -> onnx.ModelProto:
    """x -> Relu -> Relu -> ... (`length` nodes) -> y."""
    names = ["x", *(f"r{i}" for i in range(1, length)), "y"]
    nodes = [helper.make_node("Relu", [a], [b], name=f"relu{i}") for i, (a, b) in enumerate(zip(names, names[1:]))]
    return _graph_model(nodes, [_vector("x")], [_vector("y")])


def too_many_operators_onnx() -> onnx.ModelProto:
    from tvm_ext.model_check.limits import MAX_OPERATORS

    return relu_chain_onnx(MAX_OPERATORS + 1)


def folded_constants_onnx(count: int = 4) -> onnx.ModelProto:
    """`count` constants of 2^24 float32 (64 MiB each, each within a target's memory), made by ConstantOfShape
    from a few bytes of file, summed and reduced to one number added to x: TVM computes them all on the host."""
    nodes = [helper.make_node("ConstantOfShape", ["big_shape"], [f"big{i}"], name=f"fill{i}",
                              value=helper.make_tensor("v", TensorProto.FLOAT, (1,), [1.0])) for i in range(count)]
    nodes += [
        helper.make_node("Sum", [f"big{i}" for i in range(count)], ["bigs"], name="sum"),
        helper.make_node("ReduceSum", ["bigs"], ["total"], name="reduce", keepdims=0),
        helper.make_node("Add", ["x", "total"], ["y"], name="add"),
    ]
    shape = helper.make_tensor("big_shape", TensorProto.INT64, (1,), [LARGE_IO_ELEMENTS])
    return _graph_model(nodes, [_vector("x")], [_vector("y")], [shape])


def if_branch_reading_an_input_onnx() -> onnx.ModelProto:
    """If(c) whose branches read the graph input x by its name (nothing else reads it): control flow."""
    def branch(name: str, op: str):
        return helper.make_graph([helper.make_node(op, ["x"], [f"{name}_y"], name=f"{name}_op")], name, [],
                                 [_vector(f"{name}_y")])

    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch("then", "Relu"),
                            else_branch=branch("else", "Neg"))
    return _graph_model([node], [helper.make_tensor_value_info("c", TensorProto.BOOL, ()), _vector("x")],
                        [_vector("y")])


def sparse_initializer_onnx() -> onnx.ModelProto:
    """x + W, W a sparse initializer (one value of four)."""
    values = helper.make_tensor("W", TensorProto.FLOAT, (1,), [1.0])
    indices = helper.make_tensor("W_indices", TensorProto.INT64, (1,), [0])
    model = _graph_model([helper.make_node("Add", ["x", "W"], ["y"], name="add")], [_vector("x", (4,))],
                         [_vector("y", (4,))])
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    return model


def runtime_refused_escapes_onnx() -> onnx.ModelProto:
    """A model the check and TVM take but onnxruntime refuses, quoting a node name of terminal escapes."""
    from hostile_names import TERMINAL_ESCAPES, runtime_refused_onnx  # imports this module: loaded on first use

    return onnx.load_from_string(runtime_refused_onnx(f"relu{TERMINAL_ESCAPES}"))


ONNX_VARIANTS: dict[str, tuple[Callable[[], onnx.ModelProto], ErrorKind | None]] = {
    "valid small model": (small_onnx_model, None),
    "valid model with hostile and colliding names": (_colliding_hostile_names, None),
    "cycle": (_cycle, ErrorKind.GRAPH),
    "empty graph": (lambda: _graph_model([], [_vector("x")], [_vector("y")]), ErrorKind.GRAPH),
    "input is also output": (_input_is_output, ErrorKind.GRAPH),
    "dynamic input shape": (_dynamic_input, ErrorKind.TENSOR),
    "initializer dims larger than its data": (_bad_initializer, ErrorKind.BUFFER),
    "initializer with 2**40 rows": (_huge_initializer_dims, ErrorKind.TENSOR),
    "unsupported operators": (_unsupported_ops, ErrorKind.UNSUPPORTED_OPERATOR),
    "external data": (_external_data, ErrorKind.EXTERNAL_DATA),
    "wrong kernel rank": (_checker_failure, ErrorKind.ONNX_CHECKER),
    "no opset": (lambda: replace_opsets(small_onnx_model()), ErrorKind.STRUCTURE),
    "float16 input": (float16_relu_onnx, ErrorKind.TENSOR),
    "float16 intermediate": (float16_inside_onnx, ErrorKind.TENSOR),
    "Expand to 2^32 elements": (expand_to_2_32_onnx, ErrorKind.TENSOR),
    "constant Gather index outside its axis": (_constant_gather_outside_its_axis, None),
    "constant ScatterElements at index 10^8": (_constant_scatter_at_10_to_the_8, None),
    "Constant with a sparse_value": (sparse_constant_onnx, ErrorKind.TENSOR),
    "64 MiB input and output": (large_io_relu_onnx, ErrorKind.RESOURCES),
    "more nodes than the limit": (too_many_operators_onnx, ErrorKind.RESOURCES),
    "four 64 MiB constants computed from constants": (folded_constants_onnx, ErrorKind.RESOURCES),
    "If branch reading a graph input": (if_branch_reading_an_input_onnx, ErrorKind.UNSUPPORTED_OPERATOR),
    "sparse initializer": (sparse_initializer_onnx, ErrorKind.TENSOR),
    "node named with terminal escapes that onnxruntime refuses": (runtime_refused_escapes_onnx, None),
}


def replace_opsets(model: onnx.ModelProto) -> onnx.ModelProto:
    del model.opset_import[:]
    return model


def onnx_cases() -> list[BadModel]:
    cases = [
        BadModel(case, "small.onnx", make().SerializeToString(), expected, must_pass=case.startswith("valid"))
        for case, (make, expected) in ONNX_VARIANTS.items()
    ]
    data = small_onnx_model().SerializeToString()
    cases += [
        BadModel(f"onnx truncated to {n} bytes", "small.onnx", data[:n], None)
        for n in (1, 2, 10, 100, len(data) // 2, len(data) - 1)
    ]
    rng = random.Random("onnx")
    for _ in range(FLIPS_PER_MODEL):
        flipped = bytearray(data)
        position = rng.randrange(len(data))
        flipped[position] ^= 1 << rng.randrange(8)
        cases.append(BadModel(f"onnx bit flip at byte {position}", "small.onnx", bytes(flipped), None))
    return cases


# ----------------------------------------------------------------------------------------------------------


def not_a_model_cases() -> list[BadModel]:
    text = b"# notes\nthis is not a model\n"
    return [
        BadModel("empty .tflite", "empty.tflite", b"", ErrorKind.FILE),
        BadModel("empty .onnx", "empty.onnx", b"", ErrorKind.FILE),
        BadModel("text file", "notes.txt", text, ErrorKind.FORMAT),
        BadModel("text named .tflite", "notes.tflite", text, ErrorKind.FORMAT),
        BadModel("3-byte .tflite", "tiny.tflite", b"TFL", ErrorKind.FILE),
        BadModel("png header named .onnx", "image.onnx", b"\x89PNG\r\n\x1a\n" + bytes(64), None),
    ]


@functools.cache
def all_cases() -> tuple[BadModel, ...]:
    """The whole corpus: real-model corruptions (when the shared models are present) and synthetic cases.

    Built once per pytest process (0.45 CPU-s; each xdist worker builds it while collecting): three test modules
    read it.
    """
    cases = not_a_model_cases() + tiny_tflite_cases() + onnx_cases()
    for path in shared_tflite_models():
        cases += real_tflite_cases(path)
    return tuple(cases)
