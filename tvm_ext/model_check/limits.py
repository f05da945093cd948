"""Size limits of the model check, in one place. Units: bytes unless named otherwise."""

from __future__ import annotations

import functools
import math

from .errors import ErrorKind, ModelError

# A flatbuffer or protobuf model file cannot exceed 2 GiB (both use 32-bit offsets and sizes).
MAX_MODEL_BYTES = 2**31 - 1
# One tensor's data must fit a 32-bit microcontroller's signed size type.
MAX_TENSOR_BYTES = 2**31 - 1
# Highest tensor rank accepted (TFLite kernels handle up to 6; ONNX models rarely exceed 8).
MAX_RANK = 8
# Most operators a model may have (ONNX nodes, those of control-flow subgraphs included; TFLite operators).
# The passes and the planning take time that grows faster than the operator count: a chain of 2,000 Softmax
# nodes compiled in 35 CPU seconds, of 5,000 in 125 (a 100,000-node chain ran out of memory after 9 minutes);
# the models of microcontrollers have hundreds.
MAX_OPERATORS = 5_000
# Most bytes of the model's inputs and outputs together: the self-test embeds one input of each and the
# reference runtime's outputs in selftest.c (about 4 characters of C per byte). Above every built-in
# profile's SRAM, which holds them too (checked per profile before the import: target.check_io_fits).
MAX_IO_BYTES = 8 * 2**20

_MEMORY_FIELDS = {"SRAM": "sram_bytes", "flash": "flash_bytes"}


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
def largest_target_memory(memories: tuple[str, ...] = ("SRAM", "flash")) -> tuple[int, str]:
    """The most bytes a memory of `memories` ("SRAM", "flash") offers over the built-in profiles in
    target/profiles/, and which profile and memory that is ("hifi4 flash").

    With both: the most any built-in target offers one tensor. A tensor larger than this fits no target;
    refusing it in the check also keeps TVM from computing it on the host when it folds constants (an Expand
    of a constant to 2^32 elements is 16 GiB).
    """
    import target

    sizes = []
    for name in target.profile_names():
        profile = target.load_profile(name)
        sizes += [(getattr(profile, _MEMORY_FIELDS[memory]), f"{name} {memory}") for memory in memories]
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


def operators_problem(count: int) -> str | None:
    """`N operators, more than ...` when a model has more than MAX_OPERATORS, else None."""
    if count > MAX_OPERATORS:
        return f"{count} operators, more than the compiler's limit of {MAX_OPERATORS}"
    return None


def weights_problem(nbytes: int) -> str | None:
    """`constant data of N bytes ...` when a model's constant data, all of it together, is larger than the largest
    flash of any built-in profile (where a bundle keeps its weights), else None. The chosen profile's flash is
    checked once the bundle's weights and code are known (target.check_fits)."""
    limit, where = largest_target_memory(("flash",))
    if nbytes > limit:
        return f"constant data of {nbytes} bytes together, more than the largest target flash ({where}, {limit} bytes)"
    return None


def io_problem(nbytes: int) -> str | None:
    """`inputs and outputs of N bytes ...` when they hold more than MAX_IO_BYTES together, else None."""
    if nbytes > MAX_IO_BYTES:
        return (f"inputs and outputs of {nbytes} bytes together, more than the limit of {MAX_IO_BYTES} bytes (the "
                "self-test embeds them in selftest.c)")
    return None


def refuse_beyond_limit(model: str, problem: str | None) -> None:
    """Raise ModelError(RESOURCES) naming `model` with `problem`, when there is one."""
    if problem is not None:
        raise ModelError(model, ErrorKind.RESOURCES, problem)
