"""A border pixel's padded window copied once, then multiplied by one dual-MAC call per channel tile (and
an interior pixel's window where its rows are short).

At the padded border of an int8 convolution (``tvm_ext.schedule.border_split``) each tap is asked whether it lies
inside the image; where it does, its ``Cin`` channels go through the dual MAC (``backends.cortex_m.schedules.dual_mac``) on
their own: one helper call per tap and channel tile, and with one input channel (kws's first convolution) a
call per single multiply-accumulate. Here a border pixel instead copies its window once, before its
channel-tile loop, into a small int8 buffer (``KH * KW * Cin`` bytes, row-major over the window loops):
the input where the tap is inside, the padding value (the guard's false value, the zero point) where it is
not; the test is asked once per tap, around the copy of its channels. Every channel tile then reads the
whole window as one contiguous run: one helper call, no test. An interior pixel whose window rows are
short (``KW * Cin`` < SHORT_ROW_BYTES: kws's 10x4 window on one channel, a 3x3 window on three) copies its
window the same way, without a test: one run instead of KH short ones per channel tile.

Two neighbouring pixels of a row, one of them or both on the border (``paired_windows``, used by
``tvm_ext.schedule.border_split`` where the rows are not short), copy their windows the same way, one after the
other into one buffer, and take the interior pairs' two-pixel call (``pixel_pairs``, ``pair_q15``): each weight
word is read and widened once for both pixels instead of once per pixel (yolo_tiny_80_int8 on cortex-m4f, whose
small images are mostly border: its 3x3 convolutions on 5x5 pixels 4.43M -> 3.83M instructions each).

Where the window is copied (short rows, ``copied_window_length``) and its length K = KH * KW * Cin leaves
PADDED_TAIL_MIN or more inputs after its groups of four (a 3x3 window on 3 channels: 27), the int8 lowering
gives each output channel's weights zeros up to the next multiple of four (``tvm_ext.transform.int8.conv``:
OHWI weights as [O, Kp]); the Kp - K zeros after the window are written once per call, before any pixel (no
copy writes there), and every channel tile's call reads Kp inputs: only groups of four, no scalar tail. The
window buffer's length is read from the weights' shape (``window_buffer``), so the schedule follows whatever
the lowering chose.

The window holds the same numbers the guarded load yields (both int8: an input value or the zero point),
and each channel's products are added in the same order (the padding adds products of zeros): bit-exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_GROUP
from backends.cortex_m.schedules.depthwise_mac import mac_helper_replacement
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_PIXELS, with_padded_window
from backends.cortex_m.schedules.pixel_pairs import paired_pixel_body
from backends.cortex_m.schedules.extern_helpers import nest_offset, copy_call
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.tir_walk import map_child_stmts, map_leaves, vars_read, walk, with_root_loops_replaced


@dataclass(frozen=True)
class WindowedBorder:
    """What a border pixel runs instead: ``copy`` (first, outside the channel-tile loop) fills ``window``;
    ``call`` (in place of the reduction loops, ``reduction``: the outermost of them) multiplies the window by
    one channel tile's weights. ``padding`` (None: none) writes the zeros after a padded window once, before
    any pixel: no copy writes there."""

    copy: s_tir.SBlockRealize
    call: s_tir.SBlockRealize
    reduction: tirx.For
    window: tirx.Buffer
    padding: Optional[tirx.Stmt] = None


WINDOW_COPY_BLOCK = "padded_window"
"""The name of the block that copies a window (`_window_copy`)."""


SHORT_ROW_BYTES = 16
"""An interior window row (``KW * Cin`` bytes) shorter than this is copied too (DSP cores): the helper's per-row start
costs more than copying a row, once per pixel, for every channel tile to read the window as one run."""

HELIUM_SHORT_ROW_BYTES = 32
"""SHORT_ROW_BYTES of Helium's pixel pairs (``pair_tiles.HELIUM_PAIR_TILES``: both windows copied), and the first
measure of the one-pixel windows' HELIUM_COPIED_ROW_BYTES: a row of under two vectors costs each channel tile a
predicated tail and a row's start, where the copy (each row one call of the ascending copy: `copied_runs`) leaves
the window one run with one tail. Measured on cortex-m55, a ResNet-18 at width 6 on 52x44x3: its 7x7 stride-2 stem on 3 channels (rows of 21 B)
731,700 -> 456,571 instructions, its 3x3 layers on 6 channels (18 B) 90,224 -> 44,594 each; the model 1,420,573 ->
915,407."""


HELIUM_COPIED_ROW_BYTES = 128
"""The row length (``KW * Cin`` bytes) under which a Helium core's one-pixel interior window is copied too (the border
split's ``has_short_rows``, and its weights padded to whole vectors: ``copied_window_length``): up to eight vectors a
row, each channel tile's per-row start and predicated tail (about 25 instructions a row a tile) cost more than the
copy (one call of the ascending copy a row, once per pixel). The pairs keep HELIUM_SHORT_ROW_BYTES
(``pair_tiles.HELIUM_PAIR_TILES``). Measured on cortex-m55, few-channel convolutions on 16x20 (per layer, before ->
after): 3x3 on 24 channels to 6 328,927 -> 195,812, to 24 537,219 -> 420,463; 3x3 on 12 to 6 169,269 -> 146,332;
5x5 on 24 to 6 823,014 -> 457,743; 5x5 on 9 to 6 437,497 -> 307,131."""


PADDED_TAIL_MIN = 2
"""The fewest inputs left after a copied window's groups of four (K % 4) for which padding the window to the next
multiple of four pays: the dual MAC's scalar loop costs about 12 instructions per input and channel tile after
about 7 to enter it, one more group of four about 24 (arm-none-eabi-gcc 12.2 -O2, the helper inlined with a
constant length). Measured on cortex-m4f: person_detect's 3x3 stem on one channel (9 inputs) padded to 12 ran
15,753,954 instructions against 15,728,661 unpadded."""


HELIUM_INT8_LANES = 16
"""The int8 lanes of a Helium vector: a copied window padded with zero weights to a multiple of these is read as
whole vectors, no VCTP-predicated last one (the same number of vectors: the padding adds no load or VMLADAVA).
Measured on cortex-m55: pretrainedResnet_quant's 3x3 stem on three channels (27 inputs, padded to 32) and the
model 3,911,808 -> 3,834,338 instructions; vww_96_int8 4,248,405 -> 4,187,598; person_detect (9 -> 16)
4,196,575 -> 4,171,276; kws_ref_model (10x4 on one channel, 40 -> 48) 1,440,358 -> 1,440,585."""


ROWS_WRITTEN_OUT = 4
"""The most rows of a window whose copy without a test (an interior pixel's) is written out row after row, not a
loop over its rows: a short row's copy is a few loads and stores, and the row loop's own instructions cost about
a third of it (efficientnet_lite_w030_112_int8's 3x3 stem on cortex-m4f, measured together with its padding's
zeros written once instead of per pixel: 66 K fewer instructions for 8 more bytes of code); a window of many
rows grows the code with every row written out, for no gain (kws_ref_model's 10x4 window: 64 more bytes of code
and 3.9 K more instructions than with its row loop)."""


def window_buffer(loops: list, first_reduction: int, realize: Optional[s_tir.SBlockRealize] = None) -> tirx.Buffer:
    """The int8 window a pixel whose reduction loops are ``loops[first_reduction:-1]`` copies (row-major); where
    each output channel's weights of the update block ``realize`` are longer (one 2-D [O, Kp] buffer: the padded
    weights of ``copied_window_length``), as long as they are: zeros follow the window (``windowed_border``)."""
    size = prod(int(loop.extent) for loop in loops[first_reduction:-1])
    return tirx.decl_buffer((max(size, _weight_length(realize)),), "int8", name="window")


def _weight_length(realize: Optional[s_tir.SBlockRealize]) -> int:
    """Each output channel's weight length of the update block ``realize``: the last extent of its one 2-D
    int8 operand besides the accumulators (0 where it has none or several)."""
    if realize is None or not isinstance(realize.block.body, tirx.BufferStore):
        return 0
    store = realize.block.body
    loads = [node for node in walk(store.value) if isinstance(node, tvm.ir.TensorLoad)
             and not node.source.same_as(store.buffer) and len(node.source.shape) == 2
             and str(node.source.dtype) == "int8"]
    return int(loads[0].source.shape[1]) if len(loads) == 1 else 0


def copied_window_length(kh: int, kw: int, cin: int, padded_input: bool, group: int = DUAL_MAC_GROUP,
                         tail_min: int = PADDED_TAIL_MIN, short_row_bytes: int = SHORT_ROW_BYTES) -> int:
    """The length (elements) of an int8 CONV_2D's per-channel weights (`KernelSchedules`'
    ``conv_weight_length``): the window KH * KW * Cin rounded up to a multiple of ``group`` where a padded
    convolution copies each pixel's window (rows shorter than ``short_row_bytes``, ``has_short_rows``: the border
    split's copied windows) and at least ``tail_min`` inputs are left after its groups; else the window itself.
    DSP cores: groups of four (DUAL_MAC_GROUP), PADDED_TAIL_MIN, SHORT_ROW_BYTES; Helium cores: HELIUM_INT8_LANES, any
    tail, HELIUM_COPIED_ROW_BYTES."""
    length = kh * kw * cin
    tail = length % group
    copied = padded_input and kh > 1 and kw * cin < short_row_bytes
    return length + group - tail if copied and tail >= tail_min else length


def has_short_rows(loops: list, first_reduction: int, short_row_bytes: int = SHORT_ROW_BYTES) -> bool:
    """Whether the window loops ``loops[first_reduction:-1]`` (rows outermost) read rows of fewer than
    ``short_row_bytes`` (several rows: a single row is one run already)."""
    window_loops = loops[first_reduction:-1]
    row = 1
    for loop in window_loops[1:]:
        row *= int(loop.extent)
    return len(window_loops) > 1 and row < short_row_bytes


def windowed_border(realize: s_tir.SBlockRealize, guard: tvm.ir.Call, loops: list, first_reduction: int,
                    test_depth: Optional[int], window: tirx.Buffer,
                    replacement: Optional[Callable[[s_tir.SBlockRealize, list], Optional[s_tir.SBlockRealize]]] = None,
                    rows_written_out: int = 0) -> Optional[WindowedBorder]:
    """The copy into ``window`` (from ``window_buffer``) and the helper call for a pixel whose loops ``loops``
    (outermost first, below the pixel loop) hold the update block ``realize``, whose factor ``guard`` is the
    ``if_then_else`` of the padded tap. ``loops[first_reduction:]`` are the window loops, then the channel
    tile; ``loops[test_depth]`` is the innermost window loop the guard's test reads, or None for a pixel whose
    window lies inside the image (copied without a test). None where the window does not fit that form or no
    helper computes the reduction (the caller then keeps the loops it has). ``replacement`` makes the call (by
    default ``mac_helper_replacement``: another backend's helpers). A copy without a test writes its rows out
    where the window has at most ``rows_written_out`` rows (DSP cores: ROWS_WRITTEN_OUT; 0: never)."""
    parts = _window_parts(realize, guard, loops, first_reduction, test_depth)
    if parts is None:
        return None
    window_loops, block_vars, in_loops = parts
    test_axis = None if test_depth is None else test_depth - first_reduction
    copy = _window_copy(window, in_loops, window_loops, test_axis, rows_written_out=rows_written_out)
    update = _update_reading_window(realize, guard, window, block_vars, [int(loop.extent) for loop in window_loops])
    call = (replacement or mac_helper_replacement)(update, loops[first_reduction:])
    length = prod(int(loop.extent) for loop in window_loops)
    padding = None
    if call is not None and int(window.shape[0]) > length:
        call = with_padded_window(call, int(window.shape[0]))  # the padded window's call, or None
        zeros = [tirx.BufferStore(window, tirx.const(0, "int8"), [tirx.const(k, "int32")])
                 for k in range(length, int(window.shape[0]))]
        padding = zeros[0] if len(zeros) == 1 else tirx.SeqStmt(zeros)
    if call is None:
        return None
    return WindowedBorder(copy, call, loops[first_reduction], window, padding)


def _window_parts(realize: s_tir.SBlockRealize, guard: tvm.ir.Call, loops: list, first_reduction: int,
                  test_depth: Optional[int]) -> Optional[tuple[list, list, tvm.ir.Call]]:
    """(the window loops, the block variable each binds, the guard read through the loops) of a pixel as
    ``windowed_border`` takes it, or None where its window does not fit a copy (its loops' form, a test on a
    loop that is not a window loop, a guard that depends on the output channels)."""
    window_loops, channel_loop = loops[first_reduction:-1], loops[-1]
    if not window_loops or (test_depth is not None and not first_reduction <= test_depth < len(loops) - 1):
        return None
    if not all(isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in window_loops):
        return None
    value_inside, value_padded = guard.args[1], guard.args[2]
    if not (isinstance(value_inside, tirx.Cast) and isinstance(value_inside.value, tvm.ir.TensorLoad)
            and str(value_inside.value.source.dtype) == "int8" and isinstance(value_padded, tirx.IntImm)
            and -128 <= int(value_padded.value) <= 127):
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    # The block variable each window loop binds (exactly), for the window's index inside the block.
    block_vars = []
    for loop in window_loops:
        bound = [var for var, value in bindings.items() if value.same_as(loop.loop_var)]
        if len(bound) != 1:
            return None
        block_vars.append(bound[0])
    # The guard read through the loops: it must not depend on the output channel loops.
    in_loops = map_leaves(guard, lambda leaf: bindings.get(leaf, leaf))
    per_channel = {loop.loop_var for loop in loops[:first_reduction]} | {channel_loop.loop_var}
    if vars_read(tirx.Evaluate(in_loops)) & per_channel:
        return None
    return window_loops, block_vars, in_loops


def paired_windows(pixel_body: tirx.Stmt, realize: s_tir.SBlockRealize, guard: tvm.ir.Call, loops: list,
                   first_reduction: int, test_depth: Optional[int], pixel: tirx.Var, widen_inputs: bool = True,
                   scratch: Optional[tirx.Buffer] = None, padded_tiles: bool = False
                   ) -> Optional[tuple[tirx.Stmt, list[tirx.Buffer]]]:
    """The statements computing the pixels ``pixel`` and ``pixel + 1`` of a padded convolution, either or both
    on the border, and the scratch buffers they use: both windows copied as ``windowed_border`` copies one (the
    test asked once per tap at ``loops[test_depth]``), one after the other into one buffer of two windows, then
    ``pixel_pairs.paired_pixel_body`` on it: one two-pixel dual-MAC call per channel tile, each weight word read
    and widened once for both pixels, over one run of ``KH * KW * Cin`` inputs per pixel (with
    ``widen_inputs``, the two windows widened to int16 pairs once first). ``pixel_body``, ``realize``, ``guard``,
    ``loops`` and ``first_reduction`` as ``windowed_border`` takes them; ``scratch``, the interior pairs' widened
    inputs, reused where it holds enough words; ``padded_tiles`` as ``paired_pixel_body`` takes it. None where it
    does not fit."""
    parts = _window_parts(realize, guard, loops, first_reduction, test_depth)
    if parts is None:
        return None
    window_loops, block_vars, in_loops = parts
    size = prod(int(loop.extent) for loop in window_loops)
    windows = tirx.decl_buffer((DUAL_MAC_PIXELS * size,), "int8", name="window_pair")
    test_axis = None if test_depth is None else test_depth - first_reduction
    copies = [_window_copy(windows, map_leaves(in_loops, lambda leaf, p=p: pixel + p if leaf.same_as(pixel) else leaf),
                           window_loops, test_axis, p * size) for p in range(DUAL_MAC_PIXELS)]
    # The second pixel's window follows the first's: a block variable, the pixel's place in the pair.
    place = tirx.Var("v_pair", pixel.ty.dtype)
    update = _update_reading_window(realize, guard, windows, block_vars, [int(loop.extent) for loop in window_loops],
                                    place * tirx.const(size, pixel.ty.dtype))
    block = update.block
    places = tvm.ir.Range.from_min_extent(tirx.const(0, pixel.ty.dtype), tirx.const(DUAL_MAC_PIXELS, pixel.ty.dtype))
    placed = s_tir.SBlock([*block.iter_vars, tirx.IterVar(places, place, tirx.IterVar.DataPar)], block.reads,
                          block.writes, block.name_hint, block.body, block.init, block.alloc_buffers,
                          block.match_buffers, block.annotations)
    update = s_tir.SBlockRealize([*update.iter_values, tirx.const(0, pixel.ty.dtype)], update.predicate, placed)
    paired = paired_pixel_body(pixel_body, update, loops, first_reduction, pixel, widen_inputs, pair_axis=place,
                               scratch=scratch, padded_tiles=padded_tiles)
    if paired is None:
        return None
    body, scratch = paired
    return tirx.SeqStmt([*copies, body]), [windows, *scratch]


def _flat_index(indices: list, extents: list[int]):
    """Row-major offset of ``indices`` in a window of ``extents``."""
    offset = indices[0]
    for index, extent in zip(indices[1:], extents[1:]):
        offset = offset * extent + index
    return offset


def _window_copy(window: tirx.Buffer, guard, window_loops: list, test_axis: Optional[int],
                 offset: int = 0, rows_written_out: int = 0) -> s_tir.SBlockRealize:
    """An opaque block copying the window into ``window`` from its element ``offset``: fresh loops over the
    window, the guard's test asked once per tap at loop ``test_axis`` (the innermost it reads), the inner loops
    copying the input or the padding; with ``test_axis`` None, the input without a test, row after row written
    out where the window has at most ``rows_written_out`` rows."""
    fresh = [tirx.Var(f"w{loop.loop_var.name}", loop.loop_var.ty.dtype) for loop in window_loops]
    renamed = map_leaves(guard, lambda leaf: dict(zip((loop.loop_var for loop in window_loops), fresh)).get(leaf, leaf))
    condition, inside, padded = renamed.args
    extents = [int(loop.extent) for loop in window_loops]
    index = _flat_index(fresh, extents)
    if offset:
        index = index + tirx.const(offset, index.ty.dtype)

    def nest(axes: range, store: tirx.Stmt) -> tirx.Stmt:
        for axis in reversed(axes):
            store = tirx.For(fresh[axis], tirx.const(0, fresh[axis].ty.dtype), window_loops[axis].extent,
                             tirx.ForKind.SERIAL, store)
        return store

    if test_axis is None:
        store = tirx.BufferStore(window, inside.value, [index])
        rows = range(int(window_loops[0].extent)) if len(window_loops) > 1 else range(0)
        rows = rows if len(rows) <= rows_written_out else range(0)
        body = tirx.SeqStmt([nest(range(1, len(window_loops)), map_leaves(
            store, lambda leaf, row=row: tirx.const(row, leaf.ty.dtype) if leaf.same_as(fresh[0]) else leaf))
            for row in rows]) if len(rows) > 1 else nest(range(len(window_loops)), store)
    else:
        inner = range(test_axis + 1, len(window_loops))
        copy_inside = nest(inner, tirx.BufferStore(window, inside.value, [index]))
        copy_padded = nest(inner, tirx.BufferStore(window, tirx.const(int(padded.value), "int8"), [index]))
        body = nest(range(test_axis + 1), tirx.IfThenElse(condition, copy_inside, copy_padded))
    source = inside.value.source
    reads = [tirx.BufferRegion(source, [tvm.ir.Range.from_min_extent(0, d) for d in source.shape])]
    writes = [tirx.BufferRegion(window, [tvm.ir.Range.from_min_extent(0, size) for size in window.shape])]
    return s_tir.SBlockRealize([], True, s_tir.SBlock([], reads, writes, WINDOW_COPY_BLOCK, body))


def _one_run(loop: tirx.For) -> tirx.For:
    """``loop`` as one loop where it is a nest of two (outer i of m, inner j of n, from 0) around one copy
    ``dst[..] = src[..]`` whose both accesses step one element per j and n elements per i (a window row of KW taps of
    Cin channels, contiguous in the input and in the window): the loop over f < m * n with i = f // n and j = f % n,
    the same elements in the same order; else ``loop``."""
    inner = loop.body
    if not isinstance(inner, tirx.For) or not isinstance(inner.body, tirx.BufferStore) \
            or not isinstance(inner.body.value, tvm.ir.TensorLoad):
        return loop
    if not all(isinstance(nest.extent, tirx.IntImm) and isinstance(nest.min, tirx.IntImm) and int(nest.min) == 0
               for nest in (loop, inner)):
        return loop
    store, n = inner.body, int(inner.extent)
    outer_var, inner_var = loop.loop_var, inner.loop_var
    try:
        for buffer, indices in ((store.buffer, store.indices), (store.value.source, store.value.indices)):
            start = nest_offset(buffer, indices, {})
            if nest_offset(buffer, indices, {inner_var: 1}) != start + 1 \
                    or nest_offset(buffer, indices, {outer_var: 1}) != start + n:
                return loop
    except KeyError:
        return loop  # an index form we do not evaluate
    flat = tirx.Var(f"{outer_var.name}_{inner_var.name}", outer_var.ty.dtype)
    step = tirx.const(n, flat.ty.dtype)
    mapping = {outer_var: tirx.FloorDiv(flat, step), inner_var: tirx.FloorMod(flat, step)}
    value = store.value
    load = tirx.BufferLoad(value.source, [substitute_index(i, mapping) for i in value.indices])
    body = tirx.BufferStore(store.buffer, load, [substitute_index(i, mapping) for i in store.indices])
    return tirx.For(flat, tirx.const(0, flat.ty.dtype), tirx.const(int(loop.extent) * n, flat.ty.dtype),
                    tirx.ForKind.SERIAL, body)


def _update_reading_window(realize: s_tir.SBlockRealize, guard, window: tirx.Buffer, block_vars: list,
                           extents: list[int], pixel_offset=None) -> s_tir.SBlockRealize:
    """The update block with its guarded factor replaced by the window's element at the tap (``pixel_offset``
    elements further, where each pixel of a pair has a window of its own)."""
    block = realize.block
    store = block.body
    product = store.value.b
    index = _flat_index(block_vars, extents)
    element = tirx.Cast("int32", tirx.BufferLoad(window, [index if pixel_offset is None else index + pixel_offset]))
    factors = [element if factor.same_as(guard) else factor for factor in (product.a, product.b)]
    new_store = tirx.BufferStore(store.buffer, tirx.Add(store.value.a, tirx.Mul(*factors)), store.indices)
    new_block = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint + "_window", new_store,
                             block.init, block.alloc_buffers, block.match_buffers, block.annotations)
    return s_tir.SBlockRealize(realize.iter_values, realize.predicate, new_block)



def copied_runs(func: tirx.PrimFunc, shortest: int) -> tirx.PrimFunc:
    """``func`` with each loop of its window copies (`_window_copy`'s blocks) that copies a run of at least
    ``shortest`` elements from the input (a tap's channels inside the image; a window row's taps where their
    channels follow each other in both buffers: `_one_run`) as one call of the ascending copy
    (``extern_helpers.copy_call``: whole words, not one byte per load and store); every other loop, and any other
    function, unchanged. The copy writes the same bytes: bit-exact."""

    def runs(stmt: tirx.Stmt) -> tirx.Stmt:
        if isinstance(stmt, tirx.For):
            run = _one_run(stmt)
            if int(run.extent) >= shortest and (call := copy_call(run)) is not None:
                return call
        return map_child_stmts(stmt, runs) if isinstance(stmt, (tirx.For, tirx.SeqStmt, tirx.IfThenElse)) else stmt

    def in_copies(stmt: tirx.Stmt) -> tirx.Stmt:
        if isinstance(stmt, s_tir.SBlockRealize) and stmt.block.name_hint == WINDOW_COPY_BLOCK:
            block = stmt.block
            return s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, s_tir.SBlock(
                block.iter_vars, block.reads, block.writes, block.name_hint, runs(block.body), block.init,
                block.alloc_buffers, block.match_buffers, block.annotations))
        if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
            return stmt
        return map_child_stmts(stmt, in_copies)

    return with_root_loops_replaced(func, in_copies)
