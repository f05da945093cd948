"""On DSP cores, a convolution's loop over the channel tiles of a pixel pair as one call of the fused pair-tiles
helper.

A CONV_2D pairs its output pixels where two pixels per call pay (``pixel_pairs.pays_two_pixels``): an unpadded
one from its schedule (``tvm_ext.schedule.kernel_schedule``; an odd pixel count pairs all but the last pixel,
``pair_odd_pixel_row``), a padded one in its interior and, where its rows are short, across its border with both
windows copied (``pixel_pairs.paired_pixel_body``, ``border_window.paired_windows``). Each pair runs a loop over
its channel tiles whose iteration zeroes the tile's eight accumulators, calls the two-pixel dual MAC
``<prefix>_dual_mac_s8x2x4`` (which widens both pixels' inputs again in every tile) and requantizes each pixel's
four channels (``requantize_epilogue``'s calls). ``pair_tiles_calls`` replaces each such loop by one call of
``<prefix>_pair_tiles_s8`` (``backends.cortex_m.helpers.pair_tiles_c``), which widens the pair's windows once
into a scratch of the kernel (``pair_q15.q15_scratch_words`` words), starts each tile's sums at the biases in
registers and requantizes them from there. Where the kernel requantizes with the DSP epilogue (``fuses_pairs``),
its pairs are therefore not widened by ``pair_q15`` first (``pair_odd_pixel_row``, ``paired_pixel_body``,
``paired_windows``): the fused helper widens them itself; any other kernel's pairs keep their calls, widened as
before. Measured under QEMU on cortex-m4f: tcn_kws_100x32_int8's six 64-channel 1xK convolutions from 1.83-1.96 M
instructions each (1.5-1.6 per MAC) to 1.51 M (1.23), the whole model 13,258,652 -> 10,624,547 instructions
(0.742 -> 0.594x TFLM+CMSIS-NN); then the 1x1 and KxK convolutions too: pretrainedResnet_quant 19,333,984 ->
17,843,342 instructions (its 3x3 convolutions' pairs, interior and border; code 14,240 -> 8,044 B),
mobilenet_v2_050_64_int8 18,493,659 -> 17,091,379, person_detect 15,542,154 -> 14,043,671, kws_ref_model
5,400,821 -> 5,086,841.

A pair whose output channels the lowering padded to whole tiles (its epilogues scalar loops under a channel test,
``conv_tiles.partial_tile_epilogue``) becomes one call of ``<prefix>_pair_tiles_part_s8`` (``_b16``;
``templates/pair_tiles_part.h.in``: the whole pairs of channels as the fused helper's, an odd last channel one more
pass, only the channels stored): the layer sweep's 8x8x16 -> 7 1x1 convolution on cortex-m4f 26,827 -> 20,594
instructions (3.7 -> 2.9 per MAC).

Helium cores run the same pass with ``HELIUM_PAIR_TILES``: the loop's calls (zeroed accumulators, the two-pixel
dual MAC, each pixel's vector epilogue) move into one out-of-line copy per bundle, ``<prefix>_pair_tiles_shared_s8``
(``helium_conv_tiles.h.in``), which makes the same calls on the same values: one call per pair in each kernel, not
a loop of three calls per tile. Measured on cortex-m55, pretrainedResnet_quant (its 3x3 kernels' pairs): code
6,772 -> 5,940 B, 3,761,883 -> 3,670,808 instructions (the helper's accumulators zeroed by two vector stores;
with an initializer gcc called memset per tile: 3,930,542).

RV32 cores run the same pass with their own helper (``PairTileHelpers``:
``backends.riscv.schedules.mac.RISCV_PAIR_TILES``): their two-pixel paired MAC's calls over eight channels a tile,
the "double_small" epilogue's calls, no widened scratch (``<prefix>_pair_tiles_s8x8``,
backends/riscv/helpers/templates/pair_tiles_s8x8.h.in).

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) each iteration is,
in this order: stores of zero into exactly the eight accumulators the MAC call then writes (four per pixel),
the two-pixel MAC call, one requantization (int32 or int16 biases) of each pixel's four channels reading that
pixel's accumulators, the second pixel's outputs a constant stride after the first's; the inputs do not move
with the tile, the weights move four channels, and the outputs, biases, multipliers and shifts four elements.
The accumulators are then written and read only inside one iteration, so leaving them out changes no output:
the same integer sums (acc + bias wraps either way), bit-exact.

A kernel whose widened inputs' scratch makes the memory plan larger (it is live at the arena's peak) takes the
scratch-free form instead (``without_pair_scratch``: each fused call becomes one of
``<prefix>_pair_tiles_direct_s8``, which widens the inputs again in every pass, the scratch gone), chosen by the
plan (``tvm_ext.compile.scratch_forms``): str_ww_ref_model's 24x1x128 1x1 convolution on cortex-m4f, whose 512 B
of widened inputs sat at its peak.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.sym import Analyzer

from backends.backend import ScratchFreeForm
from backends.bias_forms import by_bias
from backends.cortex_m.helpers.dual_mac_q15_c import q15_scratch_words
from backends.cortex_m.helpers import PAIR_DIRECT_HELPERS, PAIR_PART_HELPERS
from backends.cortex_m.helpers.helium_c import shared_pair_tiles_helper_name
from backends.cortex_m.helpers.pair_tiles_c import (PAIR_DIRECT_EXTRA_INSTRUCTIONS_PER_MAC, pair_direct_helper_name,
                                                    pair_part_helper_name, pair_tiles_helper_name)
from backends.cortex_m.schedules import border_window, pixel_pairs
from backends.cortex_m.schedules.conv_tiles import (TILE, LoopOffsets, at_first_tile, call_of, flat_offset,
                                                   partial_tile_epilogue, pointee, sole_call, tile_loop_stmts,
                                                   with_tile_overread, zeroed_stores)
from backends.cortex_m.schedules.depthwise_spread import spread_replacement
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_2PX_OP, DUAL_MAC_PIXELS, _whole, register_mac_helper
from backends.cortex_m.schedules.pair_q15 import scratch_axes
from backends.cortex_m.schedules.requantize_epilogue import (DOUBLE_ROUNDING_OPS, DSP_EPILOGUE,
                                                              DSP_UNTABLED_EPILOGUE, LUT_ENTRIES, REQUANTIZE_S8_LUT_OPS,
                                                              REQUANTIZE_S8_OPS,
                                                              REQUANTIZE_SMALL_LUT_OPS, REQUANTIZE_SMALL_OPS,
                                                              STORED_ARG, EpilogueHelper, requantize_epilogue,
                                                              requantize_epilogue_call, requantized, stored_channels)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import UnknownTirNode, map_leaves, map_nodes, vars_read, walk, with_root_loops_replaced

PAIR_TILES_OPS = by_bias("tvm_ext.pair_tiles_s8")
"""The fused helper's op per bias type (the DSP epilogue's, ``requantize_epilogue.REQUANTIZE_SMALL_OPS``)."""
PAIR_TILES_DOUBLE_OPS = by_bias("tvm_ext.pair_tiles_double_s8")
"""The fused helper's op per bias type for any other double rounding ("double", "double_right_shift": a layer whose
constants or sums the DSP epilogue does not take), its epilogue scalar loops before (``DOUBLE_ROUNDING_LOOPS``)."""
DOUBLE_ROUNDING_LOOPS = EpilogueHelper(DOUBLE_ROUNDING_OPS, REQUANTIZE_S8_OPS)
"""The matcher of a pair's scalar requantization loop of any double rounding (``DOUBLE_ROUNDING_OPS``, through
``requantize_epilogue_call``): a matched loop's call takes a ``REQUANTIZE_S8_OPS`` op, which ``FUSED_OPS`` turns into
the fused helper's (``PAIR_TILES_DOUBLE_OPS``) here only; no such call reaches a DSP kernel."""
PAIR_TILES_LUT_OPS = by_bias("tvm_ext.pair_tiles_lut_s8")
"""The fused helper's op per bias type with a lookup table after the DSP epilogue (its table epilogue's,
``requantize_epilogue.REQUANTIZE_SMALL_LUT_OPS``: a LEAKY_RELU convolution's)."""
FUSED_OPS = {**{op: PAIR_TILES_OPS[bias] for bias, op in REQUANTIZE_SMALL_OPS.items()},
             **{op: PAIR_TILES_DOUBLE_OPS[bias] for bias, op in REQUANTIZE_S8_OPS.items()},
             **{op: PAIR_TILES_LUT_OPS[bias] for bias, op in REQUANTIZE_SMALL_LUT_OPS.items()}}
"""The fused helper's op per epilogue op."""
# pair_tiles_s8(out, x, q, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, x_pixel_stride,
# out_pixel_stride, w_channel_stride, channels): out[p * out_pixel_stride + c] and the epilogue's constants
# `channels` elements; x[p * x_pixel_stride + r * x_row_stride + k]; q the scratch of both windows; w `channels`
# runs of rows * row_len, w_channel_stride apart.
PAIR_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_PIXELS, Arg(12)), Axis(Arg(14), 1))),
    PointerAccess(1, (Axis(DUAL_MAC_PIXELS, Arg(11)), Axis(Arg(9), Arg(8)), Axis(Arg(10), 1))),
    PointerAccess(2, scratch_axes(9, 10)),
    PointerAccess(3, (Axis(Arg(14), Arg(13)), Axis(Arg(9), Arg(10)), Axis(Arg(10), 1))),
    *(PointerAccess(pointer, (Axis(Arg(14), 1),)) for pointer in (4, 5, 6)),
))
for _bias, _op in PAIR_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(pair_tiles_helper_name, bias=_bias), PAIR_TILES_ACCESS)
for _bias, _op in PAIR_TILES_DOUBLE_OPS.items():
    register_mac_helper(_op, functools.partial(pair_tiles_helper_name, bias=_bias, any_double=True), PAIR_TILES_ACCESS)
# pair_tiles_lut_s8(..., channels, table): PAIR_TILES_ACCESS's elements and the table's LUT_ENTRIES.
PAIR_TILES_LUT_ACCESS = HelperAccess((*PAIR_TILES_ACCESS.pointers, PointerAccess(15, (Axis(LUT_ENTRIES, 1),))))
for _bias, _op in PAIR_TILES_LUT_OPS.items():
    register_mac_helper(_op, functools.partial(pair_tiles_helper_name, bias=_bias, table=True), PAIR_TILES_LUT_ACCESS)

PAIR_DIRECT_OP = "tvm_ext.pair_tiles_direct_s8"
"""The scratch-free form's op, every bias type and rounding (``without_pair_scratch``)."""
# pair_tiles_direct_s8(out, x, w, bias, bias_bytes, rounding_any, multiplier, shift, zero_point, x_row_stride, rows,
# row_len, x_pixel_stride, out_pixel_stride, w_channel_stride, channels): PAIR_TILES_ACCESS's elements, no scratch.
PAIR_DIRECT_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_PIXELS, Arg(13)), Axis(Arg(15), 1))),
    PointerAccess(1, (Axis(DUAL_MAC_PIXELS, Arg(12)), Axis(Arg(10), Arg(9)), Axis(Arg(11), 1))),
    PointerAccess(2, (Axis(Arg(15), Arg(14)), Axis(Arg(10), Arg(11)), Axis(Arg(11), 1))),
    *(PointerAccess(pointer, (Axis(Arg(15), 1),)) for pointer in (3, 6, 7)),
))
register_helper_call(PAIR_DIRECT_OP, PAIR_DIRECT_HELPERS, pair_direct_helper_name, PAIR_DIRECT_ACCESS)
PAIR_PART_OPS = by_bias("tvm_ext.pair_tiles_part_s8")
"""The fused helper's op per bias type for a channel count that is not a multiple of 4 ("double_small"; the call of
PAIR_TILES_ACCESS, its last tile of fewer channels: ``conv_tiles.partial_tile_epilogue``); the weights' rows read up to
the next whole tile (the lowering's zero channels), three rows past ``channels`` at most."""
for _bias, _op in PAIR_PART_OPS.items():
    register_helper_call(_op, PAIR_PART_HELPERS, functools.partial(pair_part_helper_name, bias=_bias),
                         with_tile_overread(PAIR_TILES_ACCESS, 3, 13))
PAIR_PART_LUT_OPS = by_bias("tvm_ext.pair_tiles_part_lut_s8")
"""PAIR_PART_OPS' helpers with a lookup table after the epilogue (PAIR_TILES_LUT_OPS' call, its last tile of fewer
channels: a padded last tile's table epilogue call, ``requantize_epilogue_call`` with ``partial_tables``)."""
for _bias, _op in PAIR_PART_LUT_OPS.items():
    register_helper_call(_op, PAIR_PART_HELPERS, functools.partial(pair_part_helper_name, bias=_bias, table=True),
                         with_tile_overread(PAIR_TILES_LUT_ACCESS, 3, 13))
_BIAS_BYTES = {"int32": 4, "int16": 2}
_DIRECT_FORMS = {**{op: (_BIAS_BYTES[bias], 0) for bias, op in PAIR_TILES_OPS.items()},
                 **{op: (_BIAS_BYTES[bias], 1) for bias, op in PAIR_TILES_DOUBLE_OPS.items()}}
"""Per fused op with a scratch: the direct call's bias bytes and rounding_any."""


def fuses_pairs(stmt: tirx.Stmt) -> bool:
    """Whether ``stmt`` (a kernel's or a pixel's statements) requantizes more than one channel tile of sums with
    a double rounding and per-channel constants (``requantize_epilogue``), no lookup table or one after the DSP
    epilogue's rounding (``PAIR_TILES_LUT_OPS``, ``PAIR_PART_LUT_OPS``), which the fused helper computes: its pairs' loops over their channel tiles become
    pair-tiles calls (``pair_tiles_calls``), so the pairs need not be widened first (a single tile leaves no loop
    to fuse)."""
    for node in walk(stmt):
        epilogue = requantize_epilogue(node.body, DOUBLE_ROUNDING_LOOPS.roundings, tables=True) \
            if isinstance(node, s_tir.SBlock) else None
        if epilogue is not None:
            channels = epilogue.store.buffer.shape[-1]
            if epilogue.table is not None:
                return isinstance(channels, tirx.IntImm) and int(channels) > TILE \
                    and requantized(epilogue.store, DSP_EPILOGUE.roundings, tables=True) is not None
            return not isinstance(channels, tirx.IntImm) or int(channels) > TILE
    return False


FUSED_TWO_PIXEL_MIN_REDUCTION = 16
"""The shortest reduction a kernel whose pairs fuse (``fuses_pairs``) tiles two pixels for: measured under QEMU on
cortex-m4f, 1x1 convolutions on 16 channels run faster paired and fused (vww_96_int8's 24x24x32 from 747,337 to
679,920 instructions, mobilenet_v2_050_64_int8's 16x16x96 from 1,000,200 to 879,784), on 8 slower (vww's 48x48x16
from 1,039,804 to 1,123,657: the pair's widening and call outweigh the weights it shares)."""


FUSED_EIGHT_INPUTS = 8
"""The reduction a kernel whose pairs fuse also tiles two pixels for where its innermost reduction loop runs whole
groups of four: the fused helper's entry points then take ``<prefix>_pair_tiles_eight_any`` (both pixels' inputs
held in registers; templates/pair_tiles.h.in). Measured under QEMU on cortex-m4f, 1x1 convolutions on 8 channels
from one pixel per call (``conv_tiles``) to pairs: vww_96_int8's 48x48x16 1,039,804 -> 819,432 instructions,
person_detect's 1,060,541 -> 856,296, mobilenet_v2_050_64_int8's 32x32x48 1,370,616 -> 1,101,719 (through the
scratch, as FUSED_TWO_PIXEL_MIN_REDUCTION's pairs, vww's took 1,123,657)."""


def pays_two_pixels(sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> bool:
    """``pixel_pairs.pays_two_pixels`` from a reduction of FUSED_TWO_PIXEL_MIN_REDUCTION (or of exactly
    FUSED_EIGHT_INPUTS, the innermost reduction loop's extent a multiple of four) where the one consumer of
    ``block`` requantizes as ``fuses_pairs`` asks (its pairs' tiles fused: no two-pixel MAC calls per tile),
    from ``pixel_pairs.TWO_PIXEL_MIN_REDUCTION`` elsewhere."""
    consumers = sch.get_consumers(block)
    if not (len(consumers) == 1 and fuses_pairs(sch.get(consumers[0]))):
        return pixel_pairs.pays_two_pixels(sch, block, loops, first_reduce, pixel_pairs.TWO_PIXEL_MIN_REDUCTION)
    if pixel_pairs.pays_two_pixels(sch, block, loops, first_reduce, FUSED_TWO_PIXEL_MIN_REDUCTION):
        return True
    innermost = sch.get(loops[-2]).extent if len(loops) - first_reduce >= 2 else None
    return isinstance(innermost, tirx.IntImm) and int(innermost) % 4 == 0 \
        and pixel_pairs.pays_two_pixels(sch, block, loops, first_reduce, FUSED_EIGHT_INPUTS) \
        and not pixel_pairs.pays_two_pixels(sch, block, loops, first_reduce, FUSED_EIGHT_INPUTS + 1)


def pair_odd_pixel_row(func: tirx.PrimFunc, block_name: str, first_reduction: int) -> tirx.PrimFunc:
    """``pixel_pairs.pair_odd_pixel_row`` (an odd pixel count: pairs, then the last pixel on its own) with the
    pairs' inputs widened once (``pair_q15``) unless ``func`` requantizes with the DSP epilogue
    (``fuses_pairs``): its pairs ``pair_tiles_calls`` then fuses, whose helper widens them itself. Where no helper
    of those computes the reduction (``func`` unchanged), a depthwise one of a multiplier above 1 one call of the
    spread helper per pixel (``depthwise_spread``; it has no two-pixel form)."""
    paired = pixel_pairs.pair_odd_pixel_row(func, block_name, first_reduction, widen_inputs=not fuses_pairs(func.body),
                                            padded_tiles=True)
    if paired is not func:
        return paired
    return pixel_pairs.pair_odd_pixel_row(func, block_name, first_reduction, widen_inputs=False,
                                          replacement=spread_replacement)


def paired_pixel_body(pixel_body: tirx.Stmt, *args, **kwargs):
    """``pixel_pairs.paired_pixel_body`` with the pair's inputs widened once unless ``pixel_body`` requantizes
    with the DSP epilogue (``fuses_pairs``): its pair ``pair_tiles_calls`` then fuses; a padded last tile's
    epilogue pairs too (``padded_tiles``: the partial pair tiles take it)."""
    return pixel_pairs.paired_pixel_body(pixel_body, *args, widen_inputs=not fuses_pairs(pixel_body),
                                         padded_tiles=True, **kwargs)


def paired_windows(pixel_body: tirx.Stmt, *args, **kwargs):
    """``border_window.paired_windows`` (a border pixel pair's windows copied) with the pair's inputs widened
    once unless ``pixel_body`` requantizes with the DSP epilogue (``fuses_pairs``): its pair
    ``pair_tiles_calls`` then fuses; a padded last tile's epilogue pairs too (``padded_tiles``)."""
    return border_window.paired_windows(pixel_body, *args, widen_inputs=not fuses_pairs(pixel_body),
                                        padded_tiles=True, **kwargs)


@dataclass(frozen=True)
class PairWindow:
    """What a two-pixel MAC call sums: its accumulators' addresses (``acc_a``, ``acc_b``: the pixels'), the
    inputs' and the weights' (``x``, ``w``: call arguments), the window's sizes in elements (constants) and how
    far the weights' element offset moves per channel tile (``w_tile_step``)."""

    acc_a: object
    acc_b: object
    x: object
    w: object
    x_row_stride: int
    rows: int
    row_len: int
    x_pixel_stride: int
    w_tile_step: int


@dataclass(frozen=True)
class ShortRows:
    """A family's fused pair tiles for windows of several short rows: a pair whose window has more than one row, each
    under ``row_bytes`` bytes, and at most ``window_bytes`` inputs a pixel takes ``ops[op]`` in place of the fused op
    ``op`` (the same arguments: an out-of-line copy that copies both pixels' windows into one run each first)."""

    row_bytes: int
    window_bytes: int
    ops: dict[str, str]

    def takes(self, window: PairWindow) -> bool:
        """Whether a pair of ``window`` (its sizes) takes the windowed form."""
        return window.rows > 1 and window.row_len < self.row_bytes and window.rows * window.row_len <= self.window_bytes


@dataclass(frozen=True)
class PairTileHelpers:
    """A core family's fused pair-tiles helper: the two-pixel MAC ops whose calls it takes and their reading
    (``window``: a PairWindow, else None), the channels per tile (``tile``), what turns a scalar requantization
    loop into an epilogue call first (``loop_epilogue``, or None: the loops are calls already), the fused helper's
    op per epilogue op (``fused``), the words of the widened inputs' scratch of a window (``scratch_words``, or
    None: no scratch), and the call's arguments after the epilogue's (``window_args``: the window, the pixels'
    output stride, the tile loop's extent)."""

    mac_ops: tuple[str, ...]
    window: Callable[[tvm.ir.Call], Optional[PairWindow]]
    tile: int
    loop_epilogue: object
    fused: dict[str, str]
    scratch_words: Optional[Callable[[int, int], int]]
    window_args: Callable[[PairWindow, int, int], list]
    partial: Optional[tuple[EpilogueHelper, dict[str, str]]] = None
    """The epilogue whose loops under a channel test (``conv_tiles.partial_tile_epilogue``: output channels padded
    to whole tiles) the helper of a last tile of fewer channels computes, and its op per fused op (the channels the
    window arguments' last); None: such a loop keeps its tiles."""
    short_rows: Optional[ShortRows] = None
    """The windowed form of the fused op for windows of short rows (Helium's); None: every pair takes ``fused``."""


def channel_strided_window(mac: tvm.ir.Call, tile: int) -> Optional[PairWindow]:
    """The window of a two-pixel MAC call over weights stored channel after channel (acc_a, acc_b, x, w,
    x_row_stride, w_channel_stride, rows, row_len, x_pixel_stride: ``<prefix>_dual_mac_s8x2x4``, RV32's
    ``<prefix>_mac_s8x2x8`` and ``_row``) of constant sizes, a tile ``tile`` channels, else None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[4:]]
    if None in sizes:
        return None
    x_row_stride, w_channel_stride, rows, row_len, x_pixel_stride = sizes
    return PairWindow(*mac.args[:4], x_row_stride, rows, row_len, x_pixel_stride, tile * w_channel_stride)


def channel_strided_args(window: PairWindow, out_pixel_stride: int, tiles: int, tile: int) -> list:
    """The fused helper's window arguments for a `channel_strided_window`: the window's sizes, the output pixels'
    stride, the weights' channel stride and the channels of ``tiles`` tiles of ``tile``."""
    return [window.x_row_stride, window.rows, window.row_len, window.x_pixel_stride, out_pixel_stride,
            window.w_tile_step // tile, tiles * tile]


DSP_PAIR_TILES = PairTileHelpers(
    (DUAL_MAC_2PX_OP,), functools.partial(channel_strided_window, tile=TILE), TILE, DOUBLE_ROUNDING_LOOPS, FUSED_OPS,
    q15_scratch_words, functools.partial(channel_strided_args, tile=TILE),
    (DSP_UNTABLED_EPILOGUE, {**{PAIR_TILES_OPS[bias]: op for bias, op in PAIR_PART_OPS.items()},
                             **{PAIR_TILES_LUT_OPS[bias]: op for bias, op in PAIR_PART_LUT_OPS.items()}}))
"""The DSP cores': the two-pixel dual MAC, four channels a tile, the pair's inputs widened once into a scratch
(``templates/pair_tiles.h.in``; the call of PAIR_TILES_ACCESS); a channel count that is not a multiple of four
``templates/pair_tiles_part.h.in``."""


HELIUM_PAIR_TILES_OPS = by_bias("tvm_ext.pair_tiles_shared_s8")
"""Helium's fused pair tiles per bias type (the vector epilogue's, ``REQUANTIZE_S8_OPS``): one out-of-line copy per
bundle (``helium_conv_tiles.h.in``)."""
# pair_tiles_shared_s8(out, x, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, x_pixel_stride,
# out_pixel_stride, w_channel_stride, channels): PAIR_TILES_ACCESS's elements, no scratch.
HELIUM_PAIR_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_PIXELS, Arg(11)), Axis(Arg(13), 1))),
    PointerAccess(1, (Axis(DUAL_MAC_PIXELS, Arg(10)), Axis(Arg(8), Arg(7)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(13), Arg(12)), Axis(Arg(8), Arg(9)), Axis(Arg(9), 1))),
    *(PointerAccess(pointer, (Axis(Arg(13), 1),)) for pointer in (3, 4, 5)),
))
for _bias, _op in HELIUM_PAIR_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(shared_pair_tiles_helper_name, bias=_bias), HELIUM_PAIR_TILES_ACCESS)
HELIUM_PAIR_TILES_LUT_OPS = by_bias("tvm_ext.pair_tiles_shared_lut_s8")
"""Helium's fused pair tiles with a lookup table after the vector epilogue per bias type (the table epilogue's,
``REQUANTIZE_S8_LUT_OPS``: a LEAKY_RELU convolution's): HELIUM_PAIR_TILES_ACCESS's call, then the table."""
for _bias, _op in HELIUM_PAIR_TILES_LUT_OPS.items():
    register_mac_helper(_op, functools.partial(shared_pair_tiles_helper_name, bias=_bias, table=True),
                        HelperAccess((*HELIUM_PAIR_TILES_ACCESS.pointers, PointerAccess(14, (Axis(LUT_ENTRIES, 1),)))))
HELIUM_PAIR_WINDOWED_OPS = by_bias("tvm_ext.pair_tiles_windowed_s8")
"""Helium's fused pair tiles per bias type over both pixels' windows copied into one run each
(``<prefix>_pair_tiles_windowed_s8``): HELIUM_PAIR_TILES_ACCESS's call."""
for _bias, _op in HELIUM_PAIR_WINDOWED_OPS.items():
    register_mac_helper(_op, functools.partial(shared_pair_tiles_helper_name, bias=_bias, windowed=True),
                        HELIUM_PAIR_TILES_ACCESS)
HELIUM_PAIR_WINDOW_BYTES = 96
"""The most inputs of one pixel's window the windowed form copies (``<PREFIX>_PAIR_WINDOW_BYTES`` in
``helium_conv_tiles.h.in``: both pixels' windows on its stack, 192 B)."""
HELIUM_PAIR_TILES = PairTileHelpers(
    (DUAL_MAC_2PX_OP,), DSP_PAIR_TILES.window, TILE, None,
    {**{op: HELIUM_PAIR_TILES_OPS[bias] for bias, op in REQUANTIZE_S8_OPS.items()},
     **{op: HELIUM_PAIR_TILES_LUT_OPS[bias] for bias, op in REQUANTIZE_S8_LUT_OPS.items()}},
    None, DSP_PAIR_TILES.window_args,
    short_rows=ShortRows(border_window.HELIUM_SHORT_ROW_BYTES, HELIUM_PAIR_WINDOW_BYTES,
                         {HELIUM_PAIR_TILES_OPS[bias]: op for bias, op in HELIUM_PAIR_WINDOWED_OPS.items()}))
"""Helium's: the two-pixel dual MAC and the vector epilogue's calls of a pair's channel tiles moved into one call of
an out-of-line copy per bundle (``<prefix>_pair_tiles_shared_s8``), which makes the same calls: each kernel holds
one call per pair instead of the tiles' loop of three calls (pretrainedResnet_quant's 3x3 kernels). A window of
several rows under two vectors each (a dilated TCN's 1x3 window of 24 channels: three rows of 24 B) takes the
windowed copy (``<prefix>_pair_tiles_windowed_s8``): measured on cortex-m55, a causal TCN on 75x20 of 24 channels, its
dilated convolutions 74,296 -> 52,688 instructions each, the model 658,253 -> 509,108 (stack 416 -> 592 B)."""


def _requantizations(stmts: list, helpers: PairTileHelpers, tile=None
                     ) -> Optional[tuple[list[tuple[tvm.ir.Call, dict]], list[Optional[int]]]]:
    """The epilogue calls ``stmts`` consist of (the family's epilogue's, or the call ``helpers.loop_epilogue``
    makes of a scalar requantization loop, or with ``helpers.partial`` a whole tile's call of a loop under a channel
    test of the tile loop's variable ``tile``), each with the values of the loops around it inside ``stmts`` (one
    per iteration: a loop over the pair's pixels is unrolled here), and each one's channel test's bound (None: no
    test); None for anything else."""
    found, bounds = [], []
    for stmt in stmts:
        loops, call, bound = [], None, None
        while isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm) \
                and isinstance(stmt.min, tirx.IntImm):
            tail = None if helpers.partial is None or tile is None \
                else partial_tile_epilogue(stmt, tile, helpers.tile, helpers.partial[0])
            if tail is not None:
                call, bound = tail
                break
            matched = None if helpers.loop_epilogue is None \
                else requantize_epilogue_call(stmt, helpers.loop_epilogue)
            if matched is not None:
                stmt = matched
                break
            loops.append(stmt)
            stmt = stmt.body
        call = call if call is not None else call_of(stmt, tuple(helpers.fused))
        if call is None:
            return None
        for values in itertools.product(*(range(int(loop.min), int(loop.min) + int(loop.extent)) for loop in loops)):
            at = {loop.loop_var: tirx.const(value, str(loop.loop_var.ty.dtype)) for loop, value in zip(loops, values)}
            found.append((tirx.call_intrin("int32", call.op.name,
                                           *(map_leaves(arg, lambda n: at.get(n, n)) for arg in call.args)), at))
            bounds.append(bound)
    return found, bounds


def _counted_bound(requantization: tvm.ir.Call, loop: tirx.For, tile_channels: int) -> Optional[int]:
    """The channel bound of an epilogue call whose count (argument 6) is ``min(tile_channels, bound - tile *
    tile_channels)`` at every iteration of the tile loop ``loop`` (a padded last tile's table epilogue,
    ``requantize_epilogue_call`` with ``partial_tables``), else None."""
    count, tile = requantization.args[STORED_ARG], loop.loop_var
    analyzer = Analyzer()
    values = []
    for step in range(int(loop.min), int(loop.min) + int(loop.extent)):
        value = analyzer.simplify(map_leaves(count, lambda n: tirx.const(step, str(tile.ty.dtype))
                                             if n.same_as(tile) else n))
        if not isinstance(value, tirx.IntImm):
            return None
        values.append((step, int(value)))
    last, at_last = values[-1]
    bound = last * tile_channels + at_last
    if any(value != min(tile_channels, bound - step * tile_channels) for step, value in values):
        return None
    return bound


def pair_tiles_call(loop: tirx.For, enclosing: tuple, scratch: list,
                    helpers: PairTileHelpers = DSP_PAIR_TILES) -> Optional[s_tir.SBlockRealize]:
    """The fused helper's call block computing what ``loop`` (inside the loops ``enclosing``) computes, or None
    where it is not a loop over the channel tiles of a convolution's pixel pair of the module
    docstring's form; the call's widened-input scratch (``helpers.scratch_words``) is the first buffer of
    ``scratch`` (the kernel's, which the calls share: they run one after another) that holds enough words, else a
    new one appended to it. ``helpers``: the family's (DSP_PAIR_TILES; RV32:
    ``backends.riscv.schedules.mac.RISCV_PAIR_TILES``)."""
    stmts = tile_loop_stmts(loop)
    found = sole_call(stmts, helpers.mac_ops) if stmts is not None else None
    if found is None:
        return None
    at, mac = found
    window = helpers.window(mac)
    if window is None:
        return None
    acc_a, acc_b, x, w = (pointee(arg) for arg in (window.acc_a, window.acc_b, window.x, window.w))
    read = _requantizations(stmts[at + 1:], helpers, loop.loop_var)
    if read is None:
        return None
    requantizations, tested = read
    counted = [bound is None and stored_channels(call) is None for (call, _), bound in
               zip(requantizations, tested)]
    tested = [_counted_bound(call, loop, helpers.tile) if by_count else bound
              for (call, _), bound, by_count in zip(requantizations, tested, counted)]
    if any(by_count and bound is None for by_count, bound in zip(counted, tested)):
        return None
    if None in (acc_a, acc_b, x, w) or len(requantizations) != DUAL_MAC_PIXELS or len(set(tested)) != 1:
        return None  # both pixels' epilogues under the same channel test, or neither
    tile_channels = helpers.tile
    channels = int(loop.extent) * tile_channels
    bound = tested[0]
    if bound is not None:  # a last tile of fewer channels: the channel tests' bound
        if helpers.partial is None:
            return None  # the family has no partial pair tiles (RV32's padded last tile is one epilogue call)
        channels = bound
        if not tile_channels * (int(loop.extent) - 1) < channels < tile_channels * int(loop.extent):
            return None
    offsets = LoopOffsets((*enclosing, loop))
    constant = offsets.constant
    tile = loop.loop_var

    # the zeroed accumulators: exactly the MAC's two tiles (one from each pixel's pointer)
    zeroed = [zeroed_stores(stmt, acc_a.source) for stmt in stmts[:at]]
    if any(part is None for part in zeroed):
        return None
    second = constant(flat_offset(acc_b) - flat_offset(acc_a))
    if not acc_b.source.same_as(acc_a.source) or second is None:
        return None
    lanes = [*range(tile_channels), *range(second, second + tile_channels)]
    if not offsets.zeroes_exactly([entry for part in zeroed for entry in part], acc_a, lanes):
        return None
    # each pixel's epilogue reads its accumulators; the second pixel's outputs a constant stride on
    outs = []
    for (requantization, _), acc, by_count in zip(requantizations, (acc_a, acc_b), counted):
        out, read, *epilogue = (pointee(arg) for arg in requantization.args[:5])
        if None in (out, read, *epilogue) or not read.source.same_as(acc.source) \
                or constant(flat_offset(read) - flat_offset(acc)) != 0 \
                or not by_count and stored_channels(requantization) != tile_channels:
            return None
        outs.append((requantization, out, epilogue))
    (first, out, epilogue), (other, out_b, epilogue_b) = outs
    if first.op.name != other.op.name or not out_b.source.same_as(out.source) \
            or not tvm_ffi.structural_equal([*first.args[2:6], *first.args[7:]], [*other.args[2:6], *other.args[7:]]):
        return None  # the same constants (and table, if any) for both pixels
    out_pixel_stride = constant(flat_offset(out_b) - flat_offset(out))
    if out_pixel_stride is None or out_pixel_stride < channels:
        return None  # the pixels' outputs must not overlap
    fused = helpers.fused[first.op.name] if bound is None else helpers.partial[1].get(helpers.fused[first.op.name])
    if fused is None:
        return None
    if helpers.short_rows is not None and helpers.short_rows.takes(window):
        fused = helpers.short_rows.ops.get(fused, fused)
    # everything but the inputs moves one tile
    if not offsets.moves_tiles(tile, x, w, window.w_tile_step, (out, *epilogue), tile_channels):
        return None

    def address(arg):
        return at_first_tile(arg, tile)

    pointers = [address(first.args[0]), window.x]
    if helpers.scratch_words is not None:
        words = helpers.scratch_words(window.rows, window.row_len)
        buffer = next((held for held in scratch if int(held.shape[0]) >= words), None)
        if buffer is None:  # int32: 4-byte aligned for LDRD
            buffer = tirx.decl_buffer((words,), "int32", name="pair_q15")
            scratch.append(buffer)
        pointers.append(buffer.access_ptr("rw"))
    args = [*pointers, address(window.w), *(address(arg) for arg in first.args[2:5]), first.args[5],
            *helpers.window_args(window, out_pixel_stride, int(loop.extent))]
    if bound is not None:
        args[-1] = channels  # the window arguments' last: the channels
    tables = [pointee(arg) for arg in first.args[7:]]  # the table epilogue's (PAIR_TILES_LUT_OPS), last
    if None in tables:
        return None
    call = tirx.call_intrin("int32", fused, *args, *first.args[7:])
    reads = [_whole(load.source) for load in (x, w, *epilogue, *tables)]
    writes = [_whole(out.source)]
    block = s_tir.SBlock([], reads, writes, "pair_tiles", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def pair_tiles_calls(func: tirx.PrimFunc, helpers: PairTileHelpers = DSP_PAIR_TILES) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each loop over a pixel pair's channel tiles of
    the module docstring's form replaced by its fused call of ``helpers`` (DSP_PAIR_TILES, RV32's
    ``backends.riscv.schedules.mac.RISCV_PAIR_TILES``), the widened inputs' scratch buffers the kernel's own; any
    other function unchanged."""
    scratch: list = []
    replaced = with_root_loops_replaced(func, functools.partial(pair_tiles_call, scratch=scratch, helpers=helpers),
                                        enclosing=True)
    if helpers.scratch_words is None:
        return replaced
    if not scratch:
        return func
    realize = replaced.body
    root = realize.block
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, root.body, root.init,
                         [*root.alloc_buffers, *scratch], root.match_buffers, root.annotations)
    return replaced.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))


def _is_call_of(node, ops) -> bool:
    return isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name in ops


def without_pair_scratch(func: tirx.PrimFunc) -> Optional[ScratchFreeForm]:
    """``func`` with each fused pair-tiles call (``pair_tiles_call``) made a call of the scratch-free form
    (PAIR_DIRECT_OP: the same arguments but the scratch, then the bias bytes and rounding) and the widened inputs'
    scratch buffers no call reads any more dropped; None when ``func`` has no such call. The instructions added:
    PAIR_DIRECT_EXTRA_INSTRUCTIONS_PER_MAC per MAC, none where every call's window is of eight inputs in two groups
    (which both forms compute in registers)."""
    realize = func.body
    if not isinstance(realize, s_tir.SBlockRealize):
        return None
    dropped: set = set()
    widened = [False]  # whether a call widens its inputs in every pass

    def direct(node):
        if not _is_call_of(node, _DIRECT_FORMS):
            return None
        bias_bytes, rounding_any = _DIRECT_FORMS[node.op.name]
        out, x, q, w, bias, *rest = node.args
        dropped.update(vars_read(q))
        rows, row_len = (int(rest[i]) if isinstance(rest[i], tirx.IntImm) else 0 for i in (4, 5))
        widened[0] = widened[0] or not (rows * row_len == 8 and row_len % 4 == 0)
        return tirx.call_intrin("int32", PAIR_DIRECT_OP, out, x, w, bias, tirx.const(bias_bytes, "int32"),
                                tirx.const(rounding_any, "int32"), *rest)

    def rewrite(node):
        if isinstance(node, s_tir.SBlockRealize) and isinstance(node.block.body, tirx.Evaluate):
            call = direct(node.block.body.value)  # a pair_tiles_call block
            if call is None:
                return None
            old = node.block
            block = s_tir.SBlock(old.iter_vars, old.reads, old.writes, old.name_hint, tirx.Evaluate(call), old.init,
                                 old.alloc_buffers, old.match_buffers, old.annotations)
            return s_tir.SBlockRealize(node.iter_values, node.predicate, block)
        return None

    root = realize.block
    try:
        body = map_nodes(root.body, rewrite)
    except UnknownTirNode:  # a call inside a block of other statements, which tir_walk does not rebuild
        return None
    if body.same_as(root.body):
        return None
    still_read = vars_read(body)

    def among(buffer: tirx.Buffer, found: set) -> bool:
        """Whether a variable of ``buffer``'s data pointer is in ``found``."""
        return any(var.same_as(other) for var in vars_read(buffer.data) for other in found)

    kept = [buffer for buffer in root.alloc_buffers if not among(buffer, dropped) or among(buffer, still_read)]
    freed = tuple((str(buffer.dtype), int(buffer.shape[0]) * tvm.DataType(str(buffer.dtype)).bits // 8)
                  for buffer in root.alloc_buffers if buffer not in kept)
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, body, root.init, kept,
                         root.match_buffers, root.annotations)
    scratch_free = func.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))
    return ScratchFreeForm(scratch_free, freed, PAIR_DIRECT_EXTRA_INSTRUCTIONS_PER_MAC if widened[0] else 0.0)
