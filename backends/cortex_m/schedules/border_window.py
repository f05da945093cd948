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

The window holds the same numbers the guarded load yields (both int8: an input value or the zero point),
and each channel's products are added in the same order: bit-exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.schedules.depthwise_mac import mac_helper_replacement
from tvm_ext.tir.tir_walk import map_leaves, vars_read


@dataclass(frozen=True)
class WindowedBorder:
    """What a border pixel runs instead: ``copy`` (first, outside the channel-tile loop) fills ``window``;
    ``call`` (in place of the reduction loops, ``reduction``: the outermost of them) multiplies the window by
    one channel tile's weights."""

    copy: s_tir.SBlockRealize
    call: s_tir.SBlockRealize
    reduction: tirx.For
    window: tirx.Buffer


SHORT_ROW_BYTES = 16
"""An interior window row (``KW * Cin`` bytes) shorter than this is copied too: the helper's per-row start
costs more than copying a row, once per pixel, for every channel tile to read the window as one run."""


def window_buffer(loops: list, first_reduction: int) -> tirx.Buffer:
    """The int8 window a pixel whose reduction loops are ``loops[first_reduction:-1]`` copies (row-major)."""
    size = 1
    for loop in loops[first_reduction:-1]:
        size *= int(loop.extent)
    return tirx.decl_buffer((size,), "int8", name="window")


def has_short_rows(loops: list, first_reduction: int) -> bool:
    """Whether the window loops ``loops[first_reduction:-1]`` (rows outermost) read rows of fewer than
    SHORT_ROW_BYTES (several rows: a single row is one run already)."""
    window_loops = loops[first_reduction:-1]
    row = 1
    for loop in window_loops[1:]:
        row *= int(loop.extent)
    return len(window_loops) > 1 and row < SHORT_ROW_BYTES


def windowed_border(realize: s_tir.SBlockRealize, guard: tvm.ir.Call, loops: list, first_reduction: int,
                    test_depth: Optional[int], window: tirx.Buffer,
                    replacement: Optional[Callable[[s_tir.SBlockRealize, list], Optional[s_tir.SBlockRealize]]] = None
                    ) -> Optional[WindowedBorder]:
    """The copy into ``window`` (from ``window_buffer``) and the helper call for a pixel whose loops ``loops``
    (outermost first, below the pixel loop) hold the update block ``realize``, whose factor ``guard`` is the
    ``if_then_else`` of the padded tap. ``loops[first_reduction:]`` are the window loops, then the channel
    tile; ``loops[test_depth]`` is the innermost window loop the guard's test reads, or None for a pixel whose
    window lies inside the image (copied without a test). None where the window does not fit that form or no
    helper computes the reduction (the caller then keeps the loops it has). ``replacement`` makes the call (by
    default ``mac_helper_replacement``: another backend's helpers)."""
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
    block = realize.block
    bindings = {iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values)}
    # The block variable each window loop binds (exactly), for the window's index inside the block.
    block_var_of = {}
    for loop in window_loops:
        bound = [var for var, value in bindings.items() if value.same_as(loop.loop_var)]
        if len(bound) != 1:
            return None
        block_var_of[loop.loop_var] = bound[0]
    # The guard read through the loops: it must not depend on the output channel loops.
    in_loops = map_leaves(guard, lambda leaf: bindings.get(leaf, leaf))
    per_channel = {loop.loop_var for loop in loops[:first_reduction]} | {channel_loop.loop_var}
    if vars_read(tirx.Evaluate(in_loops)) & per_channel:
        return None

    extents = [int(loop.extent) for loop in window_loops]
    test_axis = None if test_depth is None else test_depth - first_reduction
    copy = _window_copy(window, in_loops, window_loops, test_axis)
    update = _update_reading_window(realize, guard, window, [block_var_of[loop.loop_var] for loop in window_loops],
                                    extents)
    call = (replacement or mac_helper_replacement)(update, loops[first_reduction:])
    if call is None:
        return None
    return WindowedBorder(copy, call, loops[first_reduction], window)


def _flat_index(indices: list, extents: list[int]):
    """Row-major offset of ``indices`` in a window of ``extents``."""
    offset = indices[0]
    for index, extent in zip(indices[1:], extents[1:]):
        offset = offset * extent + index
    return offset


def _window_copy(window: tirx.Buffer, guard, window_loops: list, test_axis: Optional[int]) -> s_tir.SBlockRealize:
    """An opaque block copying the window: fresh loops over the window, the guard's test asked once per
    tap at loop ``test_axis`` (the innermost it reads), the inner loops copying the input or the padding;
    with ``test_axis`` None, the input without a test."""
    fresh = [tirx.Var(f"w{loop.loop_var.name}", loop.loop_var.ty.dtype) for loop in window_loops]
    renamed = map_leaves(guard, lambda leaf: dict(zip((loop.loop_var for loop in window_loops), fresh)).get(leaf, leaf))
    condition, inside, padded = renamed.args
    extents = [int(loop.extent) for loop in window_loops]
    index = _flat_index(fresh, extents)

    def nest(axes: range, store: tirx.Stmt) -> tirx.Stmt:
        for axis in reversed(axes):
            store = tirx.For(fresh[axis], tirx.const(0, fresh[axis].ty.dtype), window_loops[axis].extent,
                             tirx.ForKind.SERIAL, store)
        return store

    if test_axis is None:
        body = nest(range(len(window_loops)), tirx.BufferStore(window, inside.value, [index]))
    else:
        inner = range(test_axis + 1, len(window_loops))
        copy_inside = nest(inner, tirx.BufferStore(window, inside.value, [index]))
        copy_padded = nest(inner, tirx.BufferStore(window, tirx.const(int(padded.value), "int8"), [index]))
        body = nest(range(test_axis + 1), tirx.IfThenElse(condition, copy_inside, copy_padded))
    source = inside.value.source
    reads = [tirx.BufferRegion(source, [tvm.ir.Range.from_min_extent(0, d) for d in source.shape])]
    writes = [tirx.BufferRegion(window, [tvm.ir.Range.from_min_extent(0, size) for size in window.shape])]
    return s_tir.SBlockRealize([], True, s_tir.SBlock([], reads, writes, "padded_window", body))


def _update_reading_window(realize: s_tir.SBlockRealize, guard, window: tirx.Buffer, block_vars: list,
                           extents: list[int]) -> s_tir.SBlockRealize:
    """The update block with its guarded factor replaced by the window's element at the tap."""
    block = realize.block
    store = block.body
    product = store.value.b
    element = tirx.Cast("int32", tirx.BufferLoad(window, [_flat_index(block_vars, extents)]))
    factors = [element if factor.same_as(guard) else factor for factor in (product.a, product.b)]
    new_store = tirx.BufferStore(store.buffer, tirx.Add(store.value.a, tirx.Mul(*factors)), store.indices)
    new_block = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint + "_window", new_store,
                             block.init, block.alloc_buffers, block.match_buffers, block.annotations)
    return s_tir.SBlockRealize(realize.iter_values, realize.predicate, new_block)

