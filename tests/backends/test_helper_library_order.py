"""The order a bundle defines its helper libraries in (`tvm_ext.tir.helper_calls.HelperCalls.used`: by name) is
what two contracts rest on: a library's `needs` come before it (its helpers call theirs), and the Helium bundles'
`<PREFIX>_LEFT_SHIFTS` (HELIUM_LEFT_SHIFTS_HELPERS) comes before the vector requantization that tests it. A library
renamed against either would compile (a call of an undefined helper is an error, but a macro tested before its
definition is silently false: no VSHL by positive shifts, wrong results only on models that shift left)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

pytest.importorskip("tvm")

import backends  # noqa: E402
from backends.backend import HelperLibrary  # noqa: E402
from backends.cortex_m.helpers import HELIUM_LEFT_SHIFTS_HELPERS  # noqa: E402
from tvm_ext.tir.helper_calls import HelperCalls  # noqa: E402


def _every_library() -> set[HelperLibrary]:
    """Every HelperLibrary a module of the backends package defines at its top level."""
    libraries = set()
    for module in pkgutil.walk_packages(backends.__path__, "backends."):
        if module.ispkg or ".bundle_files" in module.name:
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, HelperLibrary):
                libraries.add(value)
    return libraries


def test_every_library_comes_after_the_libraries_it_needs() -> None:
    libraries = _every_library()
    assert len(libraries) > 20  # the walk found the backends' libraries
    order = HelperCalls("lp", libraries | {need for library in libraries for need in library.needs}).used()
    for library in order:
        assert all(order.index(need) < order.index(library) for need in library.needs), library.name


def test_the_left_shifts_macro_comes_before_every_other_cortex_m_library() -> None:
    cortex_m = {library for library in _every_library() if library.name.startswith("cortex")}
    assert HelperCalls("lp", cortex_m).used()[0] is HELIUM_LEFT_SHIFTS_HELPERS
