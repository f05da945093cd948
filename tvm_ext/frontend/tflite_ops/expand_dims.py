"""TFLite EXPAND_DIMS -> Relax: TVM 0.27's converter calls ``relax.op.expand_dims`` with one argument too many,
so it imports no model at all (float or quantized); this one inserts the size-1 axis the operator's constant
axis names (negative counts from the end of the output: ``axis + rank + 1``, as TFLite and Relax both read it)."""

from __future__ import annotations

import numpy as np
from tvm import relax


def convert_expand_dims(converter, op) -> relax.Expr:
    """The Relax expression of EXPAND_DIMS ``op``: its data with a new axis of size one (a copy of the
    stored values whatever their type or quantization, as TFLite Micro's kernel copies them)."""
    data, axis = converter.get_input_tensors(op)
    position = np.asarray(converter.get_tensor_value(axis)).reshape(-1)
    if position.size != 1:
        raise ValueError(f"EXPAND_DIMS takes one axis, got {position.size}")
    return relax.op.expand_dims(converter.get_tensor_expr(data), int(position[0]))
