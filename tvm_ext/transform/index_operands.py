"""Which operand of which Relax operator is an index into another tensor, and the values it may take.

An index operator's kernel reads or writes the place its index operand's values name: a value outside its
axis makes TVM's lowering read or write outside the tensor. The bounds here are those of TVM 0.27's lowering
of each operator (its topi function), which the frontends feed with the model's indices:

- `take` (ONNX Gather, TFLite GATHER and EMBEDDING_LOOKUP) in its "fast" mode: [0, axis size). ONNX's
  negative indices reach it already shifted by the axis size (the frontend's `where(i < 0, i + size, i)`),
  so [-size, size) in the model is [0, size) here; TFLite's GATHER allows no negative index. Its "clip"
  and "wrap" modes clamp or wrap every value: nothing to check.
- `gather_elements` (ONNX GatherElements): [0, axis size), negatives shifted by the frontend as for Gather.
- `gather_nd` (ONNX GatherND, TFLite GATHER_ND): coordinate c of the indices' last axis indexes data axis
  batch_dims + c: [0, that size), negatives shifted by the frontend.
- `scatter_elements` (ONNX ScatterElements): [-axis size, axis size): topi shifts a negative index itself.
- `scatter_nd` (ONNX ScatterND, TFLite SCATTER_ND and the SEGMENT_SUM family): coordinate c indexes data
  axis c: [0, that size).
- `reverse_sequence` (TFLite REVERSE_SEQUENCE): each sequence length in [0, sequence axis size].

Any other operator whose kernel's accesses depend on tensor data is not trusted: `tvm_ext.codegen.index_checks`
refuses its kernel unless the accesses are provably inside their buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm
from tvm import relax, tirx

Bounds = tuple[tuple[int, int], ...]  # per coordinate: [low, high) of the values an index may take


@dataclass(frozen=True)
class IndexOperand:
    """Operand `position` of an operator call holds indices. `bounds` has one [low, high) pair per
    coordinate: with one pair every value has those bounds; with k > 1 pairs the operand's last axis has k
    elements, and element c of it (the c-th coordinate) has the c-th pair."""

    position: int
    bounds: Bounds


def bounds_violation(values: np.ndarray, bounds: Bounds) -> str | None:
    """How the integer array `values` (an index operand's value) breaks `bounds` ("index 1000 is outside
    [0, 10)"), or None when every value is inside them."""
    flat = np.asarray(values).astype(np.int64, copy=False).reshape(-1, len(bounds))
    for column, (low, high) in enumerate(bounds):
        bad = (flat[:, column] < low) | (flat[:, column] >= high)
        if bad.any():
            coordinate = f" (coordinate {column})" if len(bounds) > 1 else ""
            return f"index {int(flat[bad.argmax(), column])}{coordinate} is outside [{low}, {high})"
    return None


class UnknownShapeError(ValueError):
    """An index operator whose tensors' shapes are not static: its bounds cannot be known."""


def _static_shape(expr: relax.Expr) -> tuple[int, ...]:
    ty = expr.ty
    if (not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr)
            or not all(isinstance(dim, tirx.IntImm) for dim in ty.shape.values)):
        raise UnknownShapeError("its tensors' shapes are not static")
    return tuple(int(dim) for dim in ty.shape.values)


def _axis(axis, rank: int) -> int:
    return int(axis) % rank


def _take(call: relax.Call) -> IndexOperand | None:
    if str(call.attrs.mode) in ("clip", "wrap"):
        return None
    shape = _static_shape(call.args[0])
    if call.attrs.axis is None:
        size = 1
        for dim in shape:
            size *= dim
        return IndexOperand(1, ((0, size),))
    return IndexOperand(1, ((0, shape[_axis(call.attrs.axis, len(shape))]),))


def _gather_elements(call: relax.Call) -> IndexOperand:
    shape = _static_shape(call.args[0])
    return IndexOperand(1, ((0, shape[_axis(call.attrs.axis, len(shape))]),))


def _gather_nd(call: relax.Call) -> IndexOperand:
    shape, coordinates = _static_shape(call.args[0]), _static_shape(call.args[1])[-1]
    batch = int(call.attrs.batch_dims)
    return IndexOperand(1, tuple((0, shape[batch + c]) for c in range(coordinates)))


def _scatter_elements(call: relax.Call) -> IndexOperand:
    shape = _static_shape(call.args[0])
    size = shape[_axis(call.attrs.axis, len(shape))]
    return IndexOperand(1, ((-size, size),))


def _scatter_nd(call: relax.Call) -> IndexOperand:
    shape, coordinates = _static_shape(call.args[0]), _static_shape(call.args[1])[-1]
    return IndexOperand(1, tuple((0, shape[c]) for c in range(coordinates)))


def _reverse_sequence(call: relax.Call) -> IndexOperand:
    shape = _static_shape(call.args[0])
    return IndexOperand(1, ((0, shape[_axis(call.attrs.seq_axis, len(shape))] + 1),))


INDEX_OPERATORS: dict[str, Callable[[relax.Call], IndexOperand | None]] = {
    "relax.take": _take,
    "relax.gather_elements": _gather_elements,
    "relax.gather_nd": _gather_nd,
    "relax.scatter_elements": _scatter_elements,
    "relax.scatter_nd": _scatter_nd,
    "relax.reverse_sequence": _reverse_sequence,
}


def index_operand(call: relax.Call) -> IndexOperand | None:
    """The index operand of `call` and its bounds, or None when `call` takes no index whose values need a
    check. UnknownShapeError when it is an index operator whose shapes are not static."""
    if not isinstance(call.op, tvm.ir.Op):
        return None
    bounds_of = INDEX_OPERATORS.get(call.op.name)
    return None if bounds_of is None else bounds_of(call)
