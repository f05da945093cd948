"""A 16x8 CONV_2D's or FULLY_CONNECTED's loop over one pixel's channel tiles as one call of the fused 16x8 tiles'
out-of-line copy (``backends.cortex_m.helpers.tiles_16x8_c``).

Since session 22 a 16x8 layer's output channels are padded to whole tiles of four (``tvm_ext.transform.int8.mac.
padded_channels``), and each pixel runs a loop over its tiles whose iteration zeroes four accumulators, calls the
int16 dual MAC (``dual_mac.DUAL_MAC_S16_OP``, or ``DUAL_MAC_S16_W16_OP`` over the weights a DSP core's lowering
widened) and requantizes the four sums by a scalar loop (``tvm_ext.kernels.fixed_point.requantize_16x8``, an
activation's clamp, the channel test ``tile * 4 + lane < channels`` where the channels were padded). Every kernel
inlined that loop with its dual MAC: on cortex-m55 and rv32imc the 16x8 networks then had more code than on
cortex-m4f (resnet8_w15_40x24_16x8 14,480 B on cortex-m55 against 13,640). ``tiles_16x8_calls`` replaces each such
loop by one call of ``<prefix>_tiles_s16x4`` (``_w16``): one copy per bundle and weight type, its sizes read at run
time, every kernel's call a few instructions of arguments.

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) its iteration is, in this
order: stores of zero into exactly the four accumulators the MAC call then writes, the MAC call of constant sizes,
and a loop over the tile's four lanes whose one store (under the channel test or none) is
``int16(clamp(requantize_16x8(acc + bias[c], multiplier[c])))`` reading the MAC's accumulators lane by lane, int32
biases and multipliers at the channel ``c``, with a clamp of constant bounds or none; the inputs do not move with
the tile, the weights move four channels, and the outputs, biases and multipliers four elements. The accumulators
are then written and read only inside one iteration: the helper computes the same integer sums, bit-exact.

Where it runs: Helium cores (``HeliumMacSchedules.epilogue_calls``; the copy's own predicated vector loop) and RV32
(``RiscvMacSchedules.epilogue_calls``: a 16x8 reduction takes tiles of four there, each one call of the int16 dual
MAC, whose portable C the copy runs as a loop of its own; the calls it does not take, a padded convolution's border
regions, call the dual MAC's one out-of-line copy from the start, ``Tiles16x8Ops.mac``). Not on DSP cores without
MVE: on cortex-m4f, whose 16x8 kernels read int16-widened weights, the copy made ds_cnn_w33_45x13_16x8 slower
(3,521,140 -> 4,228,322 instructions, its first form) and larger (2,976 -> 3,024 B). Measured (code B, instructions):
cortex-m55 ds_cnn_w33_45x13_16x8 3,116 -> 2,888, 3,033,005 -> 3,215,362; tcn_44x19_c22_d1248_16x8 5,516 -> 2,788,
817,909 -> 771,920; rv32imc resnet8_w11_32x44_16x8 13,312 -> 9,122, 36,044,127 -> 42,576,286 (four sums a tile where
TVM's eight shared each input's load, and the copy's one input a step: see tiles_16x8.h.in), tcn_44x19_c22_d1248_16x8
5,726 -> 2,772, 2,631,026 -> 3,534,134.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.backend import HelperLibrary
from backends.cortex_m.helpers import TILES_16X8_HELPERS
from backends.cortex_m.helpers.tiles_16x8_c import dual_mac_s16x4_outlined_name, tiles_16x8_helper_name
from backends.cortex_m.schedules.conv_tiles import (CONV_TILES_ACCESS, TILE, LoopOffsets, _dual_mac_window,
                                                    _region, at_first_tile, pointee, sole_call, tile_loop_stmts,
                                                    with_tile_overread, zeroed_stores)
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_ACCESS, DUAL_MAC_S16_OP, _whole
from packager.fixed_point_c import REQUANTIZE_16X8_OP
from tvm_ext.tir.helper_access import HelperAccess, register_out_of_line
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import map_leaves, map_store_expressions, walk, with_root_loops_replaced

INT16_RANGE = (-(2**15), 2**15 - 1)
# tiles_s16x4(out, x, w, bias, multiplier, act_min, act_max, x_row_stride, w_channel_stride, rows, row_len, channels):
# CONV_TILES_ACCESS's reach but for its shifts (argument 5 here a value), the weights' rows up to the next whole tile
TILES_16X8_ACCESS = with_tile_overread(
    HelperAccess(tuple(reach for reach in CONV_TILES_ACCESS.pointers if reach.argument != 5)), 2, 8)


@dataclass(frozen=True)
class Tiles16x8Ops:
    """A core family's ops of the fused 16x8 tiles' call (``tiles``) and of the int16 dual MAC's out-of-line copy
    (``outlined``: DUAL_MAC_S16_OP's arguments and contract), each registered with the library that defines both
    helpers in that family's bundles (``register_tiles_16x8_ops``): the C names are the same in every family; and
    ``mac``, the int16 dual MAC's op the family's 16x8 kernels call in each tile loop (Cortex-M's inlined
    DUAL_MAC_S16_OP, a call of CORTEX_M_HELPERS; RV32's ``outlined`` itself, a call of its own library, so an RV32
    kernel calls no Cortex-M helper at any step)."""

    tiles: str
    outlined: str
    mac: str


def register_tiles_16x8_ops(ops: Tiles16x8Ops, library: HelperLibrary) -> None:
    """Register ``ops``' two helper calls as calls of ``library``'s fused tiles and dual MAC copy, both out of line."""
    register_helper_call(ops.tiles, library, tiles_16x8_helper_name, TILES_16X8_ACCESS)
    register_out_of_line(ops.tiles)
    register_helper_call(ops.outlined, library, dual_mac_s16x4_outlined_name, DUAL_MAC_ACCESS)
    register_out_of_line(ops.outlined)


CORTEX_M_TILES_16X8 = Tiles16x8Ops("tvm_ext.tiles_s16x4", "tvm_ext.dual_mac_s16x4_outlined", DUAL_MAC_S16_OP)
"""The Cortex-M cores' ops (TILES_16X8_HELPERS, after the DSP or Helium library whose dual MAC or lanes it uses)."""
register_tiles_16x8_ops(CORTEX_M_TILES_16X8, TILES_16X8_HELPERS)


@dataclass(frozen=True)
class Epilogue16x8:
    """A tile's 16x8 requantization loop: its lane loop, the store's element and the accumulator, bias and multiplier
    it reads (the block's variables bound to the loops'), the clamp's bounds and the channel test's bound (None: no
    test)."""

    lanes: tirx.For
    out: TensorLoad
    acc: TensorLoad
    bias: TensorLoad
    multiplier: TensorLoad
    clamp: tuple[int, int]
    bound: Optional[int]


def _clamped(value) -> Optional[tuple[tvm.ir.Call, int, int]]:
    """(the requantization call, low, high) of ``value``: the call under a clamp of constant bounds (max, min, both
    in either order) or none (int16's whole range), else None."""
    low, high = INT16_RANGE
    for _ in range(2):
        if isinstance(value, tirx.Max) and isinstance(value.b, tirx.IntImm):
            low, value = max(low, int(value.b)), value.a
        elif isinstance(value, tirx.Min) and isinstance(value.b, tirx.IntImm):
            high, value = min(high, int(value.b)), value.a
    is_call = isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op) \
        and value.op.name == REQUANTIZE_16X8_OP
    return (value, low, high) if is_call and low <= high else None


def _bound_load(load, bindings: dict) -> Optional[TensorLoad]:
    """``load`` (a TensorLoad) with the block's variables replaced by their bindings, else None."""
    if not isinstance(load, TensorLoad):
        return None
    return tirx.BufferLoad(load.source, [map_leaves(i, lambda n: bindings.get(n, n)) for i in load.indices])


def epilogue_16x8(stmt, tile) -> Optional[Epilogue16x8]:
    """The 16x8 requantization loop ``stmt`` of the module docstring's form (``tile``: the tile loop's variable),
    else None."""
    if not isinstance(stmt, tirx.For) or not isinstance(stmt.body, s_tir.SBlockRealize) \
            or not isinstance(stmt.extent, tirx.IntImm) or int(stmt.extent) != TILE or int(stmt.min) != 0:
        return None
    realize = stmt.body
    store = realize.block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int16" \
            or not isinstance(store.value, tirx.Cast) or str(store.value.ty.dtype) != "int16":
        return None
    clamped = _clamped(store.value.value)
    if clamped is None:
        return None
    call, low, high = clamped
    total, multiplier = call.args
    if not isinstance(total, tirx.Add):
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    loads = [_bound_load(load, bindings) for load in (total.a, total.b, multiplier)]
    if None in loads or any(str(load.source.dtype) != "int32" for load in loads):
        return None
    bound = None
    test = realize.predicate
    if not (isinstance(test, tirx.IntImm) and bool(test)):
        if not isinstance(test, tirx.LT) or not isinstance(test.b, tirx.IntImm):
            return None
        channel = tile * tirx.const(TILE, str(stmt.loop_var.ty.dtype)) + stmt.loop_var
        if LoopOffsets(()).constant(map_leaves(test.a, lambda n: bindings.get(n, n)) - channel) != 0:
            return None
        bound = int(test.b)
    out = tirx.BufferLoad(store.buffer, [map_leaves(i, lambda n: bindings.get(n, n)) for i in store.indices])
    return Epilogue16x8(stmt, out, *loads, (low, high), bound)


def tiles_16x8_call(loop: tirx.For, enclosing: tuple, ops: Tiles16x8Ops) -> Optional[s_tir.SBlockRealize]:
    """The fused 16x8 tiles' call block (``ops.tiles``) computing what ``loop`` (inside the loops ``enclosing``)
    computes, or None where it is not a loop over channel tiles of the module docstring's form (its MAC
    ``ops.mac``'s call)."""
    stmts = tile_loop_stmts(loop)
    found = sole_call(stmts, (ops.mac,)) if stmts else None
    if found is None or found[0] + 2 != len(stmts):
        return None
    at, mac = found
    window = _dual_mac_window(mac)
    epilogue = epilogue_16x8(stmts[at + 1], loop.loop_var)
    if window is None or epilogue is None:
        return None
    acc, x, w = (pointee(arg) for arg in (window.acc, window.x, window.w))
    zeroed = [zeroed_stores(stmt, acc.source) if acc is not None else None for stmt in stmts[:at]]
    if None in (acc, x, w) or any(part is None for part in zeroed):
        return None
    offsets = LoopOffsets((*enclosing, loop, epilogue.lanes))
    lane = epilogue.lanes.loop_var
    lane_loads = (epilogue.out, epilogue.acc, epilogue.bias, epilogue.multiplier)
    first = [tirx.BufferLoad(load.source, [map_leaves(i, lambda n: tirx.const(0, str(lane.ty.dtype))
                                                      if n.same_as(lane) else n) for i in load.indices])
             for load in lane_loads]
    out, read, bias, multiplier = first
    # the zeroed accumulators are exactly the MAC's tile, which the lanes read one each; the channels' constants
    # start at the first; everything but the inputs moves one tile
    if not offsets.zeroes_and_reads([store for part in zeroed for store in part], acc, read, TILE) \
            or any(offsets.step(load, lane) != 1 for load in lane_loads):
        return None
    if not offsets.moves_tiles(loop.loop_var, x, w, window.w_tile_step, (out, bias, multiplier)):
        return None
    channels = int(loop.extent) * TILE
    if epilogue.bound is not None:
        if not channels - TILE < epilogue.bound < channels:
            return None
        channels = epilogue.bound
    starts = [at_first_tile(tirx.address_of(load), loop.loop_var) for load in (out, bias, multiplier)]
    args = [starts[0], at_first_tile(window.x, loop.loop_var), at_first_tile(window.w, loop.loop_var), *starts[1:],
            *epilogue.clamp, window.x_row_stride, window.w_tile_step // TILE, window.rows, window.row_len, channels]
    call = tirx.call_intrin("int32", ops.tiles, *args)
    reads = [_whole(load.source) for load in (x, w, bias, multiplier)]
    block = s_tir.SBlock([], reads, [_region(pointee(starts[0]), channels)], "tiles_16x8", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def tiles_16x8_calls(func: tirx.PrimFunc, ops: Tiles16x8Ops) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel) with each loop over 16x8 channel tiles of the module docstring's form replaced by
    one call of the fused tiles' out-of-line copy (``ops.tiles``); any other function unchanged."""
    return with_root_loops_replaced(func, functools.partial(tiles_16x8_call, ops=ops), enclosing=True)


def _window_elements(call: tvm.ir.Call) -> int:
    """The inputs a dual MAC call's window reads (rows times row length; 0 where they are not constants)."""
    rows, row_len = call.args[5], call.args[6]
    return int(rows) * int(row_len) if isinstance(rows, tirx.IntImm) and isinstance(row_len, tirx.IntImm) else 0


def outlined_16x8_macs(func: tirx.PrimFunc, keep_widest: bool = False) -> tirx.PrimFunc:
    """``func`` with each int16 dual MAC call (DUAL_MAC_S16_OP) a call of its out-of-line copy
    (``CORTEX_M_TILES_16X8.outlined``): after ``tiles_16x8_calls``, the calls of a padded convolution's border
    regions, on Cortex-M cores (RV32 kernels call the copy from the start: ``Tiles16x8Ops.mac``). With
    ``keep_widest``, the calls of the kernel's widest window stay inlined (a padded convolution's interior, whose
    tile loop holds the border's tests on Helium cores: most of its pixels; cortex-m55 resnet8_w11_32x44_16x8, every
    call out of line: 14,692 -> 11,052 B of code for 8,561,731 -> 9,653,680 instructions)."""
    calls = [node for node in walk(func.body)
             if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == DUAL_MAC_S16_OP]
    widest = max((_window_elements(call) for call in calls), default=0) if keep_widest else None

    def outlined(node):
        if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == DUAL_MAC_S16_OP \
                and _window_elements(node) != widest:
            return tirx.call_intrin("int32", CORTEX_M_TILES_16X8.outlined, *node.args)
        return None

    body = map_store_expressions(func.body, outlined)
    return func if body.same_as(func.body) else func.with_body(body)
