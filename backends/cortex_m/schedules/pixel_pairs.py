"""The interior of a padded int8 convolution two pixels at a time: the two-pixel dual MAC there too.

An unpadded convolution takes two neighbouring pixels per dual-MAC call from its schedule
(``tvm_ext.schedule.kernel_schedule``); a padded one keeps one pixel per iteration, for ``tvm_ext.schedule.border_split`` to ask once
per pixel whether its window is inside the image. In the interior the two pixels' windows need no test
either, so the split pixel loop's body becomes

    if (interior row && x starts a pair)      { both pixels: one two-pixel call per channel tile }
    else if (interior row && x ends a pair)   { nothing: done with the pair }
    else                                      { the pixel as before: interior or border }

where the pairs tile the interior columns [lo, lo + 2n) from lo. An unpadded convolution whose pixel count
the schedule's split by two does not divide (kws's 5 columns) gets the same form after scheduling
(``pair_odd_pixel_row``): pairs from the first column, the last one on its own. Each pixel's accumulators are
initialised and requantized as before, once per pixel; each sum keeps its order: bit-exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.schedules.depthwise_mac import mac_helper_replacement
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_PIXELS, dual_mac_replacement
from backends.cortex_m.schedules.pair_q15 import widened_pair
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.tir_walk import replace_stmt, walk

Replacement = Callable[[s_tir.SBlockRealize, list], Optional[s_tir.SBlockRealize]]
"""A backend's helper call block computing what the For nodes around an update block compute, or None."""


def paired_pixel_body(pixel_body: tirx.Stmt, realize: s_tir.SBlockRealize, loops: list, first_reduction: int,
                      pixel: tirx.Var, widen_inputs: bool = True, replacement: Optional[Replacement] = None,
                      pair_axis: Optional[tirx.Var] = None, scratch: Optional[tirx.Buffer] = None,
                      padded_tiles: bool = False) -> Optional[tuple[tirx.Stmt, list[tirx.Buffer]]]:
    """The statements computing pixels ``pixel`` and ``pixel + 1`` of an interior row, and the scratch
    buffers they use: ``pixel_body`` (one pixel's statements: the loops ``loops`` below the pixel loop, the
    unguarded update block ``realize``, the reduction ``loops[first_reduction:]`` with the channel tile
    innermost) with the reduction as one two-pixel dual-MAC call and every other statement beside it
    (initialisation, epilogue) once per pixel; with ``widen_inputs``, the pair's inputs widened once before its
    channel tiles where they can be (``backends.cortex_m.schedules.pair_q15``; a Helium core multiplies int8 lanes
    as they are); ``replacement`` makes the two-pixel call (by default ``dual_mac_replacement``: another
    backend's helpers); ``pair_axis``, an iteration variable of ``realize``'s block bound to 0 there, is bound to
    the pixel's place in the pair (0, 1: each pixel's window copied apart, ``border_window.paired_windows``);
    ``scratch``, another pair's widened-input scratch the widening may reuse (``pair_q15.widened_pair``);
    ``padded_tiles``, whether a block under a test (a padded last tile's epilogue, ``tile * 4 + channel <
    channels``: output channels the lowering padded to whole tiles) pairs too, its test at the second pixel
    (``_predicate_at``; the DSP cores', whose helpers take such tiles), else the pair is refused. None where the
    reduction's statements do not have that form or the call does not fit."""
    pixel_loop = tirx.For(tirx.Var("pixel_pair", pixel.ty.dtype), tirx.const(0, pixel.ty.dtype),
                          tirx.const(DUAL_MAC_PIXELS, pixel.ty.dtype), tirx.ForKind.SERIAL, tirx.Evaluate(0))
    try:
        shifted = _realize_at(realize, {pixel: pixel + pixel_loop.loop_var}, padded_tiles)
        if pair_axis is not None:
            shifted = s_tir.SBlockRealize([pixel_loop.loop_var if iv.var.same_as(pair_axis) else value
                                           for iv, value in zip(shifted.block.iter_vars, shifted.iter_values)],
                                          shifted.predicate, shifted.block)
    except KeyError:
        return None
    call = (replacement or dual_mac_replacement)(shifted, [*loops[first_reduction:-1], pixel_loop, loops[-1]])
    if call is None:
        return None
    widened = widened_pair(call, loops[:first_reduction], scratch) if widen_inputs else None
    try:
        if widened is None:
            return _pair_around(pixel_body, loops[first_reduction], call, pixel, padded_tiles), []
        paired = _pair_around(pixel_body, loops[first_reduction], widened.call, pixel, padded_tiles)
    except KeyError:
        return None
    return tirx.SeqStmt([widened.widen, paired]), [] if widened.scratch.same_as(scratch) else [widened.scratch]


def pair_tests(pixel: tirx.Var, low: int, pairs: int) -> tuple[tirx.Expr, tirx.Expr]:
    """(``pixel`` starts one of the ``pairs`` pairs tiling the columns from ``low``, ``pixel`` ends one)."""
    dtype = pixel.ty.dtype
    parity = tirx.EQ(tirx.FloorMod(pixel, tirx.const(2, dtype)), tirx.const(low % 2, dtype))
    end = tirx.const(low + 2 * pairs, dtype)
    starts = tirx.And(tirx.And(tirx.LE(tirx.const(low, dtype), pixel), tirx.LT(pixel, end)), parity)
    ends = tirx.And(tirx.And(tirx.LT(tirx.const(low, dtype), pixel), tirx.LT(pixel, end)), tirx.Not(parity))
    return starts, ends


def _realize_at(realize: s_tir.SBlockRealize, mapping: dict, predicated: bool = False) -> s_tir.SBlockRealize:
    """``realize`` with the variables of ``mapping`` replaced in its bindings, and with ``predicated`` in its
    predicate (KeyError: a form we do not rewrite, a predicated block without ``predicated``)."""
    values = [substitute_index(value, mapping) for value in realize.iter_values]
    if not predicated and not isinstance(realize.predicate, tirx.IntImm):
        raise KeyError("a predicated block")
    return s_tir.SBlockRealize(values, _predicate_at(realize.predicate, mapping), realize.block)


_COMPARISONS = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE)


def _predicate_at(predicate, mapping: dict):
    """A block's ``predicate`` with the variables of ``mapping`` replaced: a constant, comparisons of index
    expressions, their conjunctions (a padded channel tile's ``tile * 4 + channel < channels``; KeyError: another
    form)."""
    if isinstance(predicate, tirx.IntImm):
        return predicate
    if isinstance(predicate, _COMPARISONS):
        return type(predicate)(substitute_index(predicate.a, mapping), substitute_index(predicate.b, mapping))
    if isinstance(predicate, tirx.And):
        return tirx.And(_predicate_at(predicate.a, mapping), _predicate_at(predicate.b, mapping))
    raise KeyError(type(predicate).__name__)


def _pair_around(stmt: tirx.Stmt, reduction: tirx.For, call: s_tir.SBlockRealize, pixel: tirx.Var,
                 predicated: bool = False) -> tirx.Stmt:
    """``stmt`` with ``reduction`` replaced by ``call`` and each statement of the sequence holding it
    repeated for ``pixel`` and ``pixel + 1`` (blocks under a test with ``predicated`` only); the loops above that
    sequence kept (KeyError: another form)."""
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                        _pair_around(stmt.body, reduction, call, pixel, predicated), stmt.thread_binding,
                        stmt.annotations, stmt.step)
    if not isinstance(stmt, tirx.SeqStmt) or not any(child.same_as(reduction) for child in stmt.seq):
        raise KeyError(type(stmt).__name__)
    first, second = [], []
    for child in stmt.seq:
        if child.same_as(reduction):
            first.append(call)
        else:
            first.append(child)
            second.append(_at_pixel(child, {pixel: pixel + 1}, predicated))
    # Each pixel's initialisation before the call, each one's epilogue after it.
    at = next(i for i, child in enumerate(stmt.seq) if child.same_as(reduction))
    return tirx.SeqStmt([*first[:at], *second[:at], call, *first[at + 1:], *second[at:]])


def _at_pixel(stmt: tirx.Stmt, mapping: dict, predicated: bool = False) -> tirx.Stmt:
    """``stmt`` (loops around blocks) with the variables of ``mapping`` replaced in the blocks' bindings (and
    with ``predicated`` in their tests: ``_realize_at``) (KeyError: another statement kind, or a loop bound that
    reads them)."""
    if isinstance(stmt, s_tir.SBlockRealize):
        if not stmt.block.iter_vars:
            raise KeyError("an opaque block")
        return _realize_at(stmt, mapping, predicated)
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, _at_pixel(stmt.body, mapping, predicated),
                        stmt.thread_binding, stmt.annotations, stmt.step)
    if isinstance(stmt, tirx.SeqStmt):
        return tirx.SeqStmt([_at_pixel(child, mapping, predicated) for child in stmt.seq])
    raise KeyError(type(stmt).__name__)


def pair_odd_pixel_row(func: tirx.PrimFunc, block_name: str, first_reduction: int,
                       widen_inputs: bool = True, replacement: Optional[Replacement] = None,
                       padded_tiles: bool = False) -> tirx.PrimFunc:
    """``func`` with the unpadded MAC reduction of the update block ``block_name`` (its loops from the root:
    the pixel loop, the channel tile's outer loop, then from ``first_reduction`` the reduction loops and the
    channel tile) as dual-MAC calls: pairs of pixels where a pair fits (a pixel count the schedule's split by
    two does not divide, kws's 5 columns), the last pixel on its own; ``widen_inputs`` as for
    ``paired_pixel_body``, and ``padded_tiles``; ``replacement`` makes both calls (by default ``mac_helper_replacement`` the lone
    pixel's, ``dual_mac_replacement`` the pairs'). ``func`` unchanged where no helper computes the reduction."""
    root = func.body
    found = _block_with_loops(root.block.body, block_name, []) if isinstance(root, s_tir.SBlockRealize) else None
    if found is None or first_reduction < 2:
        return func
    realize, loops = found
    pixel_loop, inner = loops[first_reduction - 2], loops[first_reduction - 1:]
    single_call = (replacement or mac_helper_replacement)(realize, inner[1:])
    if single_call is None or not isinstance(pixel_loop.extent, tirx.IntImm):
        return func
    single = replace_stmt(pixel_loop.body, inner[1], single_call)
    pairs = int(pixel_loop.extent) // DUAL_MAC_PIXELS
    paired = paired_pixel_body(pixel_loop.body, realize, inner, 1, pixel_loop.loop_var,
                               widen_inputs, replacement, padded_tiles=padded_tiles) if pairs else None
    body, scratch = single, []
    if paired is not None:
        starts, ends = pair_tests(pixel_loop.loop_var, int(pixel_loop.min), pairs)
        body = tirx.IfThenElse(starts, paired[0], tirx.IfThenElse(tirx.Not(ends), single, None))
        scratch = paired[1]
    new_loop = tirx.For(pixel_loop.loop_var, pixel_loop.min, pixel_loop.extent, pixel_loop.kind, body,
                        pixel_loop.thread_binding, pixel_loop.annotations, pixel_loop.step)
    block = root.block
    new_root = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint,
                            replace_stmt(block.body, pixel_loop, new_loop), block.init,
                            [*block.alloc_buffers, *scratch],
                            block.match_buffers, block.annotations)
    paired_func = func.with_body(s_tir.SBlockRealize(root.iter_values, root.predicate, new_root))
    # The pixel's statements are now in several branches: each copy's loops get variables of their own.
    return s_tir.transform.ConvertSSA()(tvm.IRModule({"main": paired_func}))["main"]


def _block_with_loops(stmt: tirx.Stmt, name: str, loops: list):
    """(the realize of the block ``name`` under ``stmt``, the loops around it from ``stmt`` down), or None."""
    if isinstance(stmt, s_tir.SBlockRealize):
        if stmt.block.name_hint == name:
            return stmt, loops
        return None
    if isinstance(stmt, tirx.For):
        return _block_with_loops(stmt.body, name, [*loops, stmt])
    if isinstance(stmt, tirx.SeqStmt):
        return next((found for found in (_block_with_loops(child, name, loops) for child in stmt.seq)
                     if found is not None), None)
    return None


TWO_PIXEL_MIN_REDUCTION = 32
"""The shortest reduction (MACs per output) a dual-MAC kernel tiles two pixels for: shorter ones (vww's 1x1
convolutions on 8 and 16 channels, measured under QEMU) lose more to the two-pixel helper's two passes than
its shared weights save."""


def pays_two_pixels(sch: s_tir.Schedule, block, loops: list, first_reduce: int,
                    min_reduction: int = TWO_PIXEL_MIN_REDUCTION) -> bool:
    """Whether the channel-tiled int8 reduction ``block`` (its loops ``loops``, the channel tile innermost)
    accumulates two pixels per dual-MAC call: a reduction of at least ``min_reduction``, int8 inputs (16x8's
    int16 ones have a one-pixel helper only, backends.cortex_m.helpers.dual_mac_c), and no padded input (an ``if_then_else`` tap:
    its pixels stay untiled, for the border split, tvm_ext.schedule.border_split, to find one test per pixel)."""
    length = 1
    for loop in loops[first_reduce:-1]:
        extent = sch.get(loop).extent
        if not isinstance(extent, tirx.IntImm):
            return False
        length *= int(extent)
    padded = any(isinstance(node, tvm.ir.Call) and node.op.name == "prim.if_then_else"
                 for node in walk(sch.get(block).body))
    int16_input = any(str(region.source.dtype) == "int16" for region in sch.get(block).reads)
    return length >= min_reduction and not padded and not int16_input
