"""The interleaved MAC block of a recurrent kernel, matched for any family's helper (no family's own code).

``tvm_ext.kernels.extern_mac.accumulate_interleaved`` builds the block: a MAC reduction under the loops of its
tiles (optional), groups of four inputs, four accumulators and a group's four inputs, over weights interleaved per
tile (input 4j + k of channel c of tile v at v * s + 16j + 4c + k from the first:
``tvm_ext.kernels.extern_mac.interleave_weights``), the sums starting at the block's init. ``interleaved_mac_call``
is its inverse: the loop nest as one call (INTERLEAVED_MAC_ACCESS) of the op the family names for the weights' type,
every tile in one call. The Cortex-M DSP cores call ``<prefix>_dual_mac_s8x4_interleaved`` (int8 weights) or its
int16 twin (``backends.cortex_m.schedules.extern_helpers``); RV32 cores their C of the int8 contract
(``backends.riscv.schedules.mac.interleaved_mac_calls``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.dual_mac_interleaved_c import INTERLEAVED_GROUP
from backends.cortex_m.schedules.conv_tiles import flat_offset, pointee
from backends.cortex_m.schedules.dual_mac import AccessOffsets, MacReduction, helper_call_block, mac_reduction
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess

_TILE_ACCUMULATORS = (Axis(Arg(5), DUAL_MAC_CHANNELS), Axis(DUAL_MAC_CHANNELS, 1))
INTERLEAVED_MAC_ACCESS = HelperAccess((
    PointerAccess(0, _TILE_ACCUMULATORS),
    PointerAccess(1, _TILE_ACCUMULATORS),
    PointerAccess(2, (Axis(Arg(4), INTERLEAVED_GROUP), Axis(INTERLEAVED_GROUP, 1))),
    PointerAccess(3, (Axis(Arg(5), Arg(6)), Axis(Arg(4), DUAL_MAC_CHANNELS * INTERLEAVED_GROUP),
                      Axis(DUAL_MAC_CHANNELS, INTERLEAVED_GROUP), Axis(INTERLEAVED_GROUP, 1)))))
"""The interleaved MAC's call (acc, start, x, w, groups, tiles, w_tile_stride): acc[4v + c] and start[4v + c] for
v < tiles, c < 4; x[4j + k] and w[v * w_tile_stride + 16j + 4c + k] for j < groups, k < 4 (strides in elements of
the weights' type)."""


def interleaved_mac_call(loop: tirx.For, ops: Mapping[str, str]) -> Optional[s_tir.SBlockRealize]:
    """The call of ``ops[weight type]`` computing the loop nest ``loop`` (optionally tiles v, then groups j, then
    DUAL_MAC_CHANNELS channels c, then INTERLEAVED_GROUP inputs k, around a MAC block over int8 inputs and weights
    of a type ``ops`` names) when the block reads x[x0 + 4j + k] and w[w0 + v * s + 16j + 4c + k] into
    acc[a0 + 4v + c], starting from its value or from start[s0 + 4v + c] (the block's init, where it has one),
    every other variable fixed; else None (the loops stay)."""
    loops = [loop]
    while isinstance(loops[-1].body, tirx.For):
        loops.append(loops[-1].body)
    realize = loops[-1].body
    if len(loops) not in (3, 4) or not isinstance(realize, s_tir.SBlockRealize):
        return None
    if not all(isinstance(inner.extent, tirx.IntImm) and isinstance(inner.min, tirx.IntImm) and int(inner.min) == 0
               for inner in loops):
        return None
    extents = [int(inner.extent) for inner in loops]
    reduction = mac_reduction(realize.block, weight_dtypes=tuple(ops))
    start = init_load(realize.block, reduction)
    if reduction is None or start is None or extents[-2:] != [DUAL_MAC_CHANNELS, INTERLEAVED_GROUP]:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [inner.loop_var for inner in loops]
    offsets = AccessOffsets(bindings, inner)
    tiled = len(loops) == 4
    try:
        w_tile_stride = offsets.step(reduction.weight, 0) if tiled else 0
        accesses = [(reduction.data, (INTERLEAVED_GROUP, 0, 1), 0),
                    (reduction.weight, (DUAL_MAC_CHANNELS * INTERLEAVED_GROUP, INTERLEAVED_GROUP, 1), w_tile_stride),
                    (reduction.store, (0, 1, 0), DUAL_MAC_CHANNELS),
                    (start, (0, 1, 0), DUAL_MAC_CHANNELS)]
        corner = [extent - 1 for extent in extents]  # the nest's far corner
        for access, steps, tile_step in accesses:
            all_steps = ((tile_step,) if tiled else ()) + steps
            origin = offsets.offset(access, offsets.origin)
            if tuple(offsets.step(access, axis) for axis in range(len(loops))) != all_steps:
                return None
            # linear over the whole nest: its far corner where the steps put it
            if offsets.offset(access, corner) != origin + sum(s * (e - 1) for s, e in zip(all_steps, extents)):
                return None
    except KeyError:
        return None  # an index form we do not evaluate: keep the loops
    tiles = extents[0] if tiled else 1
    op = ops[str(reduction.weight.source.dtype)]
    realize = helper_call_block(op, reduction, bindings, inner, [extents[-3], tiles, w_tile_stride],
                                [1] * (len(reduction.store.indices) - 1) + [DUAL_MAC_CHANNELS * tiles],
                                operands=(start, reduction.data, reduction.weight))
    return with_whole_accumulators(realize, DUAL_MAC_CHANNELS * tiles)


def with_whole_accumulators(realize: s_tir.SBlockRealize, count: int) -> s_tir.SBlockRealize:
    """``realize``'s helper call with its accumulators' pointer (its first argument) as a pointer of ``count``
    elements (tvm_access_ptr): buffer compaction then keeps every accumulator the helper writes, also those the
    kernel never reads (an LSTM's units padded to whole tiles, ``tvm_ext.kernels.lstm.interleave_gate_weights``),
    where the element's address alone would let it shrink the buffer to what the TIR reads."""
    call = realize.block.body.value
    acc = pointee(call.args[0])
    pointer = acc.source.access_ptr("rw", offset=flat_offset(acc), extent=count)
    body = tirx.Evaluate(tirx.call_intrin("int32", call.op, pointer, *call.args[1:]))
    block = realize.block
    return s_tir.SBlockRealize([], True, s_tir.SBlock([], block.reads, block.writes, block.name_hint, body))


def init_load(block: s_tir.SBlock, reduction: Optional[MacReduction]) -> Optional[TensorLoad]:
    """What the MAC block's sums start from: the load its init stores into the accumulator (at the same
    indices), the accumulator's own load without an init; None for any other init (or no ``reduction``)."""
    if reduction is None:
        return None
    if block.init is None:
        return reduction.store.value.a
    init = block.init
    if not isinstance(init, tirx.BufferStore) or not isinstance(init.value, TensorLoad) \
            or not init.buffer.same_as(reduction.store.buffer) \
            or str(init.value.source.dtype) != "int32" or not all(
                tvm_ffi.structural_equal(i, j) for i, j in zip(init.indices, reduction.store.indices)):
        return None
    return init.value
