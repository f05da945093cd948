"""A pixel pair's inputs widened to int16 once, for all its output-channel tiles (CMSIS-NN's im2col to q15).

A pair of pixels (``backends.cortex_m.schedules.pixel_pairs``) makes one two-pixel dual-MAC call per channel tile, and each call
widens both pixels' inputs again with SXTB16. Here the pair instead widens its two windows once, before its
channel-tile loop, into a scratch of int32 words (``backends.cortex_m.helpers.dual_mac_q15_c``: 4 bytes per window element
in whole groups of four, 8 per element left over; a kernel scratch in the arena where it exceeds
codegen_c.LOCAL_BUFFER_MAX_BYTES: 256 bytes for a 1x1 convolution on 64 channels, 4 * 9 * Cin for a 3x3;
measured on cortex-m4f, the arena stays 16,256 B for kws_ref_model and 37,632 B for vww_96_int8 and grows
from 34,336 to 34,672 B for pretrainedResnet_quant), and
every channel tile calls ``<prefix>_dual_mac_q15x2x4`` on the scratch: only the weights are widened in the
inner loop. The products and their sums are the same integers: bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.dual_mac_q15_c import dual_mac_q15_helper_name, q15_scratch_words, widen_q15_helper_name
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_2PX_OP, DUAL_MAC_PIXELS, register_mac_helper
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.tir_walk import vars_read

WIDEN_Q15_OP = "tvm_ext.widen_s8x2_q15"
DUAL_MAC_Q15_OP = "tvm_ext.dual_mac_q15x2x4"


def scratch_axes(rows: int, row_len: int) -> tuple[Axis, ...]:
    """The words of a scratch of two windows of ``rows`` x ``row_len`` (argument numbers), as axes: 2 * rows *
    row_len words, a bound of the q15_scratch_words the helpers reach."""
    return (Axis(Arg(rows), Arg(row_len)), Axis(Arg(rows), Arg(row_len)), Axis(DUAL_MAC_PIXELS, Arg(row_len)),
            Axis(Arg(row_len), 1))


# The widening call (q, x, x_row_stride, rows, row_len, x_pixel_stride): q[0 .. 2 * rows * row_len) (words) and
# x[p * x_pixel_stride + r * x_row_stride + k] for p < 2, r < rows, k < row_len.
WIDEN_Q15_ACCESS = HelperAccess((
    PointerAccess(0, scratch_axes(3, 4)),
    PointerAccess(1, (Axis(DUAL_MAC_PIXELS, Arg(5)), Axis(Arg(3), Arg(2)), Axis(Arg(4), 1))),
))
register_mac_helper(WIDEN_Q15_OP, widen_q15_helper_name, WIDEN_Q15_ACCESS)
# The MAC call (acc_a, acc_b, q, w, w_channel_stride, rows, row_len): acc_a[c] and acc_b[c] for c < 4,
# q[0 .. 2 * rows * row_len) (words) and w[c * w_channel_stride + r * row_len + k] for r < rows, k < row_len.
DUAL_MAC_Q15_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(DUAL_MAC_CHANNELS, 1),)),
    PointerAccess(2, scratch_axes(5, 6)),
    PointerAccess(3, (Axis(DUAL_MAC_CHANNELS, Arg(4)), Axis(Arg(5), Arg(6)), Axis(Arg(6), 1))),
))
register_mac_helper(DUAL_MAC_Q15_OP, dual_mac_q15_helper_name, DUAL_MAC_Q15_ACCESS)


@dataclass(frozen=True)
class WidenedPair:
    """A pair's ``widen`` call (first, outside the channel-tile loop) filling ``scratch``, and the ``call``
    that replaces the pair's two-pixel dual-MAC call in each channel tile."""

    widen: s_tir.SBlockRealize
    call: s_tir.SBlockRealize
    scratch: tirx.Buffer


def widened_pair(call: s_tir.SBlockRealize, channel_loops: list,
                 scratch: Optional[tirx.Buffer] = None) -> Optional[WidenedPair]:
    """The widened form of the two-pixel call block ``call`` (``backends.cortex_m.schedules.dual_mac``), or None where it is
    another call or its input address moves with ``channel_loops`` (the loops between the pixel and the
    call: the widening runs once above them). Its scratch is ``scratch`` where that one (another pair's of the
    same kernel, never live at once with this one) holds enough words, else a new one."""
    block = call.block
    op = block.body.value if isinstance(block.body, tirx.Evaluate) else None
    if not isinstance(op, tvm.ir.Call) or op.op.name != DUAL_MAC_2PX_OP:
        return None
    acc_a, acc_b, x, w, x_row_stride, w_channel_stride, rows, row_len, x_pixel_stride = op.args
    if vars_read(tirx.Evaluate(x)) & {loop.loop_var for loop in channel_loops}:
        return None
    words = q15_scratch_words(int(rows), int(row_len))
    if scratch is None or int(scratch.shape[0]) < words:
        scratch = tirx.decl_buffer((words,), "int32", name="pair_q15")  # int32: 4-byte aligned for LDRD
    # The whole scratch's pointer (tvm_access_ptr): its extent keeps buffer compaction from shrinking it.
    scratch_start = scratch.access_ptr("rw")
    whole_scratch = tirx.BufferRegion(scratch, [tvm.ir.Range.from_min_extent(0, words)])
    tile, x_region, w_region = block.reads
    widen = s_tir.SBlock([], [x_region], [whole_scratch], "pair_q15_widen", tirx.Evaluate(tirx.call_intrin(
        "int32", WIDEN_Q15_OP, scratch_start, x, x_row_stride, rows, row_len, x_pixel_stride)))
    # Whole groups of four per row: the widened rows, like each channel's weights, follow one another without a
    # gap, so the MAC call reads them as one row (no per-row loop in its two passes).
    mac_rows, mac_row_len = (1, int(rows) * int(row_len)) if int(row_len) % 4 == 0 else (rows, row_len)
    mac = s_tir.SBlock([], [tile, whole_scratch, w_region], list(block.writes), "dual_mac_q15", tirx.Evaluate(
        tirx.call_intrin("int32", DUAL_MAC_Q15_OP, acc_a, acc_b, scratch_start, w, w_channel_stride, mac_rows,
                         mac_row_len)))
    return WidenedPair(s_tir.SBlockRealize([], True, widen), s_tir.SBlockRealize([], True, mac), scratch)
