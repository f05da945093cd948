"""SPLIT and SPLIT_V of an int8 activation: each piece ``split(x, ...)[i]`` the frontend writes -> a copy kernel
of that piece (TFLite Micro's kernels copy the stored values; the quantization is the input's). A split into one
piece is Relax's split itself (typed as that one tensor), a view of the input."""

from __future__ import annotations

from typing import Optional

from tvm import relax, topi

from .data_movement import recorded_operator
from .graph import is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext

SPLIT_OPERATORS = frozenset({"SPLIT", "SPLIT_V"})


def _piece(value: relax.Expr, ctx: LoweringContext) -> Optional[tuple[relax.Call, int]]:
    """(the split of an int8 activation already lowered, which piece) that ``value`` is, else None."""
    if isinstance(value, relax.TupleGetItem):
        split, index = ctx.graph.value_of(value.tuple_value), value.index
    else:
        split, index = value, 0
    if not is_call_to(split, "relax.split") or split.args[0] not in ctx.lowered:
        return None
    return (split, index) if isinstance(value, relax.TupleGetItem) or len(_pieces(split)) == 1 else None


def _pieces(split: relax.Call) -> list[relax.TensorType]:
    """The types of a split's pieces (a split into one piece is typed as that tensor)."""
    return list(split.ty.fields) if isinstance(split.ty, relax.TupleType) else [split.ty]


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return _piece(value, ctx) is not None


def _match(value: relax.Expr, ctx: LoweringContext) -> FixedCall:
    split, index = _piece(value, ctx)
    axis = int(split.attrs.axis) % len(split.args[0].ty.shape)
    sizes = [int(piece.shape[axis]) for piece in _pieces(split)]
    begin = sum(sizes[:index])
    kind, data = recorded_operator(split, ctx, SPLIT_OPERATORS, "SPLIT"), ctx.lowered[split.args[0]]
    if len(sizes) == 1:  # all of the input: a reshape to its own shape, which becomes a view
        shape = [int(size) for size in split.args[0].ty.shape]
        return FixedCall(KernelCall(kind, split, topi.reshape, (data,), {"newshape": shape}))
    return FixedCall(KernelCall(kind, split, topi.strided_slice, (data,),
                                {"begin": [begin], "end": [begin + sizes[index]], "strides": [1], "axes": [axis]}))


LOWERING = Lowering(SPLIT_OPERATORS, _completes, _match)
