"""One kernel library per compute unit: `<model>_kernels_<unit>.c`, compiled with the unit's compiler and flags.

A profile that lists compute units (`target.compute_unit`) gets one kernel source per unit instead of
`<model>_kernels.c`, holding the kernels its subgraphs were assigned (`tvm_ext.plan.unit_assignment`; a kernel
several subgraphs call lives with the first one's unit). The run function (`<model>_model.c`) calls the
kernels in the plan's order, whichever file defines them. The Makefile compiles each unit's source with
that unit's `CC` and `CFLAGS` (target-specific variables; `make CC=...` on the command line still overrides
every file); CMake, which has one C compiler per project, gives each source its unit's flags. Both written
through `packager.make_text` and `packager.cmake_text`.
"""

from __future__ import annotations

from dataclasses import dataclass

from packager.cmake_text import cmake_quoted
from packager.make_text import make_words


@dataclass(frozen=True)
class UnitBuild:
    """How one compute unit's kernel library is compiled: the unit's name (a lowercase C identifier), its
    C compiler command and its flags."""

    name: str
    cc: str
    cflags: tuple[str, ...]


def kernel_sources(model: str, units: tuple[UnitBuild, ...]) -> list[str]:
    """The bundle's kernel sources: one per unit, or `<model>_kernels.c` when the profile lists none."""
    return [unit_kernel_source(model, unit.name) for unit in units] or [f"{model}_kernels.c"]


def unit_kernel_source(model: str, unit: str) -> str:
    return f"{model}_kernels_{unit}.c"


def make_rules(model: str, units: tuple[UnitBuild, ...], language_flag: str) -> list[str]:
    """Makefile lines giving each unit's object its unit's compiler and flags (after `language_flag`)."""
    lines = []
    for unit in units:
        target = unit_kernel_source(model, unit.name).removesuffix(".c") + ".o"
        lines += [f"{target}: CC = {make_words([unit.cc], 'rule')}",
                  f"{target}: CFLAGS = {make_words((language_flag, *unit.cflags), 'rule')}"]
    return lines + [""] if lines else []


def cmake_lines(model: str, units: tuple[UnitBuild, ...]) -> list[str]:
    """CMake lines giving each unit's source its unit's flags (after the profile's, so the unit's win)."""
    return [f"set_source_files_properties({unit_kernel_source(model, unit.name)} PROPERTIES COMPILE_OPTIONS "
            f"{cmake_quoted(*unit.cflags)})" for unit in units]
