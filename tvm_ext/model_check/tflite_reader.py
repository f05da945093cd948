"""Reads a TFLite flatbuffer into plain records, with every access guarded and all work bounded.

The `tflite` package reads the flatbuffer without verifying it: on a malformed file an accessor can raise
anything (struct.error, IndexError, ValueError, ...) or return garbage, and a vector or string can declare
any length. So every accessor call goes through `_BoundedReader.get`, which turns any exception into a
one-line ModelError, and every vector length and string is charged to a budget proportional to the file
size before it is walked: reading a file of N bytes costs O(N) whatever it declares.

The records are plain data; the rules about them live in `tflite_check`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .errors import ErrorKind, ModelError

T = TypeVar("T")

# Vector entries a file may declare per byte of its size: real models need at most 1/4 (4-byte entries),
# 1/2 leaves room for shared vectors without letting a crafted file make the walk quadratic.
_ENTRIES_PER_FILE_BYTE = 0.5
# String bytes (names, custom codes) a file may make us copy, per byte of its size.
_STRING_BYTES_PER_FILE_BYTE = 2


@dataclass(frozen=True)
class TfliteQuantization:
    """Affine quantization parameters of a tensor: counts and sanity of the per-channel vectors."""

    scales: int
    zero_points: int
    scale_range: tuple[float, float]  # smallest and largest scale (float32 values; NaN when any is NaN)
    dimension: int
    zero_point_range: tuple[int, int]  # smallest and largest zero point; (0, 0) when there are none


@dataclass(frozen=True)
class TfliteTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    buffer: int
    quantization: TfliteQuantization | None
    is_variable: bool
    sparse: bool


@dataclass(frozen=True)
class TfliteOperator:
    index: int
    opcode_index: int
    inputs: tuple[int, ...]  # -1 marks an omitted optional input
    outputs: tuple[int, ...]
    custom_options: bytes = b""  # a custom operator's options (TFLite's converter writes a flexbuffer map)


@dataclass(frozen=True)
class TfliteOpcode:
    builtin_code: int
    custom_code: str | None
    version: int


@dataclass(frozen=True)
class TfliteBuffer:
    """A buffer's inline bytes (a zero-copy view), or its (offset, size) in the file past the flatbuffer."""

    data: memoryview
    offset: int
    size: int


@dataclass(frozen=True)
class TfliteSubgraph:
    name: str
    tensors: tuple[TfliteTensor, ...]
    operators: tuple[TfliteOperator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class TfliteModel:
    schema_version: int
    opcodes: tuple[TfliteOpcode, ...]
    subgraphs: tuple[TfliteSubgraph, ...]
    buffers: tuple[TfliteBuffer, ...]
    metadata: tuple[tuple[str, int], ...]  # (name, buffer index)
    file_bytes: int


def _exception_name(exc: Exception) -> str:
    """`struct.error`, `IndexError`, ...: the exception's class, qualified unless it is a builtin."""
    module = type(exc).__module__
    return type(exc).__name__ if module == "builtins" else f"{module}.{type(exc).__name__}"


class _BoundedReader:
    """Guards accessor calls and charges declared lengths against budgets set by the file size."""

    def __init__(self, model: str, file_bytes: int) -> None:
        self.model = model
        self.file_bytes = file_bytes
        self.entries_left = int(file_bytes * _ENTRIES_PER_FILE_BYTE) + 16
        self.string_bytes_left = file_bytes * _STRING_BYTES_PER_FILE_BYTE + 1024

    def fail(self, message: str) -> ModelError:
        return ModelError(self.model, ErrorKind.STRUCTURE, f"malformed flatbuffer: {message}")

    def get(self, what: str, read: Callable[[], T]) -> T:
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - a malformed flatbuffer can make an accessor raise anything
            raise self.fail(f"cannot read {what} ({_exception_name(exc)})") from None

    def length(self, what: str, read: Callable[[], int]) -> int:
        count = self.get(what, read)
        if count < 0 or count > self.entries_left:
            raise self.fail(
                f"{what}: {count} entries declared, more than a {self.file_bytes}-byte file holds"
            )
        self.entries_left -= count
        return count

    def ints(
        self, what: str, read_length: Callable[[], int], read_numpy: Callable[[], object]
    ) -> tuple[int, ...]:
        count = self.length(what, read_length)
        if count == 0:
            return ()
        values = self.get(what, read_numpy)
        if not isinstance(values, np.ndarray) or values.shape != (count,):
            raise self.fail(f"{what} runs past the end of the file")
        return tuple(int(v) for v in values)

    def string(self, what: str, read: Callable[[], bytes | None]) -> str:
        raw = self.get(what, read)
        if raw is None:
            return ""
        self.string_bytes_left -= len(raw)
        if self.string_bytes_left < 0:
            raise self.fail(f"{what}: the strings declared exceed what the file holds")
        return raw.decode("utf-8", errors="replace")


def read_tflite(model: str, root, size: int) -> TfliteModel:
    """Read the `tflite.Model` table `root` of a whole .tflite file of `size` bytes into records, or raise
    ModelError(STRUCTURE).

    The caller has checked the size and the "TFL3" identifier. `model` names the file in errors.
    """
    reader = _BoundedReader(model, size)
    schema_version = reader.get("the schema version", root.Version)
    n_codes = reader.length("the operator codes", root.OperatorCodesLength)
    opcodes = tuple(_read_opcode(reader, root, i) for i in range(n_codes))
    n_buffers = reader.length("the buffers", root.BuffersLength)
    buffers = tuple(_read_buffer(reader, root, i) for i in range(n_buffers))
    n_meta = reader.length("the metadata", root.MetadataLength)
    metadata = tuple(_read_metadata(reader, root, i) for i in range(n_meta))
    n_subgraphs = reader.length("the subgraphs", root.SubgraphsLength)
    subgraphs = tuple(_read_subgraph(reader, root, i) for i in range(n_subgraphs))
    return TfliteModel(schema_version, opcodes, subgraphs, buffers, metadata, size)


def _table(reader: _BoundedReader, what: str, read: Callable[[], T | None]) -> T:
    table = reader.get(what, read)
    if table is None:
        raise reader.fail(f"{what} is missing")
    return table


def _read_opcode(reader: _BoundedReader, root, i: int) -> TfliteOpcode:
    what = f"operator code {i}"
    code = _table(reader, what, lambda: root.OperatorCodes(i))
    # TFLite 2.4 moved the builtin code to a 32-bit field and kept the old 8-bit one: the larger is right.
    builtin = max(reader.get(what, code.BuiltinCode), reader.get(what, code.DeprecatedBuiltinCode))
    custom = reader.get(what, code.CustomCode)
    custom_code = None if custom is None else reader.string(what, lambda: custom)
    return TfliteOpcode(builtin, custom_code, reader.get(what, code.Version))


def _read_buffer(reader: _BoundedReader, root, i: int) -> TfliteBuffer:
    what = f"buffer {i}"
    buffer = _table(reader, what, lambda: root.Buffers(i))
    length = reader.get(what, buffer.DataLength)
    view = memoryview(b"")
    if length:
        values = reader.get(what, buffer.DataAsNumpy)
        if not isinstance(values, np.ndarray) or values.shape != (length,):
            raise reader.fail(f"{what} data runs past the end of the file")
        view = memoryview(values)
    return TfliteBuffer(view, reader.get(what, buffer.Offset), reader.get(what, buffer.Size))


def _read_metadata(reader: _BoundedReader, root, i: int) -> tuple[str, int]:
    what = f"metadata entry {i}"
    entry = _table(reader, what, lambda: root.Metadata(i))
    return reader.string(what, entry.Name), reader.get(what, entry.Buffer)


def _read_subgraph(reader: _BoundedReader, root, i: int) -> TfliteSubgraph:
    what = f"subgraph {i}"
    graph = _table(reader, what, lambda: root.Subgraphs(i))
    n_tensors = reader.length(f"{what} tensors", graph.TensorsLength)
    tensors = tuple(_read_tensor(reader, graph, t) for t in range(n_tensors))
    n_ops = reader.length(f"{what} operators", graph.OperatorsLength)
    operators = tuple(_read_operator(reader, graph, o) for o in range(n_ops))
    inputs = reader.ints(f"{what} inputs", graph.InputsLength, graph.InputsAsNumpy)
    outputs = reader.ints(f"{what} outputs", graph.OutputsLength, graph.OutputsAsNumpy)
    return TfliteSubgraph(reader.string(f"{what} name", graph.Name), tensors, operators, inputs, outputs)


def _read_tensor(reader: _BoundedReader, graph, t: int) -> TfliteTensor:
    what = f"tensor {t}"
    tensor = _table(reader, what, lambda: graph.Tensors(t))
    shape = reader.ints(f"{what} shape", tensor.ShapeLength, tensor.ShapeAsNumpy)
    quant = reader.get(what, tensor.Quantization)
    return TfliteTensor(
        index=t,
        name=reader.string(f"{what} name", tensor.Name),
        shape=shape,
        type_code=reader.get(what, tensor.Type),
        buffer=reader.get(what, tensor.Buffer),
        quantization=None if quant is None else _read_quantization(reader, what, quant),
        is_variable=bool(reader.get(what, tensor.IsVariable)),
        sparse=reader.get(what, tensor.Sparsity) is not None,
    )


def _read_quantization(reader: _BoundedReader, what: str, quant) -> TfliteQuantization | None:
    """The tensor's affine quantization, or None when it declares no scales (a float tensor)."""
    what = f"{what} quantization"
    n_scales = reader.length(what, quant.ScaleLength)
    if n_scales == 0:
        return None
    scales = reader.get(what, quant.ScaleAsNumpy)
    if not isinstance(scales, np.ndarray) or scales.shape != (n_scales,):
        raise reader.fail(f"{what} scales run past the end of the file")
    n_zero_points = reader.length(what, quant.ZeroPointLength)
    zero_point_range = (0, 0)
    if n_zero_points:
        zero_points = reader.get(what, quant.ZeroPointAsNumpy)
        if not isinstance(zero_points, np.ndarray) or zero_points.shape != (n_zero_points,):
            raise reader.fail(f"{what} zero points run past the end of the file")
        zero_point_range = (int(zero_points.min()), int(zero_points.max()))
    scale_range = (float(scales.min()), float(scales.max()))  # numpy's min and max propagate NaN
    return TfliteQuantization(
        n_scales, n_zero_points, scale_range, reader.get(what, quant.QuantizedDimension), zero_point_range
    )


def _read_operator(reader: _BoundedReader, graph, o: int) -> TfliteOperator:
    what = f"operator {o}"
    op = _table(reader, what, lambda: graph.Operators(o))
    return TfliteOperator(
        index=o,
        opcode_index=reader.get(what, op.OpcodeIndex),
        inputs=reader.ints(f"{what} inputs", op.InputsLength, op.InputsAsNumpy),
        outputs=reader.ints(f"{what} outputs", op.OutputsLength, op.OutputsAsNumpy),
        custom_options=bytes(reader.ints(f"{what} custom options", op.CustomOptionsLength, op.CustomOptionsAsNumpy)),
    )
