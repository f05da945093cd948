"""A MAC reduction inside a kernel written as one TE extern stage (the SVDF state update, the LSTM's gates).

Such a kernel is plain serial loops that no schedule moves; its products are written as a reduction block in
the form a DSP core's helpers replace (``backends.cortex_m.schedules.extern_helpers``: the reduction loop,
then ``count`` accumulators innermost) and ``tvm_ext.plan.macs`` counts (one MAC per block iteration). Anywhere
else (a core without the helpers, fewer than four accumulators, a zero point left in the product) the
block is C's plain loop: the same integer sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tvm
from tvm import s_tir, tirx
from tvm.ir.expr import Expr as PrimExpr


def _centred(value: PrimExpr, zero_point: int) -> PrimExpr:
    """int32(value), less ``zero_point`` when it is not 0."""
    widened = value.astype("int32")
    return widened - zero_point if zero_point else widened


def accumulate_products(acc: tirx.Buffer, data: tirx.Buffer, data_row: Sequence[PrimExpr], weights: tirx.Buffer,
                        weight_row: Callable[[PrimExpr], Sequence[PrimExpr]], count: int, depth: int, name: str,
                        data_zero_point: int = 0, weight_zero_point: int = 0) -> tirx.Stmt:
    """The loops ``for k < depth: for c < count: acc[c] += (int32(data[*data_row, k]) - data_zero_point) *
    (int32(weights[*weight_row(c), k]) - weight_zero_point)`` around one reduction block named ``name``
    (no init: the caller sets the accumulators). ``data_row`` indexes every axis of ``data`` but the last,
    ``weight_row(c)`` every axis of ``weights`` but the last, for accumulator c; both may use the caller's
    loop variables (each index becomes an iteration variable of the block, bound to it)."""
    c, k = tirx.Var("c", "int32"), tirx.Var("k", "int32")
    rows = [*data_row, *weight_row(c)]
    extents = [int(extent) for extent in (*data.shape[:-1], *weights.shape[:-1])]
    row_vars = [tirx.IterVar(tvm.ir.Range(0, extent), tirx.Var(f"v{axis}", "int32"), tirx.IterVar.DataPar)
                for axis, extent in enumerate(extents)]
    vc = tirx.IterVar(tvm.ir.Range(0, count), tirx.Var("vc", "int32"), tirx.IterVar.DataPar)
    vk = tirx.IterVar(tvm.ir.Range(0, depth), tirx.Var("vk", "int32"), tirx.IterVar.CommReduce)
    data_index = [v.var for v in row_vars[:len(data_row)]] + [vk.var]
    weight_index = [v.var for v in row_vars[len(data_row):]] + [vk.var]
    update = tirx.BufferStore(acc, acc[vc.var] + _centred(data[tuple(data_index)], data_zero_point)
                              * _centred(weights[tuple(weight_index)], weight_zero_point), [vc.var])

    def region(buffer: tirx.Buffer, index: list) -> tirx.BufferRegion:
        return tirx.BufferRegion(buffer, [tvm.ir.Range.from_min_extent(i, 1) for i in index])

    reads = [region(acc, [vc.var]), region(data, data_index), region(weights, weight_index)]
    block = s_tir.SBlock([*row_vars, vc, vk], reads, reads[:1], name, update)
    realize = s_tir.SBlockRealize([*rows, c, k], True, block)
    return tirx.For(k, 0, depth, tirx.ForKind.SERIAL, tirx.For(c, 0, count, tirx.ForKind.SERIAL, realize))


def over_tiles(total: int, tile: int, body: Callable[[PrimExpr, int], tirx.Stmt], name: str) -> list[tirx.Stmt]:
    """``body(first, count)`` over ``total`` units in tiles of ``tile`` units: a loop (its variable ``name``) over
    the whole tiles, then one shorter tile of the remainder, each only where it has units."""
    whole, rest = divmod(total, tile)
    stmts = []
    if whole:
        var = tirx.Var(name, "int32")
        stmts.append(tirx.For(var, 0, whole, tirx.ForKind.SERIAL, body(var * tile, tile)))
    if rest:
        stmts.append(body(tirx.const(whole * tile, "int32"), rest))
    return stmts
