"""On scalar FPU cores (no MVE), a loop over a float kernel's channel tiles as one call of the fused float
channel-tiles helper, `<prefix>_fmac_tiles_f32` (``backends/cortex_m/helpers/templates/fpu_float.h.in``).

After the float schedule has made each tile's reduction a call of ``<prefix>_fmac_f32`` (one pixel:
``helium_float.float_mac_replacement`` with ``FPU_FLOAT_OPS``) and its bias and activation a call of
``<prefix>_bias_act_f32`` (``helium_float.float_epilogue_calls``), one output pixel (a fully connected layer's row)
runs a loop over its tiles of eight channels whose iteration zeroes the tile's accumulators, calls the MAC and then
the epilogue. Per tile that bookkeeping (the accumulators' stores and reloads, two calls' arguments) costs as much as
a small layer's MACs (hello_world_float's 1 -> 16 layer: 16 MACs), and each kernel's inlined copy of the MAC costs
code. ``float_tiles_calls`` replaces each such loop by one call of the fused helper, one copy in the bundle, which
keeps each tile's sums in registers from +0.0 through the epilogue.

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) each iteration is, in this
order: stores of +0.0 into exactly the eight accumulators the MAC call then writes, the one-pixel MAC call, one
epilogue call (no residual) over those eight accumulators; the inputs do not move with the tile, and the weights,
the outputs and the biases move eight elements. The accumulators are then written and read only inside one
iteration, so leaving them out changes no output: each sum starts at +0.0 and adds the same products in the same
order with the same roundings, then the bias and the activation as the epilogue does them, bit for bit.
"""

from __future__ import annotations

import math
from typing import Optional

from tvm import s_tir, tirx

from backends.cortex_m.helpers import FPU_FLOAT_HELPERS
from backends.cortex_m.schedules.conv_tiles import (LoopOffsets, _region, at_first_tile, call_of, pointee,
                                                    tile_loop_stmts, zeroed_stores)
from backends.cortex_m.schedules.dual_mac import _whole
from backends.cortex_m.schedules.helium_float import FloatOps, _reduction_call
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import with_root_loops_replaced

GROUP = 8
"""Channels per tile: the FPU helpers' group."""
FMAC_TILES_F32_OP = "tvm_ext.fmac_tiles_f32_fpu"
# (out, x, w, bias, x_row_stride, w_row_stride, w_tap_stride, rows, row_len, channels, low, high, clamp)
register_helper_call(FMAC_TILES_F32_OP, FPU_FLOAT_HELPERS, lambda prefix: f"{prefix}_fmac_tiles_f32", HelperAccess((
    PointerAccess(0, (Axis(Arg(9), 1),)),
    PointerAccess(1, (Axis(Arg(7), Arg(4)), Axis(Arg(8), 1))),
    PointerAccess(2, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(Arg(9), 1))),
    PointerAccess(3, (Axis(Arg(9), 1),)),
)))


def _positive_zero(value) -> bool:
    """Whether ``value`` is the float constant +0.0."""
    return isinstance(value, tirx.FloatImm) and float(value.value) == 0.0 \
        and math.copysign(1.0, float(value.value)) > 0


def float_tiles_call(loop: tirx.For, enclosing: tuple, ops: FloatOps) -> Optional[s_tir.SBlockRealize]:
    """The fused helper's call block computing what ``loop`` (inside the loops ``enclosing``) computes, or None where
    it is not a loop over channel tiles of the module docstring's form (its calls ``ops``')."""
    stmts = tile_loop_stmts(loop)
    if stmts is None or len(stmts) < 3:
        return None
    mac, epilogue = call_of(stmts[-2], (ops.one,)), call_of(stmts[-1], (ops.bias_act,))
    if mac is None or epilogue is None:
        return None
    acc, x, w = (pointee(arg) for arg in mac.args[:3])
    out, read, bias = (pointee(arg) for arg in epilogue.args[:3])
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[3:]]
    if None in (acc, x, w, out, read, bias, *sizes) or sizes[-1] != GROUP or int(epilogue.args[3]) != GROUP:
        return None
    zeroed = [zeroed_stores(stmt, acc.source, _positive_zero) for stmt in stmts[:-2]]
    if any(part is None for part in zeroed):
        return None
    stores = [store for part in zeroed for store in part]
    offsets = LoopOffsets((*enclosing, loop))
    step, tile = offsets.step, loop.loop_var
    # the zeroed accumulators are exactly the MAC's eight, which the epilogue reads; the weights, outputs and biases
    # move one tile, the inputs stay
    if len(stores) != 1 or not offsets.zeroes_and_reads(stores, acc, read, GROUP):
        return None
    if step(x, tile) != 0 or any(step(load, tile) != GROUP for load in (w, out, bias)):
        return None
    channels = int(loop.extent) * GROUP
    start = at_first_tile(epilogue.args[0], tile)
    args = [start, at_first_tile(mac.args[1], tile), at_first_tile(mac.args[2], tile),
            at_first_tile(epilogue.args[2], tile), *sizes[:-1], channels, *epilogue.args[4:7]]
    call = tirx.call_intrin("int32", FMAC_TILES_F32_OP, *args)
    block = s_tir.SBlock([], [_whole(load.source) for load in (x, w, bias)], [_region(pointee(start), channels)],
                         "fmac_tiles", tirx.Evaluate(call))
    return _reduction_call(s_tir.SBlockRealize([], True, block), reads=[1, 2])  # the input and the weights


def float_tiles_calls(func: tirx.PrimFunc, ops: FloatOps) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its float calls ``ops``) with each loop over channel tiles of the module
    docstring's form replaced by the fused helper's call; any other function unchanged."""
    return with_root_loops_replaced(func, lambda loop, enclosing: float_tiles_call(loop, enclosing, ops),
                                    enclosing=True)
