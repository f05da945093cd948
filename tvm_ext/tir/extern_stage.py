"""A TE extern stage whose buffers start at element 0 (``extern_from_zero``): the form of the kernels written
as TIR statements (``tvm_ext.kernels.copy_runs``, a backend's own kernels such as
``backends.cortex_m.schedules.helium_add``)."""

from __future__ import annotations

from typing import Callable, Sequence

from tvm import te, tirx

STATE_SHIFT_ANNOTATION = "tvm_ext.state_shift"
"""The annotation of an extern stage's loop that shifts a state one element down in place (an SVDF state update's,
``tvm_ext.kernels.svdf.svdf_state_update``), which a DSP core's helpers copy with stores to the aligned destination
(``backends.cortex_m.schedules.extern_helpers``); any other core compiles the loop as it is."""


def extern_from_zero(shape: Sequence[int], inputs: Sequence[te.Tensor], build, name: str) -> te.Tensor:
    """``te.extern`` of ``build`` on ``inputs``, its result of ``shape`` and the inputs' type. Its buffers start
    at element 0 (te.extern's own have a symbolic offset, which keeps every flattened index in int64) and its
    extents are in the type of the inputs' (int64 from Relax): every index of the loops is in that one type, which
    the lowering's NarrowDataType then narrows to int32 as for any kernel (except offsets computed from a value
    loaded from a table, which it cannot bound: a resize's source offsets stay int64)."""
    index = str(inputs[0].shape[0].ty.dtype)
    out_shape = [tirx.IntImm(index, int(d)) for d in shape]
    dtype = str(inputs[0].dtype)
    in_buffers = [tirx.decl_buffer(t.shape, str(t.dtype), name=t.op.name) for t in inputs]
    return te.extern(out_shape, list(inputs), build, name=name, dtype=dtype, in_buffers=in_buffers,
                     out_buffers=[tirx.decl_buffer(out_shape, dtype, name=name)])


def row_major_indices(buffer: tirx.Buffer, offset: tirx.PrimExpr) -> list[tirx.PrimExpr]:
    """The indices of ``buffer``'s row-major element ``offset``: zeros, then the offset on the innermost axis
    (the buffer's flattening gives back the offset itself)."""
    return [tirx.const(0, str(offset.ty.dtype))] * (len(buffer.shape) - 1) + [offset]


def element_address(buffer: tirx.Buffer, offset: tirx.PrimExpr) -> tirx.PrimExpr:
    """The address of ``buffer``'s row-major element ``offset`` (a helper call's pointer argument)."""
    return tirx.address_of(tirx.BufferLoad(buffer, row_major_indices(buffer, offset)))


def runs_of(count: int, run: int, index_type: str, call: Callable[[tirx.PrimExpr, int], tirx.Stmt]) -> list[tirx.Stmt]:
    """The statements of an extern stage over ``count`` elements in runs of ``run``: a loop (its variable of
    ``index_type``) of ``call(start, run)`` over the whole runs, then ``call(start, rest)`` for the rest, each where
    there is one; ``start`` the run's first element."""
    runs, rest = divmod(count, run)
    steps = []
    if runs:
        r = tirx.Var("r", index_type)
        steps.append(tirx.For(r, tirx.const(0, index_type), tirx.const(runs, index_type), tirx.ForKind.SERIAL,
                              call(r * tirx.const(run, index_type), run)))
    if rest:
        steps.append(call(tirx.const(runs * run, index_type), rest))
    return steps
