"""A MAC reduction inside a kernel written as one TE extern stage (the SVDF state update, the LSTM's gates).

Such a kernel is plain serial loops that no schedule moves; its products are written as a reduction block in
the form a DSP core's helpers replace (``backends.cortex_m.schedules.extern_helpers``: the reduction loop,
then ``count`` accumulators innermost) and ``tvm_ext.plan.macs`` counts (one MAC per block iteration). Anywhere
else (a core without the helpers, fewer than four accumulators, a zero point left in the product) the
block is C's plain loop: the same integer sums.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import tvm
from tvm import s_tir, tirx
from tvm.ir.expr import Expr as PrimExpr


def _centred(value: PrimExpr, zero_point: int) -> PrimExpr:
    """int32(value), less ``zero_point`` when it is not 0."""
    widened = value.astype("int32")
    return widened - zero_point if zero_point else widened


def _row_vars(extents: list[int]) -> list[tirx.IterVar]:
    """A block's data-parallel iteration variables over ``extents``, one per indexed axis of its rows."""
    return [tirx.IterVar(tvm.ir.Range(0, extent), tirx.Var(f"v{axis}", "int32"), tirx.IterVar.DataPar)
            for axis, extent in enumerate(extents)]


def _region(buffer: tirx.Buffer, index: list) -> tirx.BufferRegion:
    """The one element of ``buffer`` at ``index``."""
    return tirx.BufferRegion(buffer, [tvm.ir.Range.from_min_extent(i, 1) for i in index])


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
    row_vars = _row_vars([int(extent) for extent in (*data.shape[:-1], *weights.shape[:-1])])
    vc = tirx.IterVar(tvm.ir.Range(0, count), tirx.Var("vc", "int32"), tirx.IterVar.DataPar)
    vk = tirx.IterVar(tvm.ir.Range(0, depth), tirx.Var("vk", "int32"), tirx.IterVar.CommReduce)
    data_index = [v.var for v in row_vars[:len(data_row)]] + [vk.var]
    weight_index = [v.var for v in row_vars[len(data_row):]] + [vk.var]
    update = tirx.BufferStore(acc, acc[vc.var] + _centred(data[tuple(data_index)], data_zero_point)
                              * _centred(weights[tuple(weight_index)], weight_zero_point), [vc.var])

    reads = [_region(acc, [vc.var]), _region(data, data_index), _region(weights, weight_index)]
    block = s_tir.SBlock([*row_vars, vc, vk], reads, reads[:1], name, update)
    realize = s_tir.SBlockRealize([*rows, c, k], True, block)
    return tirx.For(k, 0, depth, tirx.ForKind.SERIAL, tirx.For(c, 0, count, tirx.ForKind.SERIAL, realize))


LANE_GROUP = 4
"""Inputs per group of a lane-order row (``accumulate_row`` with ``lanes``, ``lane_order``): a word of int8 inputs,
whose bytes 0, 2 and 1, 3 a DSP core's SXTB16 widens into two pairs."""


def lane_order(rows: np.ndarray) -> np.ndarray:
    """Rows (..., L) of weights, L a multiple of LANE_GROUP, in SXTB16's lane order: per group of four, the weights of
    inputs 0, 2, 1, 3 (``[..., 4g + 2a + b]`` holds ``[..., 4g + a + 2b]``), the order ``accumulate_row`` with
    ``lanes`` reads them in."""
    *lead, length = rows.shape
    grouped = rows.reshape(*lead, length // LANE_GROUP, 2, 2)
    return np.ascontiguousarray(np.swapaxes(grouped, -1, -2).reshape(rows.shape))


def _combined(iter_vars: list[tirx.IterVar], steps: list[int]) -> PrimExpr:
    """The sum of each variable times its step (a step of 1: the variable itself)."""
    terms = [iv.var if step == 1 else iv.var * step for iv, step in zip(iter_vars, steps)]
    return functools.reduce(lambda total, term: total + term, terms)


def accumulate_row(acc: tirx.Buffer, data: tirx.Buffer, data_row: Sequence[PrimExpr], data_start: PrimExpr,
                   weights: tirx.Buffer, weight_row: Sequence[PrimExpr], depth: int, name: str,
                   data_zero_point: int = 0, lanes: bool = False) -> tirx.Stmt:
    """The loop ``for k < depth: acc[0] += (int32(data[*data_row, data_start + k]) - data_zero_point) *
    int32(weights[*weight_row, k])`` around one reduction block named ``name`` (no init: the caller sets the
    accumulator): one row's dot product into one accumulator, the row starting anywhere in the data's last axis (a
    DSP core's helper computes it: ``backends.cortex_m.schedules.extern_helpers``). ``data_row`` and
    ``weight_row`` index every axis of ``data`` and ``weights`` but the last; they and ``data_start`` may use the
    caller's loop variables (each becomes an iteration variable of the block, bound to it). ``lanes``: the weights
    in ``lane_order`` (depth a multiple of LANE_GROUP), three loops (groups g, then a < 2, then b < 2) in which input
    4g + a + 2b meets weight 4g + 2a + b: the same sum."""
    axes = [(depth // LANE_GROUP, LANE_GROUP, LANE_GROUP), (2, 1, 2), (2, 2, 1)] if lanes else [(depth, 1, 1)]
    names = [f"k{axis}" for axis in range(len(axes))] if lanes else ["k"]
    loop_vars = [tirx.Var(name, "int32") for name in names]
    row_vars = _row_vars([int(extent) for extent in (*data.shape[:-1], *weights.shape[:-1])])
    data_vars, weight_vars = row_vars[:len(data_row)], row_vars[len(data_row):]
    vs = tirx.IterVar(tvm.ir.Range(0, int(data.shape[-1])), tirx.Var("vs", "int32"), tirx.IterVar.DataPar)
    vks = [tirx.IterVar(tvm.ir.Range(0, extent), tirx.Var(f"v{name}", "int32"), tirx.IterVar.CommReduce)
           for name, (extent, _, _) in zip(names, axes)]
    data_index = [v.var for v in data_vars] + [vs.var + _combined(vks, [step for _, step, _ in axes])]
    weight_index = [v.var for v in weight_vars] + [_combined(vks, [step for _, _, step in axes])]
    zero = tirx.const(0, "int32")
    update = tirx.BufferStore(acc, acc[zero] + _centred(data[tuple(data_index)], data_zero_point)
                              * _centred(weights[tuple(weight_index)], 0), [zero])
    reads = [_region(acc, [zero]), _region(data, data_index), _region(weights, weight_index)]
    block = s_tir.SBlock([*data_vars, vs, *weight_vars, *vks], reads, reads[:1], name, update)
    nest: tirx.Stmt = s_tir.SBlockRealize([*data_row, data_start, *weight_row, *loop_vars], True, block)
    for var, (extent, _, _) in reversed(list(zip(loop_vars, axes))):
        nest = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, nest)
    return nest


def accumulate_interleaved(acc: tirx.Buffer, start: tirx.Buffer, start_row: Sequence[PrimExpr], data: tirx.Buffer,
                           data_row: Sequence[PrimExpr], weights: tirx.Buffer, weight_prefix: Sequence[PrimExpr],
                           name: str) -> tirx.Stmt:
    """The loops ``for v < V: for j < G: for c < C: for k < K: acc[C * v + c] += int32(data[*data_row, K * j + k])
    * int32(weights[*weight_prefix, v, j, c, k])`` around one reduction block named ``name`` whose init sets
    ``acc[C * v + c] = start[*start_row, C * v + c]`` (the sums start there: no copy of the offsets first), for
    weights whose last four axes are (V, G, C, K): per tile v of C accumulators, each group of K inputs' weights
    of the tile's C accumulators together (the interleaved form a DSP core's helper reads two accumulators' at a
    load, every tile in one call: ``backends.cortex_m.schedules.extern_helpers``). ``start_row`` and
    ``data_row`` index every axis of ``start`` and ``data`` but the last, ``weight_prefix`` every axis of
    ``weights`` but the last four; each index becomes an iteration variable of the block, bound to it."""
    tiles, groups, count, group = (int(extent) for extent in weights.shape[-4:])
    v, j, c, k = (tirx.Var(name, "int32") for name in ("v", "j", "c", "k"))
    rows = [*start_row, *data_row, *weight_prefix]
    row_vars = _row_vars([int(extent) for extent in (*start.shape[:-1], *data.shape[:-1], *weights.shape[:-4])])
    start_vars, row_vars_rest = row_vars[:len(start_row)], row_vars[len(start_row):]
    vv = tirx.IterVar(tvm.ir.Range(0, tiles), tirx.Var("vv", "int32"), tirx.IterVar.DataPar)
    vj = tirx.IterVar(tvm.ir.Range(0, groups), tirx.Var("vj", "int32"), tirx.IterVar.CommReduce)
    vc = tirx.IterVar(tvm.ir.Range(0, count), tirx.Var("vc", "int32"), tirx.IterVar.DataPar)
    vk = tirx.IterVar(tvm.ir.Range(0, group), tirx.Var("vk", "int32"), tirx.IterVar.CommReduce)
    data_index = [iv.var for iv in row_vars_rest[:len(data_row)]] + [vj.var * group + vk.var]
    weight_index = [iv.var for iv in row_vars_rest[len(data_row):]] + [vv.var, vj.var, vc.var, vk.var]
    acc_index = [vv.var * count + vc.var]
    start_index = [iv.var for iv in start_vars] + acc_index
    update = tirx.BufferStore(acc, acc[acc_index[0]] + _centred(data[tuple(data_index)], 0)
                              * _centred(weights[tuple(weight_index)], 0), acc_index)
    init = tirx.BufferStore(acc, start[tuple(start_index)], acc_index)
    reads = [_region(acc, acc_index), _region(data, data_index), _region(weights, weight_index),
             _region(start, start_index)]
    block = s_tir.SBlock([*row_vars, vv, vj, vc, vk], reads, reads[:1], name, update, init=init)
    nest: tirx.Stmt = s_tir.SBlockRealize([*rows, v, j, c, k], True, block)
    for var, extent in ((k, group), (c, count), (j, groups), (v, tiles)):
        nest = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, nest)
    return nest


def accumulate_rows(acc: tirx.Buffer, start: tirx.Buffer, start_row: Sequence[PrimExpr], data: tirx.Buffer,
                    data_row: Sequence[PrimExpr], weights: tirx.Buffer, weight_prefix: Sequence[PrimExpr],
                    name: str) -> tirx.Stmt:
    """The loops ``for r < R: for k < K: acc[r] += int32(data[*data_row, k]) * int32(weights[*weight_prefix, r, k])``
    around one reduction block named ``name`` whose init sets ``acc[r] = start[*start_row, r]``, for weights whose
    last two axes are (R, K): TFLite's [row, input] layout, every row of a recurrent cell's product in one block
    (a Helium core's helper computes it, R whole tiles of four rows, in one call:
    ``backends.cortex_m.schedules.extern_helpers``; ``rows_padded`` pads R so). ``start_row``, ``data_row`` and
    ``weight_prefix`` index every axis of ``start`` and ``data`` but the last, of ``weights`` but the last two; each
    index becomes an iteration variable of the block, bound to it."""
    count, depth = (int(extent) for extent in weights.shape[-2:])
    r, k = tirx.Var("r", "int32"), tirx.Var("k", "int32")
    row_vars = _row_vars([int(extent) for extent in (*start.shape[:-1], *data.shape[:-1], *weights.shape[:-2])])
    start_vars = row_vars[:len(start_row)]
    data_vars = row_vars[len(start_row):len(start_row) + len(data_row)]
    weight_vars = row_vars[len(start_row) + len(data_row):]
    vr = tirx.IterVar(tvm.ir.Range(0, count), tirx.Var("vr", "int32"), tirx.IterVar.DataPar)
    vk = tirx.IterVar(tvm.ir.Range(0, depth), tirx.Var("vk", "int32"), tirx.IterVar.CommReduce)
    data_index = [iv.var for iv in data_vars] + [vk.var]
    weight_index = [iv.var for iv in weight_vars] + [vr.var, vk.var]
    start_index = [iv.var for iv in start_vars] + [vr.var]
    update = tirx.BufferStore(acc, acc[vr.var] + _centred(data[tuple(data_index)], 0)
                              * _centred(weights[tuple(weight_index)], 0), [vr.var])
    init = tirx.BufferStore(acc, start[tuple(start_index)], [vr.var])
    reads = [_region(acc, [vr.var]), _region(data, data_index), _region(weights, weight_index),
             _region(start, start_index)]
    block = s_tir.SBlock([*row_vars, vr, vk], reads, reads[:1], name, update, init=init)
    realize = s_tir.SBlockRealize([*start_row, *data_row, *weight_prefix, r, k], True, block)
    return tirx.For(r, 0, count, tirx.ForKind.SERIAL, tirx.For(k, 0, depth, tirx.ForKind.SERIAL, realize))


def rows_padded(weights: np.ndarray) -> np.ndarray:
    """Weights (..., U, K) with U rounded up to whole tiles by zero rows (``padded_to_tiles``: the dual MAC's four
    channels, the tile of ``accumulate_rows``' helper; the padded rows' sums, started at 0, stay 0 and no kernel
    reads them)."""
    *lead, units, _ = weights.shape
    return np.pad(weights, [(0, 0)] * len(lead) + [(0, padded_to_tiles(units) - units), (0, 0)])


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


INTERLEAVED_TILE = 4
"""Accumulators per tile and inputs per group of the interleaved layout (``interleave_weights``): the dual MAC's
four channels (``backends.cortex_m.helpers.dual_mac_c.DUAL_MAC_CHANNELS``) and a word of int8 inputs. The one
source of the 4 x 4 layout: the LSTM's GATE_TILE, the SVDF's FEATURE_TILE and the helper's INTERLEAVED_GROUP
(``backends.cortex_m.helpers.dual_mac_interleaved_c``; tests/backends/cortex_m/test_extern_helpers.py checks it and
DUAL_MAC_CHANNELS against this) are this."""


def padded_to_tiles(count: int) -> int:
    """``count`` rounded up to a whole number of INTERLEAVED_TILE (accumulators, or inputs: the interleaved
    layout's tiles and groups)."""
    return -(-count // INTERLEAVED_TILE) * INTERLEAVED_TILE


def interleave_weights(weights: np.ndarray) -> np.ndarray:
    """Weights (..., U, K) laid out (..., U' / T, K' / T, T, T) (T: INTERLEAVED_TILE), U' and K' U and K rounded
    up to whole tiles (``padded_to_tiles``) by zero weights: per tile of T accumulators, each group of T inputs'
    weights of the tile's accumulators together, one after another (``[..., v, j, c, k]`` is
    ``[..., T * v + c, T * j + k]``, 0 beyond U or K), so that one pointer reads a tile's weights in the order its
    products use them (``accumulate_interleaved``). The zero weights' products add nothing where the inputs they
    meet are zeros too (``ZeroPaddedRow``): the same sums."""
    *lead, units, depth = weights.shape
    padding = [(0, 0)] * len(lead) + [(0, padded_to_tiles(units) - units), (0, padded_to_tiles(depth) - depth)]
    padded = np.pad(weights, padding)
    tiled = padded.reshape(*lead, padded.shape[-2] // INTERLEAVED_TILE, INTERLEAVED_TILE,
                           padded.shape[-1] // INTERLEAVED_TILE, INTERLEAVED_TILE)
    axes = list(range(len(lead)))
    return np.ascontiguousarray(tiled.transpose(*axes, *(len(lead) + a for a in (0, 2, 1, 3))))


class ZeroPaddedRow:
    """A kernel-local copy of a row of ``length`` int8 values (``source[*row, :]``) zero-padded to whole groups
    of INTERLEAVED_TILE (``padded_to_tiles``), for products over weights padded so (``interleave_weights``); no
    copy (``buffer`` None, ``operand`` the row itself) where ``length`` is whole groups."""

    def __init__(self, source: tirx.Buffer, row: Sequence[PrimExpr], length: int, name: str) -> None:
        self.source, self.row, self.length = source, list(row), length
        padded = padded_to_tiles(length)
        self.buffer = tirx.decl_buffer((padded,), "int8", name=name) if padded != length else None
        self.operand: tuple[tirx.Buffer, list[PrimExpr]] = (
            (source, self.row) if self.buffer is None else (self.buffer, []))

    def zero_tail(self) -> tirx.Stmt:
        """The padding's zeros, stored once per call (the copies never write there)."""
        i = tirx.Var("i", "int32")
        return tirx.For(i, self.length, int(self.buffer.shape[0]) - self.length, tirx.ForKind.SERIAL,
                        tirx.BufferStore(self.buffer, tirx.const(0, "int8"), [i]))

    def fill(self) -> tirx.Stmt:
        """The row's values copied in (for each row the products read)."""
        i = tirx.Var("i", "int32")
        return tirx.For(i, 0, self.length, tirx.ForKind.SERIAL,
                        tirx.BufferStore(self.buffer, self.source[(*self.row, i)], [i]))
