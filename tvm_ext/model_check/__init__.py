"""The model check: the first step of the compiler, before TVM sees the model.

`check_model(path)` reads a .tflite or .onnx file, checks its structure, shapes, constant data, graph and
operators, and the compiler's resource limits (`limits`: operators, constant bytes, input and output bytes), and
returns `ModelFacts`, or raises `ModelError` whose `str()` is one line
`<model file name>: <what and where>` listing every problem of the first kind found. A caller that uses
the parsed model again (the compiler's import) calls `read_model_file`, `parse_model` and `check_parsed`
instead, and hands the `ParsedModel` on.

Importing this package imports neither TVM nor ONNX; TVM's converter lists are read on first use
(see `operator_support`).
"""

from __future__ import annotations

import stat
from pathlib import Path

from .errors import ErrorKind, ModelError
from .facts import ModelFacts, ModelFormat, OperatorFacts, TensorFacts
from .limits import MAX_MODEL_BYTES
from .parsed import ParsedModel, parse_model

__all__ = [
    "ErrorKind",
    "ModelError",
    "ModelFacts",
    "ModelFormat",
    "OperatorFacts",
    "ParsedModel",
    "TensorFacts",
    "check_model",
    "check_model_data",
    "check_parsed",
    "parse_model",
    "read_model_file",
]


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
    its extension gives the format)."""
    return check_parsed(parse_model(path, data), refuse_unsupported)


def check_parsed(parsed: ParsedModel, refuse_unsupported: bool = True) -> ModelFacts:
    """`check_model` on a model file `parse_model` parsed; for a caller that uses the parsed model again after
    the check (the compiler's import)."""
    model, path = parsed.path.name, str(parsed.path)
    if parsed.format is ModelFormat.TFLITE:
        from .tflite_check import check_tflite

        return check_tflite(model, path, parsed.data, parsed.root, refuse_unsupported)
    from .onnx_check import check_onnx

    return check_onnx(model, path, parsed.root, refuse_unsupported)


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
