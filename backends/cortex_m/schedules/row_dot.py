"""Dot products of four rows with four other rows, on DSP cores: the SVDF time product.

A reduction tiled to DUAL_MAC_CHANNELS output channels (``tvm_ext.schedule.kernel_schedule``: one reduction loop, then the
four channels innermost) in which both operands move with the channel, ``acc[c] += x[c * x_channel_stride + k]
* w[c * w_channel_stride + k]`` over int8 x and w (the dual MAC needs an input shared by the channels, the
depthwise helper consecutive channels), becomes one call of ``<prefix>_row_dot_s8x4`` (``backends.cortex_m.helpers.row_dot_c``):
per channel, four inputs and four weights per 32-bit load, two SMLADs. Integer sums in another order:
bit-exact. A loop of one row's products into one accumulator (an SVDF unit's time product, int8 or int16 rows)
becomes one call of ``<prefix>_row_dot_s8`` or ``_s16`` (``row_dot1_call``).
"""

from __future__ import annotations

import functools
from typing import Optional

from tvm import s_tir, tirx

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.row_dot_c import (ROW_DOT1_HELPERS, ROW_DOT1_TAGS, row_dot1_helper_name,
                                                 row_dot_helper_name)
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
    """The one-row helper's call block computing ``loop`` (one loop from 0 of a constant extent around a MAC block
    over int8 or int16 x and w alike, ``acc[a] += x[x0 + k] * w[w0 + k]``, every other variable fixed: an SVDF unit's
    time product, ``tvm_ext.kernels.extern_mac.accumulate_row``), else None."""
    realize = loop.body
    if not isinstance(realize, s_tir.SBlockRealize) or not isinstance(loop.extent, tirx.IntImm) \
            or not isinstance(loop.min, tirx.IntImm) or int(loop.min) != 0:
        return None
    reduction = mac_reduction(realize.block, tuple(ROW_DOT1_OPS), tuple(ROW_DOT1_OPS))
    if reduction is None or str(reduction.data.source.dtype) != str(reduction.weight.source.dtype):
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = AccessOffsets(bindings, [loop.loop_var])
    try:
        if [offsets.step(access, 0) for access in (reduction.store, reduction.data, reduction.weight)] != [0, 1, 1]:
            return None
    except KeyError:
        return None  # an index form we do not evaluate: keep the loop
    return helper_call_block(ROW_DOT1_OPS[str(reduction.data.source.dtype)], reduction, bindings, [loop.loop_var],
                             [int(loop.extent)], [1] * len(reduction.store.indices))
