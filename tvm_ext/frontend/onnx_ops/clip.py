"""ONNX Clip with constant finite bounds as one `relax.clip` (ReLU6 is Clip(0, 6) in every PyTorch export).

TVM 0.27's converter writes any Clip as `call_tir` of TOPI's maximum and minimum: the float pipeline compiles
those, but neither the quantizer nor the int8 lowerings read a TIR call, so a Conv -> Clip model could not be
quantized (it ended in an internal error). `relax.clip(x, low, high)` computes the same function and is the
form TVM's TFLite frontend gives a RELU6, which both read. Bounds that are not constants (or not finite) are
left to TVM's converter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant


def constant_clip(inputs: Sequence[relax.Expr | None], attrs: dict[str, Any], opset: int) -> relax.Expr | None:
    """The Clip node (`inputs`, `attrs`, of opset `opset`) as relax.clip when both bounds are finite
    constants: attributes `min` and `max` before opset 11, constant inputs 2 and 3 from it on. None
    otherwise."""
    if opset < 11:
        bounds = [attrs.get("min"), attrs.get("max")]
    else:
        bounds = [_scalar(inputs[i]) if len(inputs) > i else None for i in (1, 2)]
    if any(bound is None or not math.isfinite(bound) for bound in bounds):
        return None
    low, high = (float(bound) for bound in bounds)
    return relax.op.clip(inputs[0], low, high) if low <= high else None


def _scalar(value: relax.Expr | None) -> float | None:
    """The value of a one-element float constant, or None."""
    if not isinstance(value, Constant):
        return None
    array = value.value.numpy()
    return float(array.reshape(-1)[0]) if array.size == 1 and np.issubdtype(array.dtype, np.floating) else None
