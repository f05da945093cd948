"""Size limits of the model check, in one place. Units: bytes unless named otherwise."""

from __future__ import annotations

import functools
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


@functools.cache
def largest_target_memory() -> tuple[int, str]:
    """The most bytes any built-in target profile offers one tensor, max(sram_bytes, flash_bytes) over the
    profiles in target/profiles/, and which profile and memory that is ("hifi4 flash").

    A tensor larger than this fits no target; refusing it in the check also keeps TVM from computing it on
    the host when it folds constants (an Expand of a constant to 2^32 elements is 16 GiB).
    """
    import target

    sizes = []
    for name in target.profile_names():
        profile = target.load_profile(name)
        sizes += [(profile.sram_bytes, f"{name} SRAM"), (profile.flash_bytes, f"{name} flash")]
    return max(sizes)


def oversize_problem(shape: tuple[int, ...], bits_per_element: int) -> str | None:
    """`needs N bytes, more than <profile memory>'s M` when a static shape fits no target, else None.

    Computed from the dims alone (Python integers): nothing of that size is ever allocated.
    """
    nbytes = tensor_bytes(shape, bits_per_element)
    limit, where = largest_target_memory()
    if nbytes > limit:
        return f"{list(shape)} needs {nbytes} bytes, more than the largest target memory ({where}, {limit} bytes)"
    return None


def has_c_type(dtype_name: str) -> bool:
    """Whether the bundle has a C99 type for elements of `dtype_name` (float16 and bfloat16 have none)."""
    from packager.c_types import C_TYPE_OF_DTYPE

    return dtype_name in C_TYPE_OF_DTYPE
