"""Lookup tables (``kernels.int8_tables``) as constant operands of the kernels that read them, and those kernels'
calls."""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from tvm import relax

from ...kernels.lookup import lookup_int8
from ...layers import ELEMENTWISE_LOOKUP_ATTR
from .lowering import KernelCall


@functools.cache
def table_constant(table: Callable[..., np.ndarray], *args) -> relax.Constant:
    """The Relax constant of ``table(*args)`` (hashable compile-time arguments): one object per distinct table,
    so that the layers reading the same table read one weight of the bundle (flash, not arena)."""
    return relax.const(table(*args))


def lookup_call(kind: str, core: relax.Call, data: relax.Expr, table: relax.Constant,
                fused_after: bool = True) -> KernelCall:
    """The call of the kernel ``table[data + 128]`` (``kernels.lookup``) computing the TFLite operator ``kind``
    at ``core``, fusable after the kernel computing ``data`` (ELEMENTWISE_LOOKUP_ATTR) unless not ``fused_after``
    (a kernel of its own)."""
    return KernelCall(kind, core, lookup_int8, (data, table),
                      func_attrs={ELEMENTWISE_LOOKUP_ATTR: True} if fused_after else {})
