"""On DSP cores, an int8 FULLY_CONNECTED's loop over its channel tiles of stacked weights as one call of the fused
fully connected tiles helper.

After the DSP schedules have made each tile's reduction a stacked MAC call (``stacked_mac``: weights the lowering
stacked two channels to an int16 half) and its requantization an epilogue call (``requantize_epilogue``), the
layer runs a loop over its tiles of four channels whose iteration zeroes the four accumulators, calls
``<prefix>_stacked_mac_s8x4`` (the out-of-line chunk: its registers saved, the accumulators loaded and stored) and
then the inlined ``<prefix>_requantize_small_s8`` (the accumulators reloaded, the biases added). ``fc_tiles_calls``
replaces each such loop of at least FUSED_TILES_MIN tiles by one call

    <prefix>_fc_tiles_s8x4(out, x, w, bias, multiplier, shift, zero_point, len, channels)    (_b16: int16 biases)

of one out-of-line function per bundle and bias type (``backends.cortex_m.helpers.dual_mac_c``'s
``fc_tiles_s8x4.h.in``), which starts each tile's sums at the biases in registers, runs the stacked MAC's loop on
them and requantizes them from there; a per-tensor layer (constants in the epilogue, which the DSP epilogue helper
does not take) the same way as ``<prefix>_fc_rows_s8x4`` (``fc_rows.fc_rows_call`` with ``DSP_FC_ROWS``). A layer of
fewer tiles keeps its kernel. Measured on cortex-m4f (QEMU -icount, per call): kws_gru_40x16_int8's 16 -> 144 layers
5,739 -> 5,408 instructions on average, its 48 -> 144 ones 10,897 -> 10,568; ad01_int8's 8 -> 128 4,018 -> 3,208 and
its 128 -> 128 ones 21,266-21,298 -> 20,488-21,101; code 41,944 -> 32,328 B and 1,720 -> 1,624 B (one helper where
each kernel held its loop and epilogue). The helper keeps each tile's sums in registers across a row of up to one
chunk (``stacked_run_s8x4``: the odd channels' sums folded out between chunks only): whole inferences 889,740 ->
873,443 instructions (kws_gru_40x16_int8, code 31,112 -> 31,092 B) and 330,240 -> 328,257 (ad01_int8, code 1,624 ->
1,612 B).

Over weights the lowering widened to int16 instead (``stacked_mac``'s widened-rows MAC calls: ``widened_rows_pay``
and the flash budget), the same loops become one call of ``<prefix>_fc_tiles_w16x4`` (per channel) or
``<prefix>_fc_rows_w16x4`` (per tensor), the same template's loop (``fc_tiles_any_s8x4``) on the widened sums:
ad01_int8 on cortex-m4f 326,349 -> 270,394 instructions (its 640 -> 128 layer 95,153 -> 78,640), code 1,580 ->
1,624 B; kws_gru_40x16_int8 834,903 -> 736,822, code 26,768 -> 26,848 B.

The loop qualifies as ``conv_tiles``' does (``conv_tiles.conv_tiles_call`` with ``DSP_FC_TILES``: proved by TVM's
integer analysis over the enclosing loops' ranges): stores of zero into exactly the four accumulators the MAC
call then writes, the stacked MAC call over one row of a constant length, one DSP requantization of those four
channels reading them; the inputs do not move with the tile, the weights move one tile's 4 len bytes, the outputs,
biases, multipliers and shifts four elements. Integer sums in another order (acc + bias wraps either way):
bit-exact.
"""

from __future__ import annotations

import functools
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.bias_forms import by_bias
from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS, fc_tiles_helper_name, fc_tiles_wide_helper_name
from backends.cortex_m.helpers.helium_c import fc_rows_helper_name
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import ConvTileHelpers, TileWindow, conv_tiles_call
from backends.cortex_m.schedules.dual_mac import register_mac_helper
from backends.cortex_m.schedules.fc_rows import FcRowHelpers, fc_rows_access, fc_rows_call
from backends.cortex_m.schedules.requantize_epilogue import REQUANTIZE_SMALL_OPS
from packager.fixed_point_c import REQUANTIZE_OPS, SMALL_RIGHT_SHIFT
from backends.cortex_m.schedules.stacked_mac import STACKED_MAC_OP, WIDE_MAC_OP
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.tir_walk import with_root_loops_replaced

FC_TILES_OPS = by_bias("tvm_ext.fc_tiles_s8x4")
"""The fused helper's op per bias type (the epilogue's, ``requantize_epilogue.REQUANTIZE_SMALL_OPS``)."""
FC_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(8), 1),)),
    PointerAccess(1, (Axis(Arg(7), 1),)),
    PointerAccess(2, (Axis(Arg(8), Arg(7)),)),
    *(PointerAccess(pointer, (Axis(Arg(8), 1),)) for pointer in (3, 4, 5)),
))
"""The call (out, x, w, bias, multiplier, shift, zero_point, len, channels): out and the epilogue's constants
`channels` elements, x len, w channels * len bytes (each tile of four channels 4 len)."""
for _bias, _op in FC_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(fc_tiles_helper_name, bias=_bias), FC_TILES_ACCESS)


def _stacked_window(mac: tvm.ir.Call) -> Optional[TileWindow]:
    """The window of a stacked MAC call (acc, x, w, len) of a constant length: one row of len inputs, the weights
    moving one tile's 4 len bytes per tile; else None."""
    length = mac.args[3]
    if not isinstance(length, tirx.IntImm):
        return None
    return TileWindow(*mac.args[:3], int(length), 1, int(length), DUAL_MAC_CHANNELS * int(length))


def _stacked_window_args(window: TileWindow, tiles: int) -> list:
    """The fused helper's sizes after the epilogue's arguments: len, channels."""
    return [window.row_len, tiles * DUAL_MAC_CHANNELS]


DSP_FC_TILES = ConvTileHelpers(REQUANTIZE_SMALL_OPS, FC_TILES_OPS, mac_ops=(STACKED_MAC_OP,), window=_stacked_window,
                               window_args=_stacked_window_args)
"""The DSP cores' fused tiles of stacked weights: the written-out epilogue (``requantize_small_c``),
``fc_tiles_s8x4.h.in``."""
WIDE_FC_TILES_OPS = by_bias("tvm_ext.fc_tiles_w16x4")
"""The fused helper's op per bias type over widened weights (``fc_tiles_s8x4.h.in``'s ``fc_tiles_w16x4``)."""
for _bias, _op in WIDE_FC_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(fc_tiles_wide_helper_name, bias=_bias, form="tiles"), FC_TILES_ACCESS)
WIDE_FC_TILES = ConvTileHelpers(REQUANTIZE_SMALL_OPS, WIDE_FC_TILES_OPS, mac_ops=(WIDE_MAC_OP,),
                                window=_stacked_window, window_args=_stacked_window_args)
"""The same over widened weights (the widened-rows MAC's calls: the same window, its elements int16 halves)."""


DSP_FC_ROWS_FORM = "s8x4"
"""The per-tensor rows helper's name form (``<prefix>_fc_rows_s8x4``, ``_b16``: ``fc_tiles_s8x4.h.in``)."""
DSP_FC_ROWS_OPS = by_bias("tvm_ext.fc_rows_s8x4")
"""The per-tensor rows helper's op per bias type."""
for _bias, _op in DSP_FC_ROWS_OPS.items():
    register_mac_helper(_op, functools.partial(fc_rows_helper_name, bias=_bias, form=DSP_FC_ROWS_FORM),
                        fc_rows_access(DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS))


def _stacked_row(mac: tvm.ir.Call) -> Optional[tuple[object, object, int]]:
    """(x, w, len) of a stacked MAC call (acc, x, w, len) of a constant length, else None."""
    window = _stacked_window(mac)
    return None if window is None else (window.x, window.w, window.row_len)


DSP_FC_ROWS = FcRowHelpers(STACKED_MAC_OP, _stacked_row, DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS,
                           frozenset({REQUANTIZE_OPS[SMALL_RIGHT_SHIFT]}), DSP_FC_ROWS_OPS)
WIDE_FC_ROWS_OPS = by_bias("tvm_ext.fc_rows_w16x4")
"""The per-tensor rows helper's op per bias type over widened weights (``fc_tiles_s8x4.h.in``'s ``fc_rows_w16x4``)."""
for _bias, _op in WIDE_FC_ROWS_OPS.items():
    register_mac_helper(_op, functools.partial(fc_tiles_wide_helper_name, bias=_bias, form="rows"),
                        fc_rows_access(DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS))
WIDE_FC_ROWS = FcRowHelpers(WIDE_MAC_OP, _stacked_row, DUAL_MAC_CHANNELS, DUAL_MAC_CHANNELS,
                            DSP_FC_ROWS.roundings, WIDE_FC_ROWS_OPS)
"""A per-tensor FULLY_CONNECTED row's loop over its tiles of stacked weights (zeroed accumulators, the stacked MAC,
the scalar "double_small" requantization by constants, which the DSP epilogue helper, reading arrays, does not take)
as one call of ``fc_tiles_s8x4.h.in``'s per-tensor helper (``fc_rows.fc_rows_calls`` with these helpers: each tile
4 len bytes of stacked weights, as four weights per input)."""


FUSED_TILES_MIN = 8
"""The fewest tiles a layer's loop fuses: the helper's one out-of-line copy (about 280 B on cortex-m4f) weighs about
what two kernels' own loops and epilogues did, and a layer of few tiles saves few instructions (hello_world_int8's
16 -> 16, four tiles: 659 -> about 550 instructions, code 568 -> 600 B as its bundle's only such layer;
micro_speech_quantized's one tile: 24 instructions, code 1,472 -> 1,548 B)."""


ONE_PIXEL_ROWS_SAVED_PER_MAC = 0.3
"""The instructions per MAC a CONV_2D of one pixel's 1x1 window saves as stacked rows (the fused fully connected
tiles) against its channel tiles (the dual MAC and the fused convolution tiles), about the least measured on
cortex-m4f (gcc 12.2 -O2): mobilenet_v3s_min_050_80's 288 -> 1024 head 0.42 (1.61 -> 1.19 a MAC, 475,668 -> 350,243
instructions, bundle code +172 B)."""
ONE_PIXEL_ROWS_CODE_BYTES = 280
"""The code the stacked rows may add to a bundle: their out-of-line helper's (FUSED_TILES_MIN), where no other layer
calls it."""


def one_pixel_rows_pay(row_len: int, channels: int, model_layers: tuple[tuple[int, int], ...]) -> bool:
    """Whether an int8 CONV_2D of one pixel's 1x1 window (``row_len`` inputs, ``channels`` outputs, whole tiles of
    four) pays as a one-row FULLY_CONNECTED of stacked weights at the schedules' one price of code: its own tiles
    fused (at least FUSED_TILES_MIN of them: else the kernel keeps its own loop), and the MACs of every such fused
    layer of the model (``model_layers``: (row_len, channels) of each of its one-pixel convolutions, this one's
    among them; they share the helper) saving ONE_PIXEL_ROWS_SAVED_PER_MAC each, at least ONE_PIXEL_ROWS_CODE_BYTES
    times ``code_price.INSTRUCTIONS_PER_BYTE`` in all (the helper charged to them: whether a FULLY_CONNECTED of the
    model calls it too is not known here). A squeeze-excitation's pair of convolutions of 576 and 144 channels (83 k
    MACs each) pays together where either alone would not."""
    def fused(layer_channels: int) -> bool:
        return layer_channels % DUAL_MAC_CHANNELS == 0 and layer_channels >= FUSED_TILES_MIN * DUAL_MAC_CHANNELS

    if not fused(channels):
        return False
    macs = sum(length * count for length, count in model_layers if fused(count))
    return macs * ONE_PIXEL_ROWS_SAVED_PER_MAC >= ONE_PIXEL_ROWS_CODE_BYTES * INSTRUCTIONS_PER_BYTE


WIDE_SAVED_PER_MAC = 0.2
"""The instructions per MAC a one-row FULLY_CONNECTED saves over widened weights (``wide_mac.h.in``: 15 per 16 MACs)
against stacked ones (18 per 16), about the least measured on cortex-m4f (gcc 12.2 -O2): ad01_int8's 128 -> 128
layers 0.20 (20,197 -> 16,904 instructions), its 640 -> 128 one 0.20 (95,153 -> 78,640)."""
WIDE_CODE_BYTES = 100
"""The code widening every one-row FULLY_CONNECTED of a model adds (the lowering widens all of them or none): the
widened helpers' against the stacked ones they replace, about the most measured on cortex-m4f: ad01_int8 1,580 ->
1,624 B, kws_gru_40x16_int8 26,768 -> 26,848 B."""
WIDE_BESIDE_STACKED_BYTES = 800
"""The code the widened helpers add where stacked rows stay too (a row of a multiple of 4 inputs but not of 8, a
one-pixel CONV_2D's rows): all of their own, about the most measured on cortex-m4f (ad01_int8: the widened MAC 144 B,
the per-tensor fused rows 336 B and 306 B with int16 biases)."""


def widened_rows_pay(macs: int, stacked_too: bool = False) -> bool:
    """Whether a model's one-row FULLY_CONNECTED layers of ``macs`` MACs in all (those the widened layout may take)
    pay their widened rows at the schedules' one price of code: WIDE_SAVED_PER_MAC each, at least WIDE_CODE_BYTES
    times ``code_price.INSTRUCTIONS_PER_BYTE``, or WIDE_BESIDE_STACKED_BYTES times it where ``stacked_too`` (some
    stacked rows stay in the bundle)."""
    code = WIDE_BESIDE_STACKED_BYTES if stacked_too else WIDE_CODE_BYTES
    return macs * WIDE_SAVED_PER_MAC >= code * INSTRUCTIONS_PER_BYTE


def _fused_call(loop: tirx.For, enclosing: tuple) -> Optional[s_tir.SBlockRealize]:
    """The fused call (per channel, else per tensor) computing what ``loop`` computes where it runs at least
    FUSED_TILES_MIN tiles, else None (the layer keeps its kernel)."""
    if not isinstance(loop.extent, tirx.IntImm) or int(loop.extent) < FUSED_TILES_MIN:
        return None
    return (conv_tiles_call(loop, enclosing, DSP_FC_TILES) or fc_rows_call(loop, enclosing, DSP_FC_ROWS)
            or conv_tiles_call(loop, enclosing, WIDE_FC_TILES) or fc_rows_call(loop, enclosing, WIDE_FC_ROWS))


def fc_tiles_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each loop over FUSED_TILES_MIN or more tiles of stacked
    weights of the module docstring's form replaced by its fused call, per channel (``DSP_FC_TILES``) or per tensor
    (``DSP_FC_ROWS``), and so over widened weights (``WIDE_FC_TILES``, ``WIDE_FC_ROWS``); any other function
    unchanged."""
    return with_root_loops_replaced(func, _fused_call, enclosing=True)
