"""Work-arounds for the int64 bias of 16x8 (int16-activation) CONV_2D and FULLY_CONNECTED in TVM 0.27's TFLite
frontend: ``relax.const(array, "int64")`` (what the frontend builds) is a constant that type inference reads as
float32, ``relax.const(array)`` narrows an int64 array to int32 (wrapping values beyond it), and
``relax.dequantize`` refuses int64 data. So an int64 array becomes a constant through a runtime tensor, and its
dequantize is ``astype(b, float32) * scale`` (a bias's zero point is 0), the form the int8 pass's bias pattern
also reads."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tvm
from tvm import relax


def with_array_dtypes(tvm_new_const: Callable[..., Any]) -> Callable[..., Any]:
    """``ExprTable.new_const`` (value, shape=None, dtype="float32", source_name=None) that makes an int64
    array an int64 constant of the same values; every other constant exactly as ``tvm_new_const`` makes it."""

    def new_const(value, shape=None, dtype="float32", source_name=None):
        if isinstance(value, np.ndarray) and value.dtype == np.int64 and dtype == "int64":
            value, dtype = tvm.runtime.tensor(value), None
        return tvm_new_const(value, shape=shape, dtype=dtype, source_name=source_name)

    return new_const


def dequantize_int64(data: relax.Expr, scale: relax.Expr) -> relax.Expr:
    """The float value of an int64 tensor of zero point 0: ``astype(data, float32) * scale``."""
    return relax.op.multiply(relax.op.astype(data, "float32"), scale)
