"""Size limits of the model check, in one place. Units: bytes unless named otherwise."""

from __future__ import annotations

import math

# A flatbuffer or protobuf model file cannot exceed 2 GiB (both use 32-bit offsets and sizes).
MAX_MODEL_BYTES = 2**31 - 1
# One tensor's data must fit a 32-bit microcontroller's signed size type.
MAX_TENSOR_BYTES = 2**31 - 1
# Highest tensor rank accepted (TFLite kernels handle up to 6; ONNX models rarely exceed 8).
MAX_RANK = 8


def tensor_bytes(shape: tuple[int, ...], bits_per_element: int) -> int:
    """Bytes of a dense tensor of `shape` (non-negative dims) with `bits_per_element`, rounded up."""
    return (math.prod(shape) * bits_per_element + 7) // 8


def shape_problem(shape: tuple[int, ...], bits_per_element: int) -> str | None:
    """What is wrong with a static shape, or None: rank, negative dims, total bytes.

    Zero dims are allowed here (ONNX models carry empty constants, e.g. Resize's `roi`); model inputs and
    outputs are checked for elements separately.
    """
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)} exceeds {MAX_RANK}"
    if any(dim < 0 for dim in shape):
        return f"shape {list(shape)} has a negative (dynamic) dimension"
    nbytes = tensor_bytes(shape, bits_per_element)
    if nbytes > MAX_TENSOR_BYTES:
        return f"shape {list(shape)} needs {nbytes} bytes, more than {MAX_TENSOR_BYTES}"
    return None
