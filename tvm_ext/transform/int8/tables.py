"""Lookup tables (``kernels.int8_tables``) as constant operands of the kernels that read them."""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from tvm import relax


@functools.cache
def table_constant(table: Callable[..., np.ndarray], *args) -> relax.Constant:
    """The Relax constant of ``table(*args)`` (hashable compile-time arguments): one object per distinct table,
    so that the layers reading the same table read one weight of the bundle (flash, not arena)."""
    return relax.const(table(*args))
