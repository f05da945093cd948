"""Kernels that are one function but for their names: the bundle gives them one C function
(`tvm_ext.plan.extract_plan.unique_kernels`: structurally equal without their global symbol), so a choice priced
per call of a kernel counts the calls of all of them."""

from __future__ import annotations

from collections.abc import Mapping

import tvm_ffi
from tvm import tirx


def identical_groups(kernels: Mapping[str, tirx.PrimFunc]) -> list[tuple[str, ...]]:
    """The names of ``kernels`` (name -> PrimFunc) in groups of the same function but for its name (structurally
    equal without the global symbol), every kernel in one group (a group of one where it has no twin), each group
    and its names in ``kernels``' order."""
    buckets: dict[int, list[tuple[tirx.PrimFunc, list[str]]]] = {}
    groups: list[list[str]] = []
    for name, func in kernels.items():
        func = func.without_attr("global_symbol")
        bucket = buckets.setdefault(tvm_ffi.structural_hash(func), [])
        same = next((names for known, names in bucket if tvm_ffi.structural_equal(known, func)), None)
        if same is None:
            same = [name]
            bucket.append((func, same))
            groups.append(same)
        else:
            same.append(name)
    return [tuple(group) for group in groups]
