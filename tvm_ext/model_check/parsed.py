"""A model file parsed once: the object the model check reads and the compiler's import converts.

`parse_model` is the one place a model file's bytes become a model object (`onnx.ModelProto`, or the TFLite
flatbuffer's `tflite.Model` table); the check (`check_parsed`) and the import (`tvm_ext.frontend.import_parsed`)
both take the `ParsedModel` it returns, so a compile parses its file once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ErrorKind, ModelError, one_line
from .facts import ModelFormat

# Smallest file that can hold a flatbuffer root offset and the 4-byte file identifier.
_MIN_TFLITE_BYTES = 8
_TFLITE_IDENTIFIER_AT = slice(4, 8)


@dataclass(frozen=True)
class ParsedModel:
    """A model file's bytes `data` (read once, from `path`) and its parse `root`: the `onnx.ModelProto` of an
    ONNX file, the `tflite.Model` table of a TFLite file (a view into `data`, read lazily). Nothing changes
    `root` after the parse: the import copies before it rewrites an ONNX graph."""

    path: Path
    format: ModelFormat
    data: bytes
    root: Any


def parse_model(path: str | Path, data: bytes) -> ParsedModel:
    """Parse the bytes `data` of the model file `path`, or ModelError (one line naming the file).

    The format comes from the extension (.tflite, .onnx); for any other extension a file carrying the TFLite
    identifier is read as TFLite, anything else is refused. A TFLite file too short for its identifier, or an
    ONNX file that is not a protobuf, is refused here; everything else is the check's (`check_parsed`).
    """
    path = Path(path)
    model = path.name
    suffix = path.suffix.lower()
    if suffix == ".tflite" or (suffix != ".onnx" and data[_TFLITE_IDENTIFIER_AT] == b"TFL3"):
        if len(data) < _MIN_TFLITE_BYTES:
            raise ModelError(model, ErrorKind.FILE, f"truncated: {len(data)} bytes, too short for a TFLite model")
        import tflite  # the `tflite` package: flatbuffer accessors generated from TFLite's schema

        # Reads the root table's offset only (in the file: it has 8 bytes); every other access is the check's.
        return ParsedModel(path, ModelFormat.TFLITE, data, tflite.Model.GetRootAsModel(data, 0))
    if suffix == ".onnx":
        return ParsedModel(path, ModelFormat.ONNX, data, _parse_onnx(model, data))
    raise ModelError(model, ErrorKind.FORMAT, "not a TFLite (.tflite, 'TFL3') or ONNX (.onnx) model")


def _parse_onnx(model: str, data: bytes):
    """The `onnx.ModelProto` of `data`, or ModelError(STRUCTURE) naming `model`."""
    import onnx

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeError, ... on bad bytes
        raise ModelError(
            model,
            ErrorKind.STRUCTURE,
            f"not an ONNX protobuf ({type(exc).__name__}: {one_line(str(exc), 120)})",
        ) from None
    return proto
