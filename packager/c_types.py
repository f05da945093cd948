"""The C99 type of each plan dtype: the packager's business (the plan holds only dtype names and bytes)."""

from __future__ import annotations

from memory_planner.plan import KernelParameter, KernelSignature

C_TYPE_OF_DTYPE: dict[str, str] = {
    "float32": "float",
    "float64": "double",
    "int64": "int64_t",
    "int32": "int32_t",
    "int16": "int16_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "bool",  # <stdbool.h>: TVM's C code generator writes bool for bool buffers
}
"""Every dtype a bundle can hold; float16 and bfloat16 have no C99 type and are refused by the model check."""


def c_type_of(dtype: str) -> str:
    """The C type of one element of `dtype` (a plan dtype name such as "int8"); KeyError for a dtype the
    bundle cannot hold."""
    return C_TYPE_OF_DTYPE[dtype]


def c_parameter(parameter: KernelParameter) -> str:
    """A kernel parameter as C declares it, e.g. `const int8_t* input0`."""
    return f"{'const ' if parameter.read_only else ''}{c_type_of(parameter.dtype)}* {parameter.name}"


def c_prototype(kernel: KernelSignature) -> str:
    """`void name(const T* input0, ..., T* output0, ..., T* scratch0)` (`int32_t name(...)` for a kernel that
    checks indices: KernelSignature.checks_indices), without a `;`."""
    returned = "int32_t" if kernel.checks_indices else "void"
    return f"{returned} {kernel.name}({', '.join(c_parameter(p) for p in kernel.parameters)})"
