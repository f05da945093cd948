"""The depthwise MAC helper of DSP cores, reached from a scheduled int8 DEPTHWISE_CONV_2D kernel; and the one
entry that turns a tiled MAC reduction into whichever helper computes it (``mac_helper_replacement``).

A depthwise reduction tiled to four output channels (``tvm_ext.schedule.kernel_schedule``: the window loops, then the four
channels innermost) becomes one call of ``<prefix>_depthwise_mac_s8x4`` (``backends.cortex_m.helpers.depthwise_mac_c``; on int16
inputs, TFLite's 16x8 operators whose sums fit int32, ``<prefix>_depthwise_mac_s16x4``) per
output pixel and channel tile when input, weights and accumulators are four consecutive channels at every tap
(a depth multiplier of 1: with 2, two output channels read one input channel) and the taps step by constant
strides (rows, then columns of the window). Each channel's sum is added in the same order: bit-exact.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Optional

from tvm import s_tir, tirx

from backends.cortex_m.helpers.depthwise_mac_c import DEPTHWISE_MAC_INPUT_TYPES, depthwise_box_helper_name, depthwise_mac_helper_name
from backends.cortex_m.schedules.dual_mac import (DUAL_MAC_CHANNELS, AccessOffsets, MacReduction, channel_tile,
                                                dual_mac_replacement, helper_call_block,
                              mac_reduction, register_mac_helper)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from backends.cortex_m.schedules.row_dot import row_dot_replacement
from backends.cortex_m.schedules.stacked_mac import stacked_mac_replacement, wide_mac_replacement

DEPTHWISE_MAC_OP = "tvm_ext.depthwise_mac_s8x4"


def depthwise_mac_access(channels: int) -> HelperAccess:
    """A depthwise MAC's call (acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols)
    over ``channels`` consecutive channels: acc[c] for c < channels, x[r * x_row_stride + k * x_col_stride + c]
    and w[r * w_row_stride + k * w_col_stride + c] for r < rows, k < cols (the DSP cores' helper, 4 channels;
    the RISC-V one, 8)."""
    return HelperAccess((
        PointerAccess(0, (Axis(channels, 1),)),
        PointerAccess(1, (Axis(Arg(7), Arg(3)), Axis(Arg(8), Arg(4)), Axis(channels, 1))),
        PointerAccess(2, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(channels, 1))),
    ))


DEPTHWISE_MAC_ACCESS = depthwise_mac_access(DUAL_MAC_CHANNELS)
DEPTHWISE_BOX_OP = "tvm_ext.depthwise_box_s8x4"
"""The same helper's out-of-line copy: for the clipped windows of a padded border (tvm_ext.schedule.border_split)."""
DEPTHWISE_MAC_W16_OP = "tvm_ext.depthwise_mac_s8x4w16"
"""DEPTHWISE_MAC_OP over int16 weights (a DSP core's depthwise weights widened at compile time)."""
DEPTHWISE_BOX_W16_OP = "tvm_ext.depthwise_box_s8x4w16"
_OPS = {("int8", "int8"): (DEPTHWISE_MAC_OP, DEPTHWISE_BOX_OP),
        ("int16", "int8"): ("tvm_ext.depthwise_mac_s16x4", "tvm_ext.depthwise_box_s16x4"),
        ("int8", "int16"): (DEPTHWISE_MAC_W16_OP, DEPTHWISE_BOX_W16_OP)}
"""(inlined, out of line) per (input type, weight type) (backends.cortex_m.helpers.depthwise_mac_c's
DEPTHWISE_MAC_INPUT_TYPES; int16 weights: widened, with int8 inputs only)."""
for (_data, _weights), (_inlined, _outlined) in _OPS.items():  # one record: it counts elements of the pointers' own types
    register_mac_helper(_inlined, functools.partial(depthwise_mac_helper_name, data=_data, weights=_weights),
                        DEPTHWISE_MAC_ACCESS)
    register_mac_helper(_outlined, functools.partial(depthwise_box_helper_name, data=_data, weights=_weights),
                        DEPTHWISE_MAC_ACCESS)


def mac_helper_call(sch: s_tir.Schedule, block, loops: list, first_reduce: int,
                    replacement: Optional[Callable[[s_tir.SBlockRealize, list], Optional[s_tir.SBlockRealize]]] = None
                    ) -> bool:
    """Replace the reduction loops ``loops[first_reduce:]`` of ``block`` (the reduction loops, then the
    unit-stride loop of the output channels a helper accumulates, innermost) by the call of a MAC helper that
    computes exactly what they do: ``replacement``'s (by default ``mac_helper_replacement``). Returns whether
    it did."""
    realize = sch.get(sch.get_loops(block)[-1]).body
    call = (replacement or mac_helper_replacement)(realize, [sch.get(loop) for loop in loops[first_reduce:]])
    if call is None:
        return False
    sch.state.replace(sch.get_sref(loops[first_reduce]), call)
    return True


def mac_helper_replacement(realize: s_tir.SBlockRealize, loops: list,
                           outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The stacked-rows or the widened-rows MAC's call block (``backends.cortex_m.schedules.stacked_mac``: a
    FULLY_CONNECTED's stacked or widened weights), else the dual MAC's (``backends.cortex_m.schedules.dual_mac``), else the depthwise helper's (the inlined one, or its
    out-of-line copy if ``outlined_depthwise``), else the row dot product's (``backends.cortex_m.schedules.row_dot``), computing what
    the For nodes ``loops`` around ``realize`` compute; None where none computes exactly that."""
    return (stacked_mac_replacement(realize, loops) or wide_mac_replacement(realize, loops)
            or dual_mac_replacement(realize, loops)
            or depthwise_mac_replacement(realize, loops, outlined_depthwise) or row_dot_replacement(realize, loops))


def depthwise_mac_replacement(realize: s_tir.SBlockRealize, loops: list,
                              outlined: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The call block of the depthwise helper of the input's type (its out-of-line copy if ``outlined``) for
    ``loops`` (up to two window loops, then the channel loop), or None where the loads do not fit it (see the
    module docstring)."""
    reduction = mac_reduction(realize.block, DEPTHWISE_MAC_INPUT_TYPES, ("int8", "int16"))
    ops = None if reduction is None else _OPS.get((str(reduction.data.source.dtype), str(reduction.weight.source.dtype)))
    if ops is None:
        return None
    op = ops[1 if outlined else 0]
    return depthwise_call_block(op, realize, loops, reduction, DUAL_MAC_CHANNELS)


def depthwise_call_block(op: str, realize: s_tir.SBlockRealize, loops: list, reduction: MacReduction,
                         channels: int) -> Optional[s_tir.SBlockRealize]:
    """The call block of ``op``, a depthwise helper of ``channels`` consecutive channels (its call's arguments
    those of ``DEPTHWISE_MAC_ACCESS``, over its own channel count), computing what ``loops`` (up to two window
    loops, then the channel loop of ``channels``) around ``realize`` compute for ``reduction`` (its update);
    None where the loads do not fit it (see the module docstring)."""
    window, channel = loops[:-1], loops[-1]
    if len(window) > 2 or not isinstance(channel.extent, tirx.IntImm) or int(channel.extent) != channels:
        return None
    if not all(isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops):
        return None
    tile = window_tile_call(reduction, realize, loops, channels)
    if tile is None:
        return None
    sizes, call = tile
    return call(op, sizes)


def window_tile_call(reduction: MacReduction, realize: s_tir.SBlockRealize, loops: list, channels: int):
    """(the window's sizes, `window_sizes`'s list, and a function of an op and its size arguments giving the
    call block at the window's origin over ``channels`` accumulators) for ``loops`` (the window loops, then the
    channel loop) around ``realize``, or None where the loads do not fit: the part every depthwise helper's call
    shares (this module's, Helium's 16-lane ones in `helium_depthwise`)."""
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    try:
        sizes = window_sizes(reduction, AccessOffsets(bindings, inner), [int(loop.extent) for loop in loops[:-1]],
                             channels)
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    if sizes is None:
        return None
    tile = channel_tile(reduction, channels)
    return sizes, lambda op, arguments: helper_call_block(op, reduction, bindings, inner, arguments, tile)


def window_sizes(reduction: MacReduction, offsets: AccessOffsets, extents: list[int],
                 channels: int) -> Optional[list[int]]:
    """[x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols] in elements when every tap reads
    ``channels`` consecutive channels of input and weights (the innermost loop) and the window (the loops of
    ``extents``) steps by constant strides, else None."""
    data, weight, store = reduction.data, reduction.weight, reduction.store
    channel = len(extents)
    if any(offsets.step(access, channel) != 1 for access in (data, weight, store)):
        return None
    if any(offsets.step(store, axis) != 0 for axis in range(channel)):
        return None
    steps = [(offsets.step(data, axis), offsets.step(weight, axis)) for axis in range(channel)]
    (x_row, w_row), rows = ((0, 0), 1) if channel < 2 else (steps[0], extents[0])
    (x_col, w_col), cols = ((0, 0), 1) if channel < 1 else (steps[-1], extents[-1])
    # Linearity over the whole window (a floordiv/floormod index could step evenly at the origin only).
    corner = [e - 1 for e in extents] + [channels - 1]
    for access, row, col in ((data, x_row, x_col), (weight, w_row, w_col)):
        expected = offsets.offset(access, offsets.origin) + (rows - 1) * row + (cols - 1) * col + channels - 1
        if offsets.offset(access, corner) != expected:
            return None
    return [x_row, x_col, w_row, w_col, rows, cols]
