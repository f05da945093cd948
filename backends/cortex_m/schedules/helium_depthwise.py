"""Helium's own schedule of int8 DEPTHWISE_CONV_2D kernels: 16-channel tiles, one vector helper call per tile.

On a Helium core an int8 depthwise reduction with a depth multiplier of 1 (each output channel reads its own
input channel) accumulates DEPTHWISE_TILES[0] (16) output channels at once where that count divides the
channels (a layer of 16 channels as one tile), else DEPTHWISE_TILES[1] (8; the helper's upper half then
predicated off), else a divisor of 8 to 16 channels or one tile of every channel (`_predicated_tile`: whole vectors
of 16 and one predicated tail), else the default tile of four (``tvm_ext.schedule.kernel_schedule``: ``MacSchedules.channel_tiles``). Such a tile's reduction (any
window, stride and dilation whose taps step by constant strides) becomes one call of
``<prefix>_depthwise_mac_s8x16`` (its out-of-line copy ``_box_s8x16`` on the clipped windows of a padded
border), and a border pixel's padding products (the taps outside the image, each the input's zero point times
the tap's weights: ``tvm_ext.schedule.border_split``) one call of ``<prefix>_depthwise_pad_s8x16``, the
channel count an argument; an int8 window's sums (AVERAGE_POOL_2D's) take the same tiles and helper, as the
products with the constant 1 (``backends.cortex_m.helpers.helium_c``'s ``helium_depthwise16.h.in``). Each
channel's sum is an integer sum in another order: bit-exact.
"""

from __future__ import annotations

import functools
from typing import Optional

from tvm import ir, s_tir, tirx
from tvm.ir import TensorLoad
from tvm.sym import Analyzer

from backends.cortex_m.helpers.helium_c import depthwise16_helper_name
from backends.cortex_m.schedules.depthwise_mac import mac_helper_replacement, window_tile_call
from backends.cortex_m.schedules.dual_mac import MacReduction, mac_reduction, register_mac_helper
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.tir_walk import walk

DEPTHWISE_TILES = (16, 8)
"""The output-channel tiles of an int8 depthwise reduction on a Helium core, widest first."""
MAX_CHANNELS = DEPTHWISE_TILES[0]
"""The most channels one call accumulates (the helpers' lanes)."""
MAC_OP, BOX_OP, PAD_OP = "tvm_ext.depthwise_mac_s8x16", "tvm_ext.depthwise_box_s8x16", "tvm_ext.depthwise_pad_s8x16"
# (acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, channels): acc[c],
# x[r * x_row_stride + k * x_col_stride + c] and w[r * w_row_stride + k * w_col_stride + c] for r < rows,
# k < cols, c < channels.
MAC_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(9), 1),)),
    PointerAccess(1, (Axis(Arg(7), Arg(3)), Axis(Arg(8), Arg(4)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(Arg(9), 1))),
))
# (acc, w, w_row_stride, w_col_stride, rows, cols, value, channels): acc[c] and
# w[r * w_row_stride + k * w_col_stride + c] for r < rows, k < cols, c < channels.
PAD_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(7), 1),)),
    PointerAccess(1, (Axis(Arg(4), Arg(2)), Axis(Arg(5), Arg(3)), Axis(Arg(7), 1))),
))
for _op, _kind, _access in ((MAC_OP, "mac", MAC_ACCESS), (BOX_OP, "box", MAC_ACCESS), (PAD_OP, "pad", PAD_ACCESS)):
    register_mac_helper(_op, functools.partial(depthwise16_helper_name, kind=_kind), _access)


def depthwise_channel_tiles(sch: s_tir.Schedule, block) -> tuple[int, ...]:
    """DEPTHWISE_TILES for an int8 depthwise reduction ``block`` of depth multiplier 1 (its int32 store's last
    index a spatial iteration variable that is the last index of its int8 input and weight loads, the input's
    possibly under a padding test) or an int8 window's sums (one such load: an average pool's), () for any
    other block; then `_predicated_tile`'s for a channel count none of those divides."""
    node = sch.get(block)
    store = node.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int32":
        return ()
    spatial = [iv.var for iv in node.iter_vars if iv.iter_type == tirx.IterVar.DataPar]
    channel = store.indices[-1]
    if not any(channel.same_as(var) for var in spatial):
        return ()
    loads = [load for load in walk(store.value) if isinstance(load, TensorLoad) and not load.source.same_as(store.buffer)]
    if len(loads) not in (1, 2) or any(str(load.source.dtype) != "int8" or not load.indices[-1].same_as(channel)
                              for load in loads):
        return ()
    extents = [iv.dom.extent for iv in node.iter_vars if iv.iter_type == tirx.IterVar.DataPar]
    (extent,) = (iv.dom.extent for iv in node.iter_vars if iv.var.same_as(channel))
    if not all(isinstance(e, tirx.IntImm) for e in extents):
        return DEPTHWISE_TILES
    pixels = functools.reduce(lambda product, e: product * int(e), extents, 1) // int(extent)
    return DEPTHWISE_TILES + _predicated_tile(int(extent), pixels)


WHOLE_TILE_MIN_PIXELS = 9
"""The fewest output pixels of a layer that takes one tile of every channel (`_predicated_tile`): below a 3x3
window's taps most or all of a layer's pixels are border cases, each of which keeps its loop over the whole
vectors with the window's calls (no interior pixel for the fused tiles), and that code does not pay at the code
price (`code_price.INSTRUCTIONS_PER_BYTE`): mobilenet_v1_030_80's 3x3 layer over 2x2x307 on cortex-m55, 63,647 ->
28,159 instructions for 2,532 B more code (its kernel 548 -> 2,368 B and the out-of-line box helper's 712 B)."""


def _predicated_tile(channels: int, pixels: int) -> tuple[int, ...]:
    """A tile for a layer of more than DEPTHWISE_TILES[-1] channels that no tile of DEPTHWISE_TILES divides (the
    default four may), over ``pixels`` output pixels, else (): the largest divisor of ``channels`` between
    DEPTHWISE_TILES[-1] and MAX_CHANNELS (30: two tiles of 15, the helper's last lane predicated off), else, over at
    least WHOLE_TILE_MIN_PIXELS pixels, ``channels`` itself: one tile of every channel, which the helpers take as
    whole vectors of MAX_CHANNELS and one predicated tail (38: 16 + 16 + 6). Such layers had kept the scalar loop
    nest (ds_cnn_w30_49x10 on cortex-m55: 379,406 instructions a 3x3 layer over 25x5x30; mobilenet_v1_030_80's
    3x3 layer over 20x20x38, 12.3 instructions a MAC, 2.3 as one tile). A layer of whole tiles of four only (76
    channels) had kept the default four-channel tiles: the DSP cores' window helpers (their clipped windows' out-of-line
    box helper, 648 B) and scalar epilogues in every such kernel, where one tile of every channel calls the fused
    tiles and their border copy the bundle holds for its other layers (mobilenet_v1_030_80 on cortex-m55, its 10x10
    and 5x5 layers of 76 channels: code 14,128 -> 12,196 B, 6,579,144 -> 6,494,817 instructions)."""
    if channels <= DEPTHWISE_TILES[-1] or any(channels % tile == 0 for tile in DEPTHWISE_TILES):
        return ()
    divisor = next((tile for tile in range(MAX_CHANNELS, DEPTHWISE_TILES[-1] - 1, -1) if channels % tile == 0), None)
    if divisor is not None:
        return (divisor,)
    return (channels,) if pixels >= WHOLE_TILE_MIN_PIXELS else ()


def helium_replacement(realize: s_tir.SBlockRealize, loops: list,
                       outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The 16-channel depthwise helper's call block (its out-of-line copy if ``outlined_depthwise``) or the
    padding products' for what the For nodes ``loops`` around ``realize`` compute, else the DSP cores' helpers'
    (``mac_helper_replacement``, whose bodies a Helium bundle defines with MVE); None where none fits."""
    return (depthwise16_replacement(realize, loops, outlined_depthwise) or padding_replacement(realize, loops)
            or mac_helper_replacement(realize, loops, outlined_depthwise))


def _channels(loops: list) -> Optional[int]:
    """The channel count of ``loops`` (up to two window loops from 0, then the channel loop), else None. The
    helpers take any count (whole vectors of MAX_CHANNELS, then one predicated tail)."""
    if not 2 <= len(loops) <= 3 or not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm)
                                           and int(loop.min) == 0 for loop in loops):
        return None
    channels = int(loops[-1].extent)
    return channels if channels >= 1 else None


def depthwise16_replacement(realize: s_tir.SBlockRealize, loops: list,
                            outlined: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The call block of ``<prefix>_depthwise_mac_s8x16`` (``_box_s8x16`` if ``outlined``) computing what
    ``loops`` (one or two window loops, then a channel loop of 8 or more, the tiles this schedule makes)
    compute around ``realize``, or None where the loads do not fit it."""
    channels = _channels(loops)
    reduction = mac_reduction(realize.block)
    if channels is None or channels < DEPTHWISE_TILES[-1] or reduction is None:
        return None
    tile = window_tile_call(reduction, realize, loops, channels)
    if tile is None:
        return None
    sizes, call = tile
    return call(BOX_OP if outlined else MAC_OP, [*sizes, channels])


def _int8_load(expr, dtype: str = "int8") -> Optional[TensorLoad]:
    """The int8 (or ``dtype``) load of ``int32(load)``, else None."""
    if isinstance(expr, tirx.Cast) and str(expr.ty.dtype) == "int32" and isinstance(expr.value, TensorLoad) \
            and str(expr.value.source.dtype) == dtype:
        return expr.value
    return None


def _unguarded(expr, block: s_tir.SBlock):
    """``expr``, or the value of ``if_then_else(test, value, 0)`` whose test TVM's integer analysis proves over
    the block's iteration domains (a pool whose windows all lie inside the image: its padding test stays)."""
    if isinstance(expr, ir.Call) and isinstance(expr.op, ir.Op) and expr.op.name == "prim.if_then_else":
        analyzer = Analyzer()
        for iv in block.iter_vars:
            analyzer.bind(iv.var, iv.dom)
        if analyzer.can_prove(expr.args[0]):
            return expr.args[1]
    return expr


def _padded_weight(block: s_tir.SBlock, weight_dtype: str = "int8") -> Optional[tuple[tirx.BufferStore, TensorLoad, int]]:
    """(the store, the int8 load, the constant) of ``acc = acc + c * int32(w)`` (either order; w of ``weight_dtype``),
    or of ``acc = acc + int32(x)`` with the constant 1 (a window's sums: AVERAGE_POOL_2D's; a padding test that
    always holds let through, `_unguarded`), else None."""
    store = block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int32":
        return None
    value = store.value
    if not isinstance(value, tirx.Add) or not isinstance(value.a, TensorLoad) or not value.a.source.same_as(store.buffer):
        return None
    summed = _int8_load(_unguarded(value.b, block))
    if summed is not None:
        return store, summed, 1
    if not isinstance(value.b, tirx.Mul):
        return None
    for constant, weight in ((value.b.a, value.b.b), (value.b.b, value.b.a)):
        if isinstance(constant, tirx.Cast) and str(constant.ty.dtype) == "int32":
            constant = constant.value
        if isinstance(constant, tirx.IntImm) and _int8_load(weight, weight_dtype) is not None \
                and -2**31 <= int(constant.value) < 2**31:
            return store, _int8_load(weight, weight_dtype), int(constant.value)
    return None


def padding_replacement(realize: s_tir.SBlockRealize, loops: list, op: str = PAD_OP,
                        tile: Optional[int] = None, weight_dtype: str = "int8") -> Optional[s_tir.SBlockRealize]:
    """The call block of ``op`` (by default ``<prefix>_depthwise_pad_s8x16``; its arguments PAD_ACCESS') computing
    what ``loops`` (one or two window loops, then a channel loop of any count, or of exactly ``tile``
    where given) compute around ``realize``, a block adding a constant's products with int8 weights (or of
    ``weight_dtype``: a DSP core's widened depthwise weights) to its
    accumulators (a border pixel's padded taps) or, without ``tile``, int8 values themselves (a window's sums:
    the products with the constant 1, one VMLA a tap as a VADD would be), or None where it does not fit."""
    channels = _channels(loops)
    padded = _padded_weight(realize.block, weight_dtype)
    if channels is None or padded is None or (tile is not None and (
            channels != tile or not isinstance(padded[0].value.b, tirx.Mul))):
        return None
    store, weight, value = padded
    # The weights as both operands: the window's strides of the one load, checked as the helper reads them.
    # The weights as both operands: the window's strides of the one load, checked as the helper reads them.
    tile = window_tile_call(MacReduction(store, weight, weight), realize, loops, channels)
    if tile is None:
        return None
    (_, _, w_row, w_col, rows, cols), make_call = tile
    call = make_call(op, [])
    acc, _, w = call.block.body.value.args[:3]
    evaluate = tirx.Evaluate(tirx.call_intrin("int32", op, acc, w, w_row, w_col, rows, cols,
                                              tirx.const(value, "int32"), channels))
    block = s_tir.SBlock([], [call.block.reads[0], call.block.reads[2]], call.block.writes, "depthwise_pad", evaluate)
    return s_tir.SBlockRealize([], True, block)
