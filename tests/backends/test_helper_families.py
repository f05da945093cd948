"""Which helper libraries may meet in one bundle (`backends.backend.HelperLibrary.family`).

Each family's libraries may define the C names another family's define, with other contracts: RV32's helpers stand
in for Cortex-M's under Cortex-M's names (`<prefix>_requantize_small_s8`), their inner steps too
(`<prefix>_requantize_small_lane`, another signature). A bundle defining both did not build (an rv32imc 16x8 DS-CNN
recorded the Cortex-M library through its fused 16x8 tiles: conflicting types for `<prefix>_requantize_small_lane`),
so each backend refuses another family's library (`Backend.bundle_helper_libraries`). These tests scan every
library's C (the names its top level defines: functions, variables, types, macros) and check that no two libraries
that one bundle may define define the same name: two of different families never meet, a portable library
(`family` None) shares no name with any other, and within a family only the core twins do (a Helium library and the
DSP one it stands for, which `helpers_of` or the core's schedules choose between)."""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import re

import pytest

pytest.importorskip("tvm")

import backends  # noqa: E402
from backends.backend import Backend, HelperLibrary  # noqa: E402
from backends.cortex_m import CORTEX_M  # noqa: E402
from backends.cortex_m.helpers import (BATCH_MATMUL_HELPERS, CORTEX_M_HELPERS, FPU_FLOAT_HELPERS,  # noqa: E402
                                       HELIUM_BATCH_MATMUL_HELPERS, HELIUM_FLOAT_HELPERS, HELIUM_HELPERS,
                                       HELIUM_MAX_HELPERS)
from backends.riscv import RISCV  # noqa: E402
from target.loading import load_profile  # noqa: E402

PREFIX = "lp"
BACKENDS: tuple[tuple[Backend, str], ...] = ((CORTEX_M, "cortex-m4f"), (CORTEX_M, "cortex-m55"), (RISCV, "rv32imc"),
                                             (RISCV, "rv32imafc"))
"""Each backend with the profiles its bundles are built for here."""
CORE_TWINS = {frozenset(pair) for pair in ((CORTEX_M_HELPERS, HELIUM_HELPERS), (CORTEX_M_HELPERS, HELIUM_MAX_HELPERS),
                                           (BATCH_MATMUL_HELPERS, HELIUM_BATCH_MATMUL_HELPERS),
                                           (FPU_FLOAT_HELPERS, HELIUM_FLOAT_HELPERS))}
"""The pairs of one family's libraries that define the same names for different cores: a bundle defines one."""

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def defined_names(text: str, prefix: str = PREFIX) -> set[str]:
    """The names of ``prefix`` that the C ``text`` defines at its top level: its macros, functions (a parameter
    list then a body), variables and types (a declaration ending in ``;`` that is no prototype)."""
    text = COMMENT.sub(" ", text)
    names = set(re.findall(rf"^[ \t]*#[ \t]*define[ \t]+((?:{prefix}|{prefix.upper()})_\w+)", text, re.M))
    name = re.compile(rf"\b({prefix}_\w+)")
    head: list[str] = []
    depth = 0
    for char in DIRECTIVE.sub(" ", text):
        if depth == 0 and char in ";{":
            declaration = "".join(head)
            if char == "{" and "=" not in declaration:  # a function's body follows its declarator
                names.update(_declarator(declaration, prefix))
            elif char == "{" or not declaration.rstrip().endswith(")"):  # an initialized array, a variable, a type
                names.update(name.findall(declaration.split("=")[0])[-1:])
            head = [] if char == ";" else head
        if char in "{}":
            depth += 1 if char == "{" else -1
            head = [] if depth == 0 else head  # after a body: a typedef's name, or the next declaration
        elif depth == 0:
            head.append(char)
    return names


def _declarator(declaration: str, prefix: str) -> list[str]:
    """The function name of ``prefix`` that ``declaration`` (the text before a body) declares: the first name
    followed by a parameter list outside every parenthesis (an attribute's or a function pointer's), if any."""
    for match in re.finditer(rf"\b({prefix}_\w+)\s*\(", declaration):
        before = declaration[:match.start()]
        if before.count("(") == before.count(")"):
            return [match.group(1)]
    return []


def every_library() -> set[HelperLibrary]:
    """Every HelperLibrary a module of the backends package defines at its top level."""
    libraries = set()
    for module in pkgutil.walk_packages(backends.__path__, "backends."):
        if ".bundle_files" in module.name:
            continue
        libraries.update(value for value in vars(importlib.import_module(module.name)).values()
                         if isinstance(value, HelperLibrary))
    return libraries


LIBRARIES = sorted(every_library(), key=lambda library: library.name)
NAMES = {library: defined_names(library.c_text(PREFIX)) for library in LIBRARIES}
SHARED = [(a, b) for a, b in itertools.combinations(LIBRARIES, 2) if NAMES[a] & NAMES[b]]
"""Every two libraries that define a common name."""


def test_the_scan_finds_the_names_a_library_defines() -> None:
    assert len(LIBRARIES) > 30 and all(NAMES[library] for library in LIBRARIES)
    assert {"lp_requantize_small_lane", "lp_requantize_small_s8", "LP_REQUANTIZE_SMALL_LUT"} <= NAMES[CORTEX_M_HELPERS]
    text = ("#define LP_A(x) \\\n  { x; }\ntypedef struct { int a; } lp_pair;\nstatic const int lp_table[2] = {1, 2};\n"
            "static __attribute__((noinline)) int lp_f(int (*g)(int), int lp_no);\nstatic inline int lp_g(void) {"
            " return lp_h(1); }\n/* lp_comment(void) { } */\n")
    assert defined_names(text) == {"LP_A", "lp_pair", "lp_table", "lp_g"}


@pytest.mark.parametrize("backend, target", BACKENDS, ids=[target for _, target in BACKENDS])
def test_no_backend_defines_another_familys_library(backend: Backend, target: str) -> None:
    """Of every two libraries of different families that define a common name (Cortex-M's and RV32's: they
    exist), a backend's bundle defines neither beside the other: it refuses the foreign one (exit 3, our bug),
    where the bundle did not build."""
    crossing = [(a, b) for a, b in SHARED if a.family != b.family]
    assert any({a, b} == {CORTEX_M_HELPERS, RISCV.helper_library} for a, b in crossing)
    profile = load_profile(target)
    for pair in crossing:
        with pytest.raises(RuntimeError, match="another family"):
            backend.bundle_helper_libraries(profile, pair)
    own = tuple(library for library in LIBRARIES if library.family in (None, backend.name))
    assert backend.bundle_helper_libraries(profile, own)  # its own and the portable ones it takes


def test_a_portable_library_shares_no_name() -> None:
    """A portable library (any family's bundle may define it) defines no name that any other library defines."""
    assert any(library.family is None for library in LIBRARIES)
    assert [(a.name, b.name) for a, b in SHARED if None in (a.family, b.family)] == []


def test_one_familys_libraries_share_names_only_as_core_twins() -> None:
    """Within a family, two libraries define a common name only as the twins of two kinds of core (Helium's and
    the DSP one's), of which a bundle defines one: a new pair fails here until it is stated as such."""
    same = {frozenset((a, b)) for a, b in SHARED if a.family == b.family}
    assert same - CORE_TWINS == set(), sorted(sorted(library.name for library in pair) for pair in same - CORE_TWINS)
