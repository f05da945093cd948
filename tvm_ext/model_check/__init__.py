"""The model check: the first step of the compiler, before TVM sees the model.

`check_model(path)` reads a .tflite or .onnx file, checks its structure, shapes, constant data, graph and
operators, and the compiler's resource limits (`limits`: operators, constant bytes, input and output bytes), and
returns `ModelFacts`, or raises `ModelError` whose `str()` is one line
`<model file name>: <what and where>` listing every problem of the first kind found. A caller that uses
the bytes again (the compiler's import) calls `read_model_file` and `check_model_data` instead.

Importing this package imports neither TVM nor ONNX; TVM's converter lists are read on first use
(see `operator_support`).
"""

from __future__ import annotations

import stat
from pathlib import Path

from .errors import ErrorKind, ModelError
from .facts import ModelFacts, ModelFormat, OperatorFacts, TensorFacts
from .limits import MAX_MODEL_BYTES

__all__ = [
    "ErrorKind",
    "ModelError",
    "ModelFacts",
    "ModelFormat",
    "OperatorFacts",
    "TensorFacts",
    "check_model",
    "check_model_data",
    "read_model_file",
]

# Smallest file that can hold a flatbuffer root offset and the 4-byte file identifier.
_MIN_TFLITE_BYTES = 8
_TFLITE_IDENTIFIER_AT = slice(4, 8)


def check_model(path: str | Path, refuse_unsupported: bool = True) -> ModelFacts:
    """Check the model file at `path`; return its facts or raise ModelError (one line, naming the file).

    With `refuse_unsupported` False, operators our compiler does not support are not an error: each is in the
    facts with its `refusal` (the compiler's `analyze` lists them); every other check still refuses.

    The format comes from the extension (.tflite, .onnx); for any other extension a file carrying the
    TFLite identifier is read as TFLite, anything else is refused. Never raises anything but ModelError
    for a bad file; work and memory are bounded by the file size.
    """
    return check_model_data(path, read_model_file(path), refuse_unsupported)


def read_model_file(path: str | Path) -> bytes:
    """The model file's bytes, read once, or ModelError(FILE): unreadable, not a regular file (a FIFO or
    device could stream forever), empty, or larger than the formats allow."""
    return _read_bytes(Path(path).name, Path(path))


def check_model_data(path: str | Path, data: bytes, refuse_unsupported: bool = True) -> ModelFacts:
    """`check_model` on the bytes `data` that `read_model_file(path)` returned (`path` names the model and
    its extension gives the format); for a caller that uses the bytes again after the check."""
    path = Path(path)
    model = path.name
    suffix = path.suffix.lower()
    is_tflite = suffix == ".tflite" or (suffix != ".onnx" and data[_TFLITE_IDENTIFIER_AT] == b"TFL3")
    if is_tflite:
        if len(data) < _MIN_TFLITE_BYTES:
            raise ModelError(
                model, ErrorKind.FILE, f"truncated: {len(data)} bytes, too short for a TFLite model"
            )
        from .tflite_check import check_tflite

        return check_tflite(model, str(path), data, refuse_unsupported)
    if suffix == ".onnx":
        from .onnx_check import check_onnx

        return check_onnx(model, str(path), data, refuse_unsupported)
    raise ModelError(model, ErrorKind.FORMAT, "not a TFLite (.tflite, 'TFL3') or ONNX (.onnx) model")


def _read_bytes(model: str, path: Path) -> bytes:
    """The whole file, or ModelError(FILE): unreadable, not a regular file (a FIFO or device could
    stream forever), empty, or larger than the formats allow."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise ModelError(model, ErrorKind.FILE, "not a regular file")
        if status.st_size > MAX_MODEL_BYTES:
            raise ModelError(
                model,
                ErrorKind.FILE,
                f"{status.st_size} bytes, larger than the {MAX_MODEL_BYTES}-byte format limit",
            )
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ModelError(model, ErrorKind.FILE, f"cannot read the file ({reason})") from None
    if not data:
        raise ModelError(model, ErrorKind.FILE, "empty file")
    return data
