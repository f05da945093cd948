"""On Helium cores (and on DSP cores, with their own helpers: `DSP_CONV_TILES`), a loop over a MAC kernel's
channel tiles as one call of the fused channel-tiles helper.

After the Helium schedules have made each int8 CONV_2D / FULLY_CONNECTED tile's reduction a dual MAC call
(``dual_mac``) and its requantization an epilogue call (``requantize_epilogue``), one output pixel runs a loop
over its channel tiles whose iteration zeroes the tile's four accumulators, calls ``<prefix>_dual_mac_s8x4``
and then ``<prefix>_requantize_s8``. Per tile of a 1x1 convolution that bookkeeping (the accumulators' stores
and reloads, the calls' pointers, the epilogue's loads) costs about as much as the VMLADAVAs.
``conv_tiles_calls`` replaces each such loop by one call of ``<prefix>_conv_tiles_s8``
(``backends.cortex_m.helpers.helium_c``'s ``helium_conv_tiles.h.in``), which starts each tile's accumulators at
the biases in registers and requantizes them from there. A pixel pair's loop (the two-pixel dual MAC) keeps its
calls (see the template), and a window of one row (a 1x1 convolution, a fully connected layer) is not paired on
Helium (``pays_two_pixels``): its pixels run one by one through the fused helper, cheaper than the pair's calls
(kws_ref_model's 1x1 layers on cortex-m55: 209,103 instructions each before, 164,280 with the Helium dual MAC's
other changes of the same series).

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) each iteration is,
in this order: stores of zero into exactly the four accumulators the MAC call then writes, the MAC call, one
requantization (int32 or int16 biases) of those four channels reading them; the inputs do not move with the tile, the
weights move four channels, and the outputs, biases, multipliers and shifts four elements. The accumulators are
then written and read only inside one iteration, so leaving them out changes no output: the same integer sums
(acc + bias wraps either way), bit-exact.

On DSP cores (``DSP_CONV_TILES``) the same replacement takes the loops whose epilogue is the DSP one
(``requantize_small_c``'s, the "double_small" rounding): the call is ``<prefix>_conv_tiles_s8x4`` (``_b16``;
``backends.cortex_m.helpers.dual_mac_c``'s ``conv_tiles_s8x4.h.in``), each tile's four sums started at the
biases in locals, the dual MAC and the written-out epilogue inlined on them. A pixel pair's loop (the two-pixel
dual MAC) keeps its calls there too.

A DSP kernel whose output channels the int8 lowering padded to whole tiles (``tvm_ext.transform.int8.conv.
_padded_channels``: 7 channels computed as 8, the zero rows' sums never stored) requantizes each tile by a scalar loop
under the channel test ``tile * 4 + channel < channels``, which the epilogue helper does not take: the loop then kept
its dual MAC calls, the sums stored and reloaded, and the scalar requantization (the layer sweep's 1x1 convolution of
3 -> 7 channels, 11.9 instructions per MAC on cortex-m4f). Such a loop (``partial_tile_epilogue``) becomes one call of
``<prefix>_conv_tiles_part_s8x4`` (``_b16``; ``conv_tiles_part_s8x4.h.in``): the whole tiles as the fused helper's,
then a last tile of fewer channels in registers, only its channels stored, where its calls save what its inlined
code costs at the one price of code (``partial_tiles_pay``: some 600 pixels of two tiles; a smaller layer keeps its
loop). Measured on cortex-m4f, a 24x28x3 -> 7 1x1 convolution 179,667 -> 136,661 instructions (12.7 -> 9.7 per MAC;
the rest is mostly the epilogue's 11 to 12 instructions per output over 3 MACs an output) for 136 B more code; the
layer sweep's 12x12x3 -> 7 one would save 6,527 for about 150 B, and keeps its loop.
``pair_tiles`` does the same for a pixel pair's loop.

RV32 cores take the same loops (``ConvTileHelpers``: ``backends.riscv.schedules.mac.RISCV_CONV_TILES``) of their
one-pixel paired MAC over eight channels, its accumulators zeroed by one store each: ``<prefix>_conv_tiles_s8x8``
(backends/riscv/helpers/templates/pair_tiles_s8x8.h.in). The zeroed accumulators are checked as the set of offsets
the stores write, whichever loops they sit in.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad
from tvm.sym import Analyzer

from backends.bias_forms import by_bias
from backends.cortex_m.helpers import CONV_TILES_PART_HELPERS
from backends.cortex_m.helpers.dual_mac_c import conv_tiles_helper_name as dsp_conv_tiles_helper_name
from backends.cortex_m.helpers.dual_mac_c import conv_tiles_part_helper_name
from backends.cortex_m.helpers.helium_c import (choose_helper_name, conv_tiles_helper_name,
                                                 shared_conv_tiles_helper_name)
from backends.cortex_m.schedules import pixel_pairs
from backends.cortex_m.schedules.common_tails import TailChoice
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_OP, _whole, register_mac_helper
from backends.cortex_m.schedules.requantize_epilogue import (DSP_UNTABLED_EPILOGUE, HELIUM_EPILOGUE, LUT_ENTRIES,
                                                              REQUANTIZE_S8_LUT_OPS, REQUANTIZE_S8_OPS,
                                                              REQUANTIZE_SMALL_OPS, EpilogueHelper,
                                                              requantize_epilogue, requantize_epilogue_call,
                                                              stored_channels)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess, register_address_choice
from tvm_ext.tir.helper_calls import register_helper_call
from backends.code_price import INSTRUCTIONS_PER_BYTE
from tvm_ext.tir.tir_walk import children, map_leaves, vars_read, with_root_loops_replaced

TILE = 4
"""Output channels per tile: the dual MAC's."""
CONV_TILES_OPS = by_bias("tvm_ext.conv_tiles_s8")
"""The fused helper's op per bias type (the epilogue's, ``requantize_epilogue.REQUANTIZE_S8_OPS``)."""
# conv_tiles_s8(out, x, w, bias, multiplier, shift, zero_point, x_row_stride, w_channel_stride, rows, row_len,
# channels): out and the epilogue's constants `channels` elements; x rows runs of row_len, x_row_stride apart;
# w `channels` runs of rows * row_len, w_channel_stride apart.
CONV_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(11), 1),)),
    PointerAccess(1, (Axis(Arg(9), Arg(7)), Axis(Arg(10), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(8)), Axis(Arg(9), Arg(10)), Axis(Arg(10), 1))),
    *(PointerAccess(pointer, (Axis(Arg(11), 1),)) for pointer in (3, 4, 5)),
))


def with_tile_overread(access: HelperAccess, pointer: int, channel_stride: int) -> HelperAccess:
    """``access`` with its weights' pointer (argument number ``pointer``) reaching on over the rows of one more
    channel tile: an axis of TILE steps of argument ``channel_stride`` (the weights' channel stride, elements) more,
    for a helper of a last tile of fewer channels that reads its weights' rows up to the next whole tile."""
    return HelperAccess(tuple(
        PointerAccess(pointer, (*reach.axes, Axis(TILE, Arg(channel_stride)))) if reach.argument == pointer else reach
        for reach in access.pointers))


DSP_CONV_TILES_OPS = by_bias("tvm_ext.conv_tiles_s8x4")
"""The DSP cores' fused helper per bias type: the same call as CONV_TILES_OPS' (channels a multiple of 4)."""
for _ops, _name in ((CONV_TILES_OPS, conv_tiles_helper_name), (DSP_CONV_TILES_OPS, dsp_conv_tiles_helper_name)):
    for _bias, _op in _ops.items():
        register_mac_helper(_op, functools.partial(_name, bias=_bias), CONV_TILES_ACCESS)
DSP_CONV_TILES_PART_OPS = by_bias("tvm_ext.conv_tiles_part_s8x4")
"""The DSP cores' fused helper of a channel count that is not a multiple of 4 per bias type (the same call as
DSP_CONV_TILES_OPS', its last tile of fewer channels: ``partial_tile_epilogue``); the weights' rows read up to the
next whole tile (the lowering's zero channels), three rows past ``channels`` at most."""
for _bias, _op in DSP_CONV_TILES_PART_OPS.items():
    register_helper_call(_op, CONV_TILES_PART_HELPERS, functools.partial(conv_tiles_part_helper_name, bias=_bias),
                         with_tile_overread(CONV_TILES_ACCESS, 2, 8))
SHARED_CONV_TILES_OPS = by_bias("tvm_ext.conv_tiles_shared_s8")
"""The fused helper's one out-of-line copy per bundle, per bias type: the same call as CONV_TILES_OPS'."""
for _bias, _op in SHARED_CONV_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(shared_conv_tiles_helper_name, bias=_bias), CONV_TILES_ACCESS)
CONV_TILES_LUT_OPS = by_bias("tvm_ext.conv_tiles_lut_s8")
"""The fused helper's op per bias type with a lookup table after the vector epilogue (the table epilogue's,
``REQUANTIZE_S8_LUT_OPS``: a LEAKY_RELU convolution's): CONV_TILES_OPS' call, then the table."""
SHARED_CONV_TILES_LUT_OPS = by_bias("tvm_ext.conv_tiles_shared_lut_s8")
"""CONV_TILES_LUT_OPS' one out-of-line copy per bundle, per bias type."""
# conv_tiles_lut_s8(..., channels, table): CONV_TILES_ACCESS's elements and the table's LUT_ENTRIES.
CONV_TILES_LUT_ACCESS = HelperAccess((*CONV_TILES_ACCESS.pointers, PointerAccess(12, (Axis(LUT_ENTRIES, 1),))))
GENERIC_CONV_TILES_LUT_OPS = by_bias("tvm_ext.conv_tiles_generic_lut_s8")
"""CONV_TILES_LUT_OPS' one out-of-line copy per bundle, per bias type, kept from gcc's interprocedural passes: the
copy of the kernels whose windows of several rows call it (``shared_conv_tiles.generic_conv_tiles``)."""
for _ops, _name in ((CONV_TILES_LUT_OPS, conv_tiles_helper_name),
                    (SHARED_CONV_TILES_LUT_OPS, shared_conv_tiles_helper_name),
                    (GENERIC_CONV_TILES_LUT_OPS, functools.partial(shared_conv_tiles_helper_name, copy="generic"))):
    for _bias, _op in _ops.items():
        register_mac_helper(_op, functools.partial(_name, bias=_bias, table=True), CONV_TILES_LUT_ACCESS)
TABLE_FORM = "+table"
"""The suffix of a bias type's key for its form with a lookup table (``with_tables``)."""


def with_tables(ops: dict[str, str], table_ops: dict[str, str]) -> dict[str, str]:
    """``ops`` (an op per bias type) and their forms with a lookup table after the requantization (``table_ops``, per
    bias type), the latter keyed by the bias type plus TABLE_FORM: the keys a core's helpers match forms by."""
    return {**ops, **{bias + TABLE_FORM: op for bias, op in table_ops.items()}}


HELIUM_TILES_OPS = with_tables(CONV_TILES_OPS, CONV_TILES_LUT_OPS)
"""Helium's fused tiles, inlined, per form (bias type, with or without a table)."""
HELIUM_SHARED_TILES_OPS = with_tables(SHARED_CONV_TILES_OPS, SHARED_CONV_TILES_LUT_OPS)
"""Their one out-of-line copy per bundle and form."""
HELIUM_GENERIC_TILES_OPS = with_tables(SHARED_CONV_TILES_OPS, GENERIC_CONV_TILES_LUT_OPS)
"""The out-of-line copies of the kernels whose table forms call the generic copy."""
CHOOSE_OP = "tvm_ext.choose_address"
"""``choose_address(inside, a, b)``: the address a where inside holds, else b (``<PREFIX>_CHOOSE``), the input of a
fused call shared by an interior pixel and a border pixel's copied window (`common_tails`)."""
register_mac_helper(CHOOSE_OP, choose_helper_name)
register_address_choice(CHOOSE_OP)
_X, _X_ROW_STRIDE, _ROWS, _ROW_LEN, _CHANNELS = 1, 7, 9, 10, 11
"""The positions of the fused call's input address, window sizes and channels among its arguments
(CONV_TILES_ACCESS)."""


@dataclass(frozen=True)
class TileWindow:
    """What a one-pixel MAC call sums: its accumulators', inputs' and weights' addresses (call arguments), the
    window's sizes in elements (constants) and how far the weights' element offset moves per channel tile."""

    acc: object
    x: object
    w: object
    x_row_stride: int
    rows: int
    row_len: int
    w_tile_step: int


def _dual_mac_window(mac: tvm.ir.Call) -> Optional[TileWindow]:
    """The window of a dual MAC call (acc, x, w, x_row_stride, w_channel_stride, rows, row_len) of constant
    sizes, else None."""
    sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[3:]]
    if None in sizes:
        return None
    x_row_stride, w_channel_stride, rows, row_len = sizes
    return TileWindow(*mac.args[:3], x_row_stride, rows, row_len, TILE * w_channel_stride)


def _dual_mac_window_args(window: TileWindow, tiles: int) -> list:
    """The fused dual MAC helpers' sizes: x_row_stride, w_channel_stride, rows, row_len, channels."""
    return [window.x_row_stride, window.w_tile_step // TILE, window.rows, window.row_len, tiles * TILE]


@dataclass(frozen=True)
class ConvTileHelpers:
    """A core's helpers of a convolution's channel-tile loop: the epilogue's op per bias type (``requantize``)
    and the fused helper's (``tiles``); the MAC ops whose calls it takes (``mac_ops``) and their reading
    (``window``), the channels per tile (``tile``) and the fused call's arguments after the epilogue's
    (``window_args``: the window, the tile loop's extent). By default the dual MAC's (Helium, DSP)."""

    requantize: dict[str, str]
    tiles: dict[str, str]
    mac_ops: tuple[str, ...] = (DUAL_MAC_OP,)
    window: Callable[[tvm.ir.Call], Optional[TileWindow]] = _dual_mac_window
    tile: int = TILE
    window_args: Callable[[TileWindow, int], list] = _dual_mac_window_args
    partial: Optional[tuple[EpilogueHelper, dict[str, str]]] = None
    """The epilogue whose loop under a channel test (``partial_tile_epilogue``: output channels padded to whole
    tiles) the core's helper of a last tile of fewer channels computes, and that helper's op per bias type; None:
    such a loop keeps its tiles."""
    partial_overlaps: bool = False
    """Whether ``partial``'s helper is the fused tiles' own, whose last tile is the last four channels overlapping
    the tile before (Helium's): it takes a loop of at least a tile's channels, unpriced, as it is smaller than the
    loop it replaces (the dual MAC's calls, the scalar epilogue under its channel test); else the core's helper of a
    last tile of fewer channels (the DSP cores'), taken where its inlined code pays (``partial_tiles_pay``)."""


HELIUM_EPILOGUE_FORMS = with_tables(REQUANTIZE_S8_OPS, REQUANTIZE_S8_LUT_OPS)
"""The Helium vector epilogue's ops per form (bias type, with or without a table), whose tile loops the fused tiles
take."""
HELIUM_CONV_TILES = ConvTileHelpers(HELIUM_EPILOGUE_FORMS, HELIUM_TILES_OPS,
                                    partial=(HELIUM_EPILOGUE, HELIUM_TILES_OPS), partial_overlaps=True)
"""Helium's: the vector epilogue (a table after it where the layer has one), ``helium_conv_tiles.h.in``, inlined; a
channel count that is not a multiple of four (output channels the lowering padded to whole tiles, the last tile's
epilogue a scalar loop under the channel test) the same helper of that count, its last tile the last four channels
(resnet8_w15_40x24_int8 on cortex-m55: its 15-, 30- and 45-channel convolutions had kept the dual MAC's calls and a
scalar epilogue per tile)."""
HELIUM_SHARED_CONV_TILES = ConvTileHelpers(HELIUM_EPILOGUE_FORMS, HELIUM_SHARED_TILES_OPS,
                                           partial=(HELIUM_EPILOGUE, HELIUM_SHARED_TILES_OPS), partial_overlaps=True)
"""Helium's, calling the bundle's one out-of-line copy (its sizes read at run time): the kernels the bundle's choice
gives it (``shared_conv_tiles``)."""
HELIUM_GENERIC_CONV_TILES = ConvTileHelpers(HELIUM_EPILOGUE_FORMS, HELIUM_GENERIC_TILES_OPS,
                                            partial=(HELIUM_EPILOGUE, HELIUM_GENERIC_TILES_OPS), partial_overlaps=True)
"""Helium's, the table forms calling the bundle's generic copy (``shared_conv_tiles.generic_conv_tiles``)."""
DSP_CONV_TILES = ConvTileHelpers(REQUANTIZE_SMALL_OPS, DSP_CONV_TILES_OPS,
                                 partial=(DSP_UNTABLED_EPILOGUE, DSP_CONV_TILES_PART_OPS))
"""The DSP cores': the written-out epilogue (``requantize_small_c``), ``conv_tiles_s8x4.h.in``; a channel count that
is not a multiple of four ``conv_tiles_part_s8x4.h.in``."""

PART_SAVED_PER_TILE = 22
"""The instructions a call of the partial tiles saves per channel tile against the loop it replaces (the tiles' dual
MAC calls, the sums stored and reloaded, the scalar epilogue under its channel test), the least measured on
cortex-m4f (gcc 12.2 -O2): the layer sweep's 12x12x3 -> 7 1x1 convolution 45 a pixel of two tiles (35,897 -> 29,370
instructions), its 6x6x5 -> 7 one 52, its 8x8x16 -> 5 3x3 stride-2 one 64."""
PART_CODE_BYTES = 280
"""The code a kernel's call of the partial tiles adds (the helper inlined there, the loop's code gone), bytes: about
the most measured likewise (rounded down), the sweep's 6x6x5 -> 7 1x1 kernel 344 -> 626 B (+282), its 3x3 stride-2
one 974 -> 1,224 B (+250), the 12x12x3 -> 7 1x1 one +150 B with the dual MAC's out-of-line copy."""


ONE_ROW_SCALAR_PER_MAC = 5.0
"""The instructions per MAC of an int8 MAC layer of one output row (a CONV_2D of one output pixel, a one-row
FULLY_CONNECTED) on its scalar loop nest (channels not padded), the least measured on cortex-m4f (gcc 12.2 -O2):
mobilenet_v3s_min_050_80's 1x1 1024 -> 10 head 5.02 (51,413 instructions), person_detect's 1x1 256 -> 2 one 5.12, a
FULLY_CONNECTED 2048 -> 2 5.01."""
ONE_ROW_PADDED_PER_MAC = 1.65
"""The instructions per MAC of such a layer with its channels padded to whole tiles (the dual MAC or the stacked MAC,
and the tiles' epilogue), counted over the padded channels' MACs (the zero rows' too), about the most measured
likewise: mobilenet_v3s_min_050_80's head 1.58 (12 channels), person_detect's 1.64 (4 channels); a FULLY_CONNECTED
2048 -> 2 1.15 (4 channels, the stacked MAC)."""
ONE_ROW_CODE_BYTES = 176
"""The code a padded layer of one output row adds against its scalar loop, bytes: the most measured likewise
(mobilenet_v3s_min_050_80's head +176 B, person_detect's +128 B; FULLY_CONNECTED 2048 -> 1, 2, 3 +252 B for the
three with the stacked MAC's out-of-line chunk)."""


def one_row_padding_pays(row_len: int, channels: int, padded: int, calls: int) -> bool:
    """Whether an int8 MAC layer of one output row (a CONV_2D of one output pixel, a FULLY_CONNECTED of fewer channels
    than a tile), ``channels`` outputs of ``row_len`` MACs each (a window's taps times input channels, a row's
    inputs), pays for its channels padded to ``padded`` (whole tiles: the core's MAC helper instead of the scalar
    loop nest) at the schedules' one price of code, its kernel called ``calls`` times per inference (the layers of
    its shape that share it): the instructions saved per inference (ONE_ROW_SCALAR_PER_MAC over the layer's MACs
    against ONE_ROW_PADDED_PER_MAC over the padded ones, per call) at least ONE_ROW_CODE_BYTES times
    ``code_price.INSTRUCTIONS_PER_BYTE`` (a classifier head of 10 channels over 1024 inputs pays, and 2 over 8192;
    person_detect's 2 over 256 does not, nor hello_world's 1 over 16; an unrolled GRU's 29 steps of 69 gates over
    10 inputs do, one alone does not)."""
    saved = row_len * (ONE_ROW_SCALAR_PER_MAC * channels - ONE_ROW_PADDED_PER_MAC * padded)
    return calls * saved >= ONE_ROW_CODE_BYTES * INSTRUCTIONS_PER_BYTE


def executions(loops: tuple) -> int:
    """The executions of a statement inside ``loops`` per call of its function: the product of their constant
    extents (a loop of another extent counts once)."""
    count = 1
    for loop in loops:
        count *= int(loop.extent) if isinstance(loop.extent, tirx.IntImm) else 1
    return count


def op_executions(stmt, ops: set[str], times: int = 1):
    """(call, executions per call of the function) of each call of ``ops`` under ``stmt``: the product of the
    constant extents of the loops around it (a loop of another extent counts once)."""
    if isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm):
        times *= int(stmt.extent)
    if isinstance(stmt, tvm.ir.Call) and isinstance(stmt.op, tvm.ir.Op) and stmt.op.name in ops:
        yield stmt, times
        return
    for child in children(stmt):
        yield from op_executions(child, ops, times)


def partial_tiles_pay(calls: int, tiles: int) -> bool:
    """Whether ``calls`` calls of the partial tiles over ``tiles`` channel tiles (per kernel call) save what their
    inlined code costs at the schedules' one price of code (PART_SAVED_PER_TILE, PART_CODE_BYTES,
    ``code_price.INSTRUCTIONS_PER_BYTE``)."""
    return calls * tiles * PART_SAVED_PER_TILE >= PART_CODE_BYTES * INSTRUCTIONS_PER_BYTE


def pays_two_pixels(sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> bool:
    """Helium's choice of two pixels per call (``pixel_pairs.pays_two_pixels``), but not for a window of one
    row (every reduction loop but the innermost of one iteration: a 1x1 convolution, a fully connected layer)
    whose one consumer is a per-channel requantization the fused helper computes: its pixels run one by one
    through that helper for fewer instructions than the pair's calls (a per-tensor one, which the helper does
    not take, keeps the pairs: vit_tiny's layers measured 3 % slower unpaired)."""
    one_row = all(isinstance(sch.get(loop).extent, tirx.IntImm) and int(sch.get(loop).extent) == 1
                  for loop in loops[first_reduce:-2])
    consumers = sch.get_consumers(block)
    if one_row and len(consumers) == 1 and requantize_epilogue(sch.get(consumers[0]).body) is not None:
        return False
    return pixel_pairs.pays_two_pixels(sch, block, loops, first_reduce)


def call_of(stmt: tirx.Stmt, ops: tuple[str, ...]) -> Optional[tvm.ir.Call]:
    """The call of one of ``ops`` that ``stmt`` (a block of one call, always run) evaluates, else None."""
    if not isinstance(stmt, s_tir.SBlockRealize) or not _always(stmt.predicate):
        return None
    body = stmt.block.body
    if not isinstance(body, tirx.Evaluate) or not isinstance(body.value, tvm.ir.Call):
        return None
    op = body.value.op
    return body.value if isinstance(op, tvm.ir.Op) and op.name in ops else None


def _always(predicate) -> bool:
    return isinstance(predicate, tirx.IntImm) and bool(predicate)


def pointee(arg) -> Optional[TensorLoad]:
    """The element ``address_of(buffer[indices])`` points at, else None."""
    if isinstance(arg, tvm.ir.Call) and isinstance(arg.op, tvm.ir.Op) and arg.op.name == "tirx.address_of" \
            and isinstance(arg.args[0], TensorLoad):
        return arg.args[0]
    return None


def flat_offset(load: TensorLoad):
    """The element offset of ``load`` in its (compact, row-major) buffer, as an index expression."""
    offset = tirx.const(0, "int64")
    for index, extent in zip(load.indices, load.source.shape):
        offset = offset * tirx.Cast("int64", extent) + tirx.Cast("int64", index)
    return offset


def _integer_zero(value) -> bool:
    return isinstance(value, tirx.IntImm) and int(value) == 0


def zeroed_stores(stmt: tirx.Stmt, acc, is_zero: Callable[[object], bool] = _integer_zero
                  ) -> Optional[list[tuple[TensorLoad, tuple]]]:
    """The stores of zero (a value ``is_zero`` accepts: by default an integer 0) into ``acc`` (a buffer) ``stmt``
    consists of, each with the loops around it inside ``stmt``; None when it holds anything else."""
    if isinstance(stmt, tirx.BufferStore):
        zero = is_zero(stmt.value)
        return [(tirx.BufferLoad(stmt.buffer, list(stmt.indices)), ())] if zero and stmt.buffer.same_as(acc) else None
    if isinstance(stmt, tirx.SeqStmt):
        parts = [zeroed_stores(child, acc, is_zero) for child in stmt.seq]
        return None if any(part is None for part in parts) else [store for part in parts for store in part]
    if isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm) and isinstance(stmt.min, tirx.IntImm):
        inner = zeroed_stores(stmt.body, acc, is_zero)
        return None if inner is None else [(load, (stmt, *loops)) for load, loops in inner]
    if isinstance(stmt, s_tir.SBlockRealize) and _always(stmt.predicate) and not stmt.block.alloc_buffers:
        bindings = {iv.var: value for iv, value in zip(stmt.block.iter_vars, stmt.iter_values)}
        inner = zeroed_stores(stmt.block.body, acc, is_zero)
        return None if inner is None else [
            (tirx.BufferLoad(load.source, [map_leaves(i, lambda n: bindings.get(n, n)) for i in load.indices]), loops)
            for load, loops in inner]
    return None


@dataclass(frozen=True)
class _Iteration:
    """One tile loop's iteration: the MAC call, the requantization call, the zeroing stores."""

    mac: tvm.ir.Call
    requantization: tvm.ir.Call
    zeroed: list
    channels: Optional[int] = None
    """The channel test's bound of a partial tile's epilogue (``partial_tile_epilogue``), else None."""


def tile_loop_stmts(loop: tirx.For) -> Optional[list]:
    """The statements of ``loop``'s body (none unless a sequence) where ``loop`` counts a constant number of
    tiles from 0, else None."""
    if not isinstance(loop.extent, tirx.IntImm) or not isinstance(loop.min, tirx.IntImm) or int(loop.min) != 0:
        return None
    return list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else []


def sole_call(stmts: list, ops: tuple[str, ...]) -> Optional[tuple[int, tvm.ir.Call]]:
    """The index in ``stmts`` and the call of the one statement that calls one of ``ops`` (``call_of``), else None
    (no such statement, or several)."""
    found = [(i, call) for i, call in enumerate(call_of(stmt, ops) for stmt in stmts) if call is not None]
    return found[0] if len(found) == 1 else None


def _iteration(stmts: list, requantize_ops: tuple[str, ...], mac_ops: tuple[str, ...] = (DUAL_MAC_OP,),
               partial: Optional[Callable[[tirx.Stmt], Optional[tuple[tvm.ir.Call, int]]]] = None
               ) -> Optional[_Iteration]:
    """The parts of a tile loop's statements ``stmts`` when they have the module docstring's order (its MAC one of
    ``mac_ops``, its epilogue one of ``requantize_ops``, or with ``partial`` the epilogue call and channel bound it
    reads from a loop under a channel test), else None."""
    found = sole_call(stmts, mac_ops)
    if found is None:
        return None
    at, mac = found
    acc = pointee(mac.args[0])
    if acc is None or len(stmts) != at + 2:
        return None
    requantization, channels = call_of(stmts[at + 1], requantize_ops), None
    if requantization is None and partial is not None and (tail := partial(stmts[at + 1])) is not None:
        requantization, channels = tail
    if requantization is None:
        return None
    zeroed = [zeroed_stores(stmt, acc.source) for stmt in stmts[:at]]
    if any(part is None for part in zeroed):
        return None
    return _Iteration(mac, requantization, [store for part in zeroed for store in part], channels)


def partial_tile_epilogue(stmt: tirx.Stmt, tile, tile_channels: int, epilogue: EpilogueHelper
                          ) -> Optional[tuple[tvm.ir.Call, int]]:
    """(``epilogue``'s call of a whole tile, the channel bound) of ``stmt`` when it is a loop over a tile's
    ``tile_channels`` channels whose one requantization runs under the test ``tile * tile_channels + channel <
    bound`` (``tile``: the tile loop's variable): the epilogue of a convolution whose output channels the lowering
    padded to whole tiles (``tvm_ext.transform.int8.conv._padded_channels``), which stores the channels below the
    bound only; else None."""
    if not isinstance(stmt, tirx.For) or not isinstance(stmt.body, s_tir.SBlockRealize):
        return None
    realize = stmt.body
    test = realize.predicate
    if not isinstance(test, tirx.LT) or not isinstance(test.b, tirx.IntImm):
        return None
    dtype = str(stmt.loop_var.ty.dtype)
    channel = tile * tirx.const(tile_channels, dtype) + stmt.loop_var
    if LoopOffsets(()).constant(test.a - channel) != 0:
        return None
    whole = tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                     s_tir.SBlockRealize(realize.iter_values, tirx.const(True, "bool"), realize.block))
    call = requantize_epilogue_call(whole, epilogue)
    if call is None:
        return None
    return call.block.body.value, int(test.b)


class LoopOffsets:
    """Element offsets of loads inside ``loops`` (For nodes, outermost first), by TVM's integer analysis over the
    loops' ranges: what the fused tiles' schedules prove of a loop over channel tiles."""

    def __init__(self, loops: tuple) -> None:
        self.analyzer = Analyzer()
        for loop in loops:
            self.analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    def constant(self, expr) -> Optional[int]:
        """``expr``'s value where the analysis proves it one constant, else None."""
        value = self.analyzer.simplify(expr)
        return int(value.value) if isinstance(value, tirx.IntImm) else None

    def step(self, load: TensorLoad, var) -> Optional[int]:
        """How far ``load`` moves per step of ``var`` (elements), or None where that is not one constant."""
        following = map_leaves(flat_offset(load), lambda n: n + 1 if n.same_as(var) else n)
        return self.constant(following - flat_offset(load))

    def zeroed_offsets(self, zeroed: list, acc: TensorLoad) -> list[Optional[int]]:
        """The offset from ``acc`` (elements) of each element the zeroing stores ``zeroed`` (``zeroed_stores``'
        entries: a store and the constant loops around it) write, one per store and iteration of its loops; None
        for one the analysis does not prove a constant, or of another buffer than ``acc``'s."""
        found: list[Optional[int]] = []
        for store, loops in zeroed:
            ranges = (range(int(inner.min), int(inner.min) + int(inner.extent)) for inner in loops)
            for values in itertools.product(*ranges):
                offset = flat_offset(store)
                for inner, value in zip(loops, values):
                    offset = at_loop_value(offset, inner.loop_var, value)
                found.append(self.constant(offset - flat_offset(acc)) if store.source.same_as(acc.source) else None)
        return found

    def zeroes_exactly(self, zeroed: list, acc: TensorLoad, lanes: Iterable[int]) -> bool:
        """Whether the zeroing stores ``zeroed`` (``zeroed_stores``' entries) write exactly the accumulators at the
        offsets ``lanes`` (elements) from ``acc``, each once: several pointers' lanes where ``lanes`` holds
        several runs (a pixel pair's two tiles)."""
        found = self.zeroed_offsets(zeroed, acc)
        return None not in found and sorted(found) == sorted(lanes)

    def zeroes_and_reads(self, zeroed: list, acc: TensorLoad, read: TensorLoad, lanes_count: int) -> bool:
        """Whether the zeroing stores ``zeroed`` (``zeroed_stores``' entries) write exactly the ``lanes_count``
        accumulators from ``acc`` (``zeroes_exactly``) and the epilogue reads them from ``read``: the same
        element as ``acc``."""
        return self.zeroes_exactly(zeroed, acc, range(lanes_count)) and read.source.same_as(acc.source) \
            and self.constant(flat_offset(read) - flat_offset(acc)) == 0

    def lane_offsets(self, load: TensorLoad, loop: tirx.For) -> list[Optional[int]]:
        """The offsets (elements) of ``load`` from its value at ``loop``'s first lane, lane by lane (None: not a
        constant)."""
        first = at_loop_value(flat_offset(load), loop.loop_var, 0)
        return [self.constant(at_loop_value(flat_offset(load), loop.loop_var, lane) - first)
                for lane in range(int(loop.extent))]

    def moves_tiles(self, tile, x: TensorLoad, w: TensorLoad, w_tile_step: int, per_tile: tuple,
                    channels: int = TILE) -> bool:
        """Whether, per step of the tile loop's variable ``tile``, the inputs ``x`` stay, the weights ``w`` move
        ``w_tile_step`` elements (one tile's) and each load of ``per_tile`` (the outputs, the epilogue's constants)
        moves ``channels`` elements (a tile's channels)."""
        return self.step(x, tile) == 0 and self.step(w, tile) == w_tile_step \
            and all(self.step(load, tile) == channels for load in per_tile)


def at_loop_value(expr, var, value: int):
    """``expr`` with the loop variable ``var`` at ``value``."""
    return map_leaves(expr, lambda n: tirx.const(value, str(var.ty.dtype)) if n.same_as(var) else n)


def at_first_tile(arg, tile):
    """``arg`` (an address expression) with the tile loop's variable ``tile`` at 0."""
    return at_loop_value(arg, tile, 0)


def conv_tiles_call(loop: tirx.For, enclosing: tuple, helpers: ConvTileHelpers = HELIUM_CONV_TILES) \
        -> Optional[s_tir.SBlockRealize]:
    """The fused helper's call block computing what ``loop`` (inside the loops ``enclosing``) computes, or
    None where it is not a loop over channel tiles of the module docstring's form. ``helpers``: the core's
    (HELIUM_CONV_TILES, DSP_CONV_TILES)."""
    stmts = tile_loop_stmts(loop)
    partial = None if helpers.partial is None else functools.partial(
        partial_tile_epilogue, tile=loop.loop_var, tile_channels=helpers.tile, epilogue=helpers.partial[0])
    iteration = _iteration(stmts, tuple(helpers.requantize.values()), helpers.mac_ops, partial) \
        if stmts is not None else None
    if iteration is None:
        return None
    mac, requantization = iteration.mac, iteration.requantization
    offsets = LoopOffsets((*enclosing, loop))
    tile = loop.loop_var

    window = helpers.window(mac)
    if window is None:
        return None
    acc, x, w = (pointee(arg) for arg in (window.acc, window.x, window.w))
    out, read, *epilogue = (pointee(arg) for arg in requantization.args[:5])
    if None in (acc, x, w, out, read, *epilogue) or stored_channels(requantization) != helpers.tile:
        return None
    # the zeroed accumulators are exactly the MAC's tile, which the epilogue reads; everything but the inputs moves
    # one tile
    if not offsets.zeroes_and_reads(iteration.zeroed, acc, read, helpers.tile):
        return None
    if not offsets.moves_tiles(tile, x, w, window.w_tile_step, (out, *epilogue), helpers.tile):
        return None

    def address(arg):
        return at_first_tile(arg, tile)

    channels = int(loop.extent) * helpers.tile
    tiles = helpers.tiles
    if iteration.channels is not None:  # a last tile of fewer channels: the channel test's bound
        least = max(channels - helpers.tile, helpers.tile - 1) if helpers.partial_overlaps else channels - helpers.tile
        if not least < iteration.channels < channels or (
                not helpers.partial_overlaps and not partial_tiles_pay(executions(enclosing), int(loop.extent))):
            return None
        channels, tiles = iteration.channels, helpers.partial[1]
    start = address(requantization.args[0])
    args = [start, address(window.x), address(window.w), *(address(arg) for arg in requantization.args[2:5]),
            requantization.args[5], *helpers.window_args(window, int(loop.extent))]
    if iteration.channels is not None:
        args[-1] = channels  # the window arguments' last: the channels
    # an epilogue's lookup table (its arguments after the count: a LEAKY_RELU layer's) the same in every tile, last
    table_args = list(requantization.args[7:])
    tables = [pointee(arg) for arg in table_args]
    if None in tables or any(var.same_as(tile) for arg in table_args for var in vars_read(arg)):
        return None
    bias_type = next(bias for bias, op in helpers.requantize.items() if op == requantization.op.name)
    call = tirx.call_intrin("int32", tiles[bias_type], *args, *table_args)
    reads = [_whole(load.source) for load in (x, w, *epilogue, *tables)]
    block = s_tir.SBlock([], reads, [_region(pointee(start), channels)], "conv_tiles", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def _region(start: TensorLoad, count: int) -> tirx.BufferRegion:
    """``count`` elements along the last axis of ``start``'s buffer from ``start``."""
    ranges = [tvm.ir.Range.from_min_extent(i, 1) for i in start.indices[:-1]]
    return tirx.BufferRegion(start.source, [*ranges, tvm.ir.Range.from_min_extent(start.indices[-1], count)])


def conv_tiles_calls(func: tirx.PrimFunc, helpers: ConvTileHelpers = HELIUM_CONV_TILES) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each loop over channel tiles of the module
    docstring's form replaced by its fused call (``helpers``: the core's, by default Helium's); any other function
    unchanged."""
    return with_root_loops_replaced(
        func, lambda loop, enclosing: conv_tiles_call(loop, enclosing, helpers), enclosing=True)


def _window_sizes(call: tvm.ir.Call) -> Optional[tuple[int, int, int]]:
    """The input row stride, rows and row length of a fused call (constants), else None."""
    sizes = [call.args[i] for i in (_X_ROW_STRIDE, _ROWS, _ROW_LEN)]
    return tuple(int(size) for size in sizes) if all(isinstance(s, tirx.IntImm) for s in sizes) else None


def _split_like(call: tvm.ir.Call, other: tvm.ir.Call) -> Optional[tvm.ir.Call]:
    """``call`` (a fused call) with its window in ``other``'s rows where its inputs are one run (one row, or rows
    their length apart) of as many elements as ``other``'s window: the same elements, read in the same order
    (the weights of a channel are one run either way), so the same sums; ``call`` itself where the rows already
    agree; None otherwise."""
    mine, theirs = _window_sizes(call), _window_sizes(other)
    if mine is None or theirs is None:
        return None
    (stride, rows, row_len), (_, other_rows, other_len) = mine, theirs
    if (rows, row_len) == (other_rows, other_len):
        return call
    if (rows > 1 and stride != row_len) or rows * row_len != other_rows * other_len:
        return None
    args = list(call.args)
    args[_X_ROW_STRIDE], args[_ROWS], args[_ROW_LEN] = (tirx.const(value, "int32")
                                                          for value in (other_len, other_rows, other_len))
    return tvm.ir.Call(call.op, args, call.attrs, ret_ty=call.ty)


def _aligned(a: tvm.ir.Call, b: tvm.ir.Call) -> Optional[tuple[tvm.ir.Call, tvm.ir.Call]]:
    """Two fused calls with their windows in the same rows (`_split_like`: the copied window's in the other's, where
    one is a copy), else None."""
    if (b_split := _split_like(b, a)) is not None and not b_split.same_as(b):
        return a, b_split
    if (a_split := _split_like(a, b)) is not None:
        return a_split, b
    return None


HELIUM_TAIL_CHOICES = {op: TailChoice(CHOOSE_OP, frozenset({_X}), frozenset({_X_ROW_STRIDE}), _aligned,
                                      SHARED_CONV_TILES_OPS[bias])
                       for ops in (CONV_TILES_OPS, SHARED_CONV_TILES_OPS) for bias, op in ops.items()}
"""The Helium schedules' `common_tails` choices: how a test's two fused calls (an interior pixel's on its inputs in
place, a border pixel's on its copied window) become one after the test: only the input's address and row stride
may differ, once the copied window is split into the other's rows; the call is then the bundle's one out-of-line
copy (its stride read at run time either way), as it is where the kernel calls that copy anyway
(HELIUM_SHARED_CONV_TILES). The table forms keep their two calls, each inlined with its constant sizes: merged,
yolo_tiny_80_int8's 3x3 LEAKY_RELU kernels on cortex-m55 (five windows) ran 2,475,000 instructions more calling the
one copy (generic over their windows) for 2,976 B less code, and 1,273,000 more inlined with the row stride a
Select (gcc spills the dual MAC's pointers around its even-register accumulators) for 1,300 B less."""
