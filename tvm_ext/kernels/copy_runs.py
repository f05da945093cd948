"""Data movement as runs of contiguous copies: int8 RESIZE_NEAREST_NEIGHBOR and CONCATENATION as TE extern
stages whose only loops are ``dst[d + i] = src[s + i]`` over i from 0 (``copy_run``).

A generic kernel computes each output byte on its own (the source index from the tables, or which operand
holds it): about 12 instructions per resized byte and 7 per concatenated one on Cortex-M4F. Written as runs,
each run is one tight loop on any core, and on DSP cores one call of the bundle's word copy
(``backends.cortex_m.schedules.extern_helpers`` recognizes the loop's form; no schedule moves an extern
stage's loops). The bytes copied are the generic kernels' exactly: no requantization either way (TFLite
Micro's kernels copy the stored int8 values).
"""

from __future__ import annotations

import math
from typing import Sequence

from tvm import te, tirx, topi


def _extern_from_zero(shape: Sequence[int], inputs: Sequence[te.Tensor], build, name: str) -> te.Tensor:
    """``te.extern`` of ``build`` on ``inputs``, its result of ``shape`` and the inputs' type. Its buffers start
    at element 0 (te.extern's own have a symbolic offset, which keeps every flattened index in int64) and its
    extents are in the type of the inputs' (int64 from Relax): every index of the loops is in that one type, which
    the lowering's NarrowDataType then narrows to int32 as for any kernel (except offsets computed from a value
    loaded from a table, which it cannot bound: a resize's source offsets stay int64)."""
    index = _dtype(inputs[0].shape[0])
    out_shape = [tirx.IntImm(index, int(d)) for d in shape]
    dtype = str(inputs[0].dtype)
    in_buffers = [tirx.decl_buffer(t.shape, str(t.dtype), name=t.op.name) for t in inputs]
    return te.extern(out_shape, list(inputs), build, name=name, dtype=dtype, in_buffers=in_buffers,
                     out_buffers=[tirx.decl_buffer(out_shape, dtype, name=name)])


def _dtype(expr: tirx.PrimExpr) -> str:
    """The type of an index expression."""
    return str(expr.ty.dtype)


def _at(buffer: tirx.Buffer, offset: tirx.PrimExpr) -> list[tirx.PrimExpr]:
    """The indices of ``buffer``'s row-major element ``offset``: zeros, then the offset on the innermost axis
    (the buffer's flattening gives back the offset itself)."""
    return [tirx.const(0, _dtype(offset))] * (len(buffer.shape) - 1) + [offset]


def _loop(var: tirx.Var, extent: int, body: tirx.Stmt) -> tirx.For:
    """``for var in [0, extent)``, its bounds in the variable's type."""
    return tirx.For(var, tirx.const(0, _dtype(var)), tirx.const(extent, _dtype(var)), tirx.ForKind.SERIAL, body)


def copy_run(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, src: tirx.Buffer, src_offset: tirx.PrimExpr,
             count: int, name: str) -> tirx.Stmt:
    """``dst[dst_offset + i] = src[src_offset + i]`` for i < count (row-major element offsets), in ascending i."""
    i = tirx.Var(name, _dtype(dst_offset))
    load = tirx.BufferLoad(src, _at(src, src_offset + i))
    return _loop(i, count, tirx.BufferStore(dst, load, _at(dst, dst_offset + i)))


def resize_nearest_neighbor_int8(data: te.Tensor, rows: te.Tensor, columns: te.Tensor) -> te.Tensor:
    """NHWC int8 ``data`` at the source ``rows`` and ``columns`` (int32 index tables, one per output row and
    column: TFLite's GetNearestNeighbor, computed at compile time), copied unchanged.

    Each output row whose source row differs from the previous output row's is built once, one copy of the
    ``depth`` contiguous bytes of its source pixel per output pixel; an output row with the same source row as
    the one before it (an upsampling's repeated rows) is that row copied whole (out_width * depth bytes).
    """
    batches, in_height, in_width, depth = (int(d) for d in data.shape)
    out_height, out_width = int(rows.shape[0]), int(columns.shape[0])
    row_bytes = out_width * depth

    def build(ins, outs):
        source, row_table, column_table = ins
        index = _dtype(outs[0].shape[0])  # the extents' type: the lowering narrows it as for any kernel
        b, y, x = (tirx.Var(name, index) for name in ("b", "y", "x"))
        source_row, source_column = tirx.Var("source_row", index), tirx.Var("source_column", index)
        out_row = (b * out_height + y) * row_bytes
        pixel = copy_run(outs[0], out_row + x * depth, source,
                         ((b * in_height + source_row) * in_width + source_column) * depth, depth, "c")
        built = tirx.SeqStmt([tirx.Bind(source_row, tirx.Cast(index, row_table[y])), _loop(
            x, out_width, tirx.SeqStmt([tirx.Bind(source_column, tirx.Cast(index, column_table[x])), pixel]))])
        repeated = copy_run(outs[0], out_row, outs[0], out_row - row_bytes, row_bytes, "i")
        same_row = tirx.And(y > 0, row_table[y] == row_table[tirx.max(y - 1, 0)])
        body = tirx.IfThenElse(same_row, repeated, built)
        return _loop(b, batches, _loop(y, out_height, body))

    return _extern_from_zero((batches, out_height, out_width, depth), [data, rows, columns], build,
                         "resize_nearest_neighbor_int8")


def concatenate_runs(pieces: Sequence[te.Tensor], axis: int) -> te.Tensor:
    """``pieces`` joined along ``axis`` (all of one type, equal elsewhere), as ``topi.concatenate`` computes:
    per index of the axes before ``axis``, one copy of each piece's contiguous run (its extent along ``axis``
    times the elements of the axes after it). A join along the outermost axis is one copy per piece. One piece is
    ``topi.concatenate``'s copy, which the passes turn into a view of it (no kernel)."""
    if len(pieces) == 1:
        return topi.concatenate(pieces, axis)
    shape = [int(d) for d in pieces[0].shape]
    outer = math.prod(shape[:axis])
    inner = math.prod(shape[axis + 1:])
    runs = [int(piece.shape[axis]) * inner for piece in pieces]
    out_shape = [*shape[:axis], sum(int(piece.shape[axis]) for piece in pieces), *shape[axis + 1:]]

    def build(ins, outs):
        o = tirx.Var("o", _dtype(outs[0].shape[0]))
        copies, start = [], 0
        for k, (piece, run) in enumerate(zip(ins, runs)):
            copies.append(copy_run(outs[0], o * sum(runs) + start, piece, o * run, run, f"i{k}"))
            start += run
        return _loop(o, outer, tirx.SeqStmt(copies) if len(copies) > 1 else copies[0])

    return _extern_from_zero(out_shape, pieces, build, "concatenate_runs")
