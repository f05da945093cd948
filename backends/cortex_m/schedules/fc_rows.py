"""A per-tensor int8 FULLY_CONNECTED layer's loop over its channel tiles as one call of the core family's shared
out-of-line row helper (Helium cores and RV32 cores; DSP cores without MVE over stacked weights: ``fc_tiles``).

After a MAC kernel is scheduled and its reductions are calls of the family's one-row MAC (Helium:
``<prefix>_dual_mac_s8x4`` over one row; RV32: ``<prefix>_mac_s8x8_pairs`` over paired weights), a fully connected
layer runs a loop over its channel tiles whose iteration zeroes the tile's accumulators, calls the MAC, and
requantizes the tile by a loop of scalar stores whose multiplier and shift are constants (TFLite's FULLY_CONNECTED:
one multiplier and shift per tensor, which the epilogue helpers, reading arrays, do not take). Each kernel then
holds its own copy of that loop and, inlined, of the requantization's 64-bit arithmetic (ad01_int8: ten such
kernels). ``fc_rows_calls`` replaces each such loop by one call

    <prefix>_fc_rows_s8(out, x, w, bias, multiplier, shift, zero_point, row_len, tiles)    (_b16: int16 biases)

(RV32: ``<prefix>_fc_rows_s8x8``) of one function per bundle (``FcRowHelpers.ops``; out of line, but for a sole
call on Helium, which gcc inlines), every such FULLY_CONNECTED kernel's: per tile the family's MAC,
the biases (acc + bias wraps as int32 in any order: the same sums) and the requantization with the constants
passed as values. Its contract: ``backends/cortex_m/helpers/templates/
helium_fc_rows.h.in`` and ``backends/riscv/helpers/templates/fc_rows_s8x8.h.in``.

A loop qualifies when it computes one output row (every loop around it of one iteration: a convolution's pixels or a
batch's rows keep their loops, where a call per row would add its overhead to each) and (proved by TVM's integer
analysis over the enclosing loops' ranges) each iteration is, in this order: stores of zero into exactly the tile's
accumulators the MAC call then adds to, the MAC call over one row, one loop over the tile's channels of one
requantization each (a rounding the family's helper computes) reading those accumulators; the inputs do not move
with the tile, the weights move one tile's (``FcRowHelpers.weights_per_input`` elements per input), the outputs and
biases one tile. Integer steps only: bit-exact.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.bias_forms import by_bias
from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.helium_c import fc_rows_helper_name
from backends.cortex_m.schedules.conv_tiles import (LoopOffsets, _region, at_first_tile, at_loop_value, call_of,
                                                     flat_offset, pointee, tile_loop_stmts, zeroed_stores)
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_OP, _whole, register_mac_helper
from backends.cortex_m.schedules.requantize_epilogue import DOUBLE_ROUNDING_OPS, per_tensor_requantization
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.tir_walk import map_leaves, with_root_loops_replaced

MacRow = Callable[[tvm.ir.Call], Optional[tuple[object, object, int]]]
"""A family's reading of its MAC call: (the inputs' address, the weights' address, the row's length in inputs)
where the call sums one row of inputs against each channel's weights laid out as the fused helper reads them,
else None."""


@dataclass(frozen=True)
class FcRowHelpers:
    """A core family's fused row helper: the MAC op whose calls it takes and their reading (``mac_row``), the
    channels per tile (``tile``), the weights' elements per input and tile, the rounding ops of the
    requantization it computes, and its op per bias type ("int32", "int16")."""

    mac_op: str
    mac_row: MacRow
    tile: int
    weights_per_input: int
    roundings: frozenset[str]
    ops: dict[str, str]


def fc_rows_access(tile: int, weights_per_input: int) -> HelperAccess:
    """The fused helper's call (out, x, w, bias, multiplier, shift, zero_point, row_len, tiles): out[c] and
    bias[c] for c < tile * tiles, x[k] for k < row_len, w[j] for j < weights_per_input * row_len * tiles (the
    weights_per_input runs of tiles steps of row_len, then the row's runs of weights_per_input)."""
    per_channel = (Axis(Arg(8), tile), Axis(tile, 1))
    return HelperAccess((
        PointerAccess(0, per_channel),
        PointerAccess(1, (Axis(Arg(7), 1),)),
        PointerAccess(2, (Axis(Arg(8), Arg(7)),) * weights_per_input
                      + (Axis(Arg(7), weights_per_input), Axis(weights_per_input, 1))),
        PointerAccess(3, per_channel),
    ))


def fc_rows_call(loop: tirx.For, enclosing: tuple, helpers: FcRowHelpers) -> Optional[s_tir.SBlockRealize]:
    """``helpers``' fused call block computing what ``loop`` (inside the loops ``enclosing``, each of one
    iteration: one output row) computes, or None where it is not a loop over channel tiles of the module
    docstring's form (a loop of one iteration: one tile, whatever its accesses' steps)."""
    if not all(isinstance(outer.extent, tirx.IntImm) and int(outer.extent) == 1 for outer in enclosing):
        return None  # a convolution's pixels, or a batch's rows, keep their loops: a call each would cost more
    stmts = tile_loop_stmts(loop)
    if stmts is None or len(stmts) < 3:
        return None
    mac, lanes = call_of(stmts[-2], (helpers.mac_op,)), stmts[-1]
    row = helpers.mac_row(mac) if mac is not None else None
    acc = pointee(mac.args[0]) if mac is not None else None
    if row is None or acc is None or not isinstance(lanes, tirx.For) or not isinstance(lanes.extent, tirx.IntImm) \
            or int(lanes.extent) != helpers.tile or not isinstance(lanes.min, tirx.IntImm) or int(lanes.min) != 0:
        return None
    realize = lanes.body
    if not isinstance(realize, s_tir.SBlockRealize) or not isinstance(realize.predicate, tirx.IntImm) \
            or not bool(realize.predicate):
        return None
    requantization = per_tensor_requantization(realize.block.body, helpers.roundings)
    zeroed = [zeroed_stores(stmt, acc.source) for stmt in stmts[:-2]]
    if requantization is None or any(part is None for part in zeroed):
        return None
    x_address, w_address, row_len = row
    x, w = pointee(x_address), pointee(w_address)
    if x is None or w is None:
        return None
    offsets = LoopOffsets((*enclosing, loop, lanes))
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}

    def bound(buffer, indices) -> TensorLoad:
        return tirx.BufferLoad(buffer, [map_leaves(i, lambda n: bindings.get(n, n)) for i in indices])

    out = bound(requantization.store.buffer, requantization.store.indices)
    read, bias = (bound(load.source, load.indices) for load in (requantization.acc, requantization.bias))
    tile, lane, tiles = loop.loop_var, lanes.loop_var, int(loop.extent)
    # the zeroed accumulators: exactly the tile's, from the MAC's first
    if not offsets.zeroes_exactly([entry for part in zeroed for entry in part], acc, range(helpers.tile)):
        return None
    # the epilogue reads those accumulators lane by lane, and writes and reads its outputs and biases so
    if not read.source.same_as(acc.source) or any(
            offsets.lane_offsets(load, lanes) != list(range(helpers.tile)) for load in (read, out, bias)) \
            or offsets.constant(at_loop_value(flat_offset(read), lane, 0) - flat_offset(acc)) != 0:
        return None
    # per tile the inputs stay, the weights move one tile's, the outputs and biases one tile
    moves = (offsets.step(x, tile), offsets.step(w, tile), offsets.step(out, tile), offsets.step(bias, tile))
    if tiles > 1 and moves != (0, helpers.weights_per_input * row_len, helpers.tile, helpers.tile):
        return None

    def first(load: TensorLoad) -> TensorLoad:
        return tirx.BufferLoad(load.source, [at_loop_value(at_loop_value(i, tile, 0), lane, 0) for i in load.indices])

    start, bias_start = first(out), first(bias)
    args = [tirx.address_of(start), at_first_tile(x_address, tile), at_first_tile(w_address, tile),
            tirx.address_of(bias_start), requantization.multiplier, requantization.shift, requantization.zero_point,
            row_len, tiles]
    call = tirx.call_intrin("int32", helpers.ops[str(bias.source.dtype)], *args)
    reads = [_whole(load.source) for load in (x, w, bias)]
    block = s_tir.SBlock([], reads, [_region(start, tiles * helpers.tile)], "fc_rows", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def fc_rows_calls(func: tirx.PrimFunc, helpers: FcRowHelpers) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its MAC calls) with each loop over channel tiles of the module
    docstring's form replaced by ``helpers``' fused call (a loop of one iteration, such as the batch's of a
    kernel of one tile, as the call of one tile); any other function unchanged."""
    return with_root_loops_replaced(func, lambda loop, enclosing: fc_rows_call(loop, enclosing, helpers),
                                    enclosing=True)


def _dual_mac_row(call: tvm.ir.Call) -> Optional[tuple[object, object, int]]:
    """(x, w, row_len) of a dual MAC call ``(acc, x, w, x_row_stride, w_channel_stride, rows, row_len)`` over one
    row whose channels' weights follow each other (w_channel_stride == row_len), else None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in call.args[3:]]
    if None in sizes or sizes[2] != 1 or sizes[1] != sizes[3]:
        return None
    return call.args[1], call.args[2], sizes[3]


HELIUM_FC_ROWS_OPS = by_bias("tvm_ext.fc_rows_s8")
"""Helium's fused row helper per bias type (``helium_fc_rows.h.in``)."""
HELIUM_FC_ROWS = FcRowHelpers(DUAL_MAC_OP, _dual_mac_row, DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS, DOUBLE_ROUNDING_OPS,
                              HELIUM_FC_ROWS_OPS)
"""Helium's: four channels a tile (their weights four rows of bytes), every double rounding (VQRDMULH, VRSHL)."""
for _bias, _op in HELIUM_FC_ROWS_OPS.items():
    register_mac_helper(_op, functools.partial(fc_rows_helper_name, bias=_bias),
                        fc_rows_access(DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS))
