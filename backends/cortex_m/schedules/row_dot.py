"""Dot products of four rows with four other rows, on DSP cores: the SVDF time product.

A reduction tiled to DUAL_MAC_CHANNELS output channels (``tvm_ext.schedule.kernel_schedule``: one reduction loop, then the
four channels innermost) in which both operands move with the channel, ``acc[c] += x[c * x_channel_stride + k]
* w[c * w_channel_stride + k]`` over int8 x and w (the dual MAC needs an input shared by the channels, the
depthwise helper consecutive channels), becomes one call of ``<prefix>_row_dot_s8x4`` (``backends.cortex_m.helpers.row_dot_c``):
per channel, four inputs and four weights per 32-bit load, two SMLADs. Integer sums in another order:
bit-exact. A loop of one row's products into one accumulator (an SVDF unit's time product, int8 or int16 rows)
becomes one call of ``<prefix>_row_dot_s8`` or ``_s16`` (``row_dot1_call``); over int8 rows and int16 weights laid out
in SXTB16's lane order at compile time, one call of ``<prefix>_row_dot_s8_pairs``.
"""

from __future__ import annotations

import functools
from typing import Optional

from tvm import s_tir, tirx

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.row_dot_c import (ROW_DOT1_HELPERS, ROW_DOT1_TAGS, row_dot1_helper_name,
                                                 row_dot_helper_name, row_dot_lanes_helper_name)
from backends.cortex_m.schedules.dual_mac import (AccessOffsets, channel_tile, helper_call_block, mac_reduction,
                                                register_mac_helper)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

ROW_DOT_OP = "tvm_ext.row_dot_s8x4"
# The call (acc, x, w, x_channel_stride, w_channel_stride, row_len): acc[c] for c < 4,
# x[c * x_channel_stride + k] and w[c * w_channel_stride + k] for k < row_len.
ROW_DOT_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(DUAL_MAC_CHANNELS, Arg(3)), Axis(Arg(5), 1))),
    PointerAccess(2, (Axis(DUAL_MAC_CHANNELS, Arg(4)), Axis(Arg(5), 1))),
))
register_mac_helper(ROW_DOT_OP, row_dot_helper_name, ROW_DOT_ACCESS)
ROW_DOT1_OPS = {rows: f"tvm_ext.row_dot_{tag}" for rows, tag in ROW_DOT1_TAGS.items()}
"""The one-row dot product's call by the rows' type: (acc, x, w, row_len): acc[0], x[k] and w[k] for k < row_len."""
ROW_DOT1_ACCESS = HelperAccess((PointerAccess(0, (Axis(1, 1),)), PointerAccess(1, (Axis(Arg(3), 1),)),
                                PointerAccess(2, (Axis(Arg(3), 1),))))
for _rows, _op in ROW_DOT1_OPS.items():
    register_helper_call(_op, ROW_DOT1_HELPERS, functools.partial(row_dot1_helper_name, rows=_rows), ROW_DOT1_ACCESS)
ROW_DOT_LANES_OP = "tvm_ext.row_dot_s8_pairs"
"""The one-row dot product of int8 inputs and int16 weights in SXTB16's lane order, the call and accesses of
ROW_DOT1_ACCESS (row_len a multiple of LANE_GROUP)."""
register_helper_call(ROW_DOT_LANES_OP, ROW_DOT1_HELPERS, row_dot_lanes_helper_name, ROW_DOT1_ACCESS)
LANE_GROUP = 4
"""Inputs per group of SXTB16's lane order (``tvm_ext.kernels.extern_mac.LANE_GROUP``, not imported: that would close
an import cycle between the packages; tests/backends/cortex_m/test_extern_helpers.py checks they agree)."""
LANE_STEPS = {"data": [LANE_GROUP, 1, 2], "weight": [LANE_GROUP, 2, 1]}
"""The index steps of the lane-order row's loops (groups, then a < 2, then b < 2; ``accumulate_row`` with lanes):
input 4g + a + 2b meets weight 4g + 2a + b."""


def row_dot_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The helper's call block computing what ``loops`` (For nodes: one reduction loop, then the loop of
    DUAL_MAC_CHANNELS output channels) compute around ``realize``, or None where the loads do not fit it."""
    reduction = mac_reduction(realize.block)
    if reduction is None or len(loops) != 2 or not all(
            isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops):
        return None
    row_len = int(loops[0].extent)
    if int(loops[1].extent) != DUAL_MAC_CHANNELS:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        if offsets.step(reduction.store, 0) != 0 or offsets.step(reduction.store, 1) != 1:
            return None
        strides = []
        for access in (reduction.data, reduction.weight):
            stride = offsets.step(access, 1)
            corner = offsets.offset(access, [row_len - 1, DUAL_MAC_CHANNELS - 1])
            expected = offsets.offset(access, offsets.origin) + row_len - 1 + (DUAL_MAC_CHANNELS - 1) * stride
            if offsets.step(access, 0) != 1 or corner != expected:
                return None
            strides.append(stride)
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    return helper_call_block(ROW_DOT_OP, reduction, bindings, inner, [*strides, row_len],
                             channel_tile(reduction, DUAL_MAC_CHANNELS))


def row_dot1_call(loop: tirx.For) -> Optional[s_tir.SBlockRealize]:
    """The one-row helper's call block computing ``loop`` (``tvm_ext.kernels.extern_mac.accumulate_row``: an SVDF
    unit's time product), else None: one loop from 0 of a constant extent around a MAC block over int8 or int16 x and
    w alike, ``acc[a] += x[x0 + k] * w[w0 + k]``, every other variable fixed; or the lane-order row's three loops
    (groups, 2, 2, LANE_STEPS) around one over int8 x and int16 w: ``<prefix>_row_dot_s8_pairs``."""
    loops = [loop]
    while isinstance(loops[-1].body, tirx.For):
        loops.append(loops[-1].body)
    realize = loops[-1].body
    if not isinstance(realize, s_tir.SBlockRealize) or len(loops) not in (1, 3) or not all(
            isinstance(each.extent, tirx.IntImm) and isinstance(each.min, tirx.IntImm) and int(each.min) == 0
            for each in loops):
        return None
    reduction = mac_reduction(realize.block, tuple(ROW_DOT1_OPS), tuple(ROW_DOT1_OPS))
    if reduction is None:
        return None
    types = (str(reduction.data.source.dtype), str(reduction.weight.source.dtype))
    extents = [int(each.extent) for each in loops]
    lanes = len(loops) == 3
    if (types != ("int8", "int16") or extents[1:] != [2, 2]) if lanes else types[0] != types[1]:
        return None
    steps = LANE_STEPS if lanes else {"data": [1], "weight": [1]}
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [each.loop_var for each in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        if [[offsets.step(access, axis) for axis in range(len(loops))]
                for access in (reduction.store, reduction.data, reduction.weight)] != [
                    [0] * len(loops), steps["data"], steps["weight"]]:
            return None
    except KeyError:
        return None  # an index form we do not evaluate: keep the loop
    return helper_call_block(ROW_DOT_LANES_OP if lanes else ROW_DOT1_OPS[types[0]], reduction, bindings, inner,
                             [LANE_GROUP * extents[0] if lanes else extents[0]], [1] * len(reduction.store.indices))
