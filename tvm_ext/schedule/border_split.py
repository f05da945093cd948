"""The padded border of an int8 convolution split from its interior: the interior runs without bounds tests.

A padded CONV_2D or DEPTHWISE_CONV_2D (``tvm_ext.kernels.conv``) reads each tap through
``if_then_else(inside, x, zero point)``: the test runs on every MAC although it fails only where the window
overhangs the image. ``split_border`` rewrites a scheduled kernel so that each output pixel first asks once
whether its window lies inside the image:

    for y, x:  if (y0 <= y < y1 && x0 <= x < x1) { the pixel's loops without the test } else { as before }

The interior ranges are found by evaluating the test's conjuncts over every tap of the window (the index
arithmetic of ``tvm_ext.tir.index_expr``): a conjunct on the pixel loop ``y`` and the tap loops below it holds in
the interior range for every tap. In the interior copy the tap is read directly (``if_then_else`` replaced
by its true value: the same number), so the sums are unchanged: bit-exact. There, with a backend's MAC
schedules (``backends.backend.MacSchedules``), the reduction becomes a MAC helper's call where one fits.

With them, a convolution's border pixel copies its window once and its interior pixels go in pairs
(Cortex-M: ``backends.cortex_m.schedules.border_window``, ``backends.cortex_m.schedules.pixel_pairs``); where the
backend pairs copied windows too (its optional ``paired_windows``: Cortex-M DSP cores), every pixel of a row goes
in pairs from the first, a pair with a pixel on the border copying both windows (``_border_pairs``). A border without a copied window (depthwise), where each
test conjunct relates one pixel loop to one tap loop and the border makes at most MAX_REGIONS rectangles (any
number where no pixel is interior, or where the backend makes the rectangles one call: its MacSchedules'
``collapses_border``), is not tested per tap at all: ``tvm_ext.schedule.border_regions`` finds at
compile time the rectangles of pixels that read the same box of image taps, and each pixel's reduction picks its
rectangle (tests on the pixel loops only), runs the MAC helper over the box and adds the padding's products
(the guard's false value) over the rest of the window (as loops, or a helper's call where the backend has one). Integer sums in another order: bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.backend import MacSchedules
from tvm_ext.schedule.border_regions import COMPARISONS, holds, outside_boxes, pixel_segments
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.tir_walk import map_nodes, replace_stmt, vars_read, walk

_IF_THEN_ELSE = "prim.if_then_else"
MAX_REGIONS = 9
"""Most rectangles a border around an interior is cut into (a 3x3 window padded by 1 makes 9): each is a copy of
the reduction's code, so a wide window with wide padding keeps the per-tap tests on its border pixels instead of
growing the code. A kernel without interior pixels (every window overhangs the image: a 5x5 window padded by 2
over 4x4 pixels) has no cap: its border is all of its work, and the per-tap tests would be on every MAC."""


@dataclass(frozen=True)
class _GuardedTap:
    """The update block whose tap is guarded, with the loops around it (outermost first), the
    ``if_then_else`` call and the test's conjuncts over loop variables."""

    realize: s_tir.SBlockRealize
    loops: list
    guard: tvm.ir.Call
    conjuncts: list


def split_border(func: tirx.PrimFunc, mac: Optional[MacSchedules]) -> tirx.PrimFunc:
    """``func`` with its one guarded convolution tap (if any) split as the module docstring says; with a
    backend's MAC schedules ``mac``, the reductions as MAC helper calls where they fit: a convolution's border
    pixels copy their window once (``mac.windowed_border``), other borders (depthwise) are cut into rectangles of pixels where
    they can be (``_border_regions``). Unchanged when the kernel has no guarded tap, several, or a form this
    module does not evaluate."""
    root = func.body
    if not isinstance(root, s_tir.SBlockRealize):
        return func
    taps = [tap for tap in _guarded_taps(root.block.body, []) if tap is not None]
    if len(taps) != 1:
        return func
    try:
        split = _interior_branch(taps[0], mac)
        if mac is not None and (split is None or not split[2]):
            # No window copied (a depthwise border): cut into rectangles of pixels where it can be.
            regions = _border_regions(taps[0], mac)
            split = (*regions, [], None) if regions is not None else split
    except KeyError:
        return func  # an index or test form we do not evaluate: keep the guarded loop
    if split is None:
        return func
    target, replacement, windows, padding = split
    accumulators = taps[0].realize.block.body.buffer
    if getattr(mac, "branch_accumulators", False) and any(
            accumulators.same_as(own) for own in root.block.alloc_buffers) and not _accesses(
            replace_stmt(root.block.body, target, tirx.Evaluate(0)), accumulators):
        replacement, branch_accumulators = _own_accumulators(replacement, accumulators)
        windows = [*windows, *branch_accumulators]
    body = replace_stmt(root.block.body, target, replacement)
    body = tirx.SeqStmt([padding, body]) if padding is not None else body  # once: no copy writes it
    block = root.block
    new_root = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init,
                            [*block.alloc_buffers, *windows], block.match_buffers, block.annotations)
    split_func = func.with_body(s_tir.SBlockRealize(root.iter_values, root.predicate, new_root))
    # The pixel's statements are now in several branches: each copy's loops get variables of their own.
    return s_tir.transform.ConvertSSA()(tvm.IRModule({"main": split_func}))["main"]


def _accesses(stmt: tirx.Stmt, buffer) -> bool:
    """Whether ``stmt`` reads or writes ``buffer`` (loads, stores, blocks' regions)."""
    return any(node.same_as(buffer) for node in walk(stmt)) or any(
        region.source.same_as(buffer) for node in walk(stmt) if isinstance(node, s_tir.SBlock)
        for region in (*node.reads, *node.writes))


def _own_accumulators(stmt: tirx.Stmt, accumulators) -> tuple[tirx.Stmt, list]:
    """``stmt`` (a pixel's branches: IfThenElse down to the statements that compute one or two pixels each,
    their accumulators zeroed, summed and requantized inside them) with each branch's ``accumulators`` a
    buffer of its own, and the new buffers. Only one branch runs per pixel, so nothing is read across them;
    apart, each buffer is compacted to what its branch touches (one channel tile where the tiles are a loop
    of the branch), a small array of constant indices that the C compiler keeps in registers instead of
    storing every tile's sums to a pixel's array (the stem of efficientnet_lite_w030_112_int8: 4 stores per
    tile)."""
    if isinstance(stmt, tirx.IfThenElse) and not _accesses(tirx.Evaluate(stmt.condition), accumulators):
        then_case, then_buffers = _own_accumulators(stmt.then_case, accumulators)
        else_case, else_buffers = (_own_accumulators(stmt.else_case, accumulators) if stmt.else_case is not None
                                   else (None, []))
        return tirx.IfThenElse(stmt.condition, then_case, else_case), [*then_buffers, *else_buffers]
    if not _accesses(stmt, accumulators):
        return stmt, []
    own = tirx.decl_buffer(accumulators.shape, accumulators.dtype, name=accumulators.name)

    def renamed(node):
        if node.same_as(accumulators):
            return own
        if isinstance(node, s_tir.SBlockRealize):
            return s_tir.SBlockRealize(node.iter_values, node.predicate, renamed(node.block))
        if isinstance(node, s_tir.SBlock):
            def regions(found):
                return [tirx.BufferRegion(own if r.source.same_as(accumulators) else r.source, r.region)
                        for r in found]
            return s_tir.SBlock(node.iter_vars, regions(node.reads), regions(node.writes), node.name_hint,
                                map_nodes(node.body, renamed),
                                None if node.init is None else map_nodes(node.init, renamed),
                                node.alloc_buffers, node.match_buffers, node.annotations)
        return None

    return map_nodes(stmt, renamed), [own]


def _guarded_taps(stmt: tirx.Stmt, loops: list):
    """Each update block under ``stmt`` whose stored value multiplies a guarded tap, with its loops."""
    if isinstance(stmt, tirx.SeqStmt):
        for child in stmt.seq:
            yield from _guarded_taps(child, loops)
    elif isinstance(stmt, tirx.For):
        yield from _guarded_taps(stmt.body, [*loops, stmt])
    elif isinstance(stmt, s_tir.SBlockRealize):
        guard = _guard(stmt.block.body)
        if guard is not None:
            bindings = {iv.var: value for iv, value in zip(stmt.block.iter_vars, stmt.iter_values)}
            try:
                conjuncts = [_substitute_comparison(c, bindings) for c in _conjuncts(guard.args[0])]
            except KeyError:
                yield None
                return
            yield _GuardedTap(stmt, loops, guard, conjuncts)
    else:
        yield None  # another statement kind between the loops: not a kernel this module knows


def _guard(body) -> Optional[tvm.ir.Call]:
    """The ``if_then_else`` of ``acc = acc + guarded * w`` (or ``w * guarded``), else None."""
    if not isinstance(body, tirx.BufferStore) or not isinstance(body.value, tirx.Add):
        return None
    if not str(body.buffer.dtype).startswith("int"):
        return None  # integer kernels only: the float kernels are scheduled elsewhere
    product_ = body.value.b
    if not isinstance(product_, tirx.Mul):
        return None
    for factor in (product_.a, product_.b):
        if isinstance(factor, tvm.ir.Call) and factor.op.name == _IF_THEN_ELSE:
            return factor
    return None


def _conjuncts(condition) -> list:
    if isinstance(condition, tirx.And):
        return _conjuncts(condition.a) + _conjuncts(condition.b)
    if type(condition) not in COMPARISONS:
        raise KeyError(type(condition).__name__)
    return [condition]


def _substitute_comparison(comparison, mapping: dict):
    """``comparison`` (a < b, <=, >, >=) with the variables of ``mapping`` replaced in both sides."""
    return type(comparison)(substitute_index(comparison.a, mapping), substitute_index(comparison.b, mapping))


def _interior_branch(tap: _GuardedTap, mac: Optional[MacSchedules]):
    """(the innermost pixel loop's body, the IfThenElse it becomes, the buffers the border allocates, the
    statement writing a padded window's zeros before every pixel or None), or None where no pixel is interior (but
    for `_border_only`'s backends) or the test is on loops this split cannot separate."""
    depth = {loop.loop_var: index for index, loop in enumerate(tap.loops)}
    pixel_conjuncts: dict[int, list] = {}
    for conjunct in tap.conjuncts:
        used = sorted(depth[var] for var in vars_read(conjunct) if var in depth)
        if not used:
            raise KeyError("a test on no loop")
        pixel_conjuncts.setdefault(used[0], []).append((conjunct, used[1:]))
    pixel_depths = sorted(pixel_conjuncts)
    innermost = pixel_depths[-1]
    if any(depth_ <= innermost for entries in pixel_conjuncts.values() for _, taps in entries for depth_ in taps):
        return None  # a tap loop above a pixel loop: no one test per pixel decides the window
    tap_depths = [depth_ for entries in pixel_conjuncts.values() for _, taps in entries for depth_ in taps]
    border_only = bool(tap_depths) and getattr(mac, "windows_without_interior", False)
    interiors = []
    for index in pixel_depths:
        interiors.append(_interior_range(tap.loops, index, pixel_conjuncts[index]))
        if interiors[-1] is None and not border_only:
            return None
    pixel_loop = tap.loops[innermost]
    inner_loops = tap.loops[innermost + 1:]
    first = _first_reduction_loop(tap.realize, inner_loops) if mac is not None else None
    window = mac.window_buffer(inner_loops, first, tap.realize) if first is not None else None
    if None in interiors:
        return _border_only(mac, tap, pixel_loop, inner_loops, first, max(tap_depths) - innermost - 1, window)
    bounds = [(tap.loops[index], interior) for index, interior in zip(pixel_depths, interiors)]
    inside = _tap_read_as(tap, tap.guard.args[1], "_interior")
    windowed = _windowed(mac, tap, inner_loops, first, None, window) if first is not None and (
        mac.has_short_rows(inner_loops, first) or not _helper_fits(inside, inner_loops, mac)) else None
    clean = _with_window(pixel_loop.body, windowed) if windowed is not None else _with_helper(
        pixel_loop.body, tap, inside, inner_loops, mac)
    windowed_border_ = _windowed(mac, tap, inner_loops, first, max(tap_depths) - innermost - 1, window) if (
        first is not None and tap_depths) else None
    if windowed_border_ is not None:
        border = _with_window(pixel_loop.body, windowed_border_)
    else:
        border = _border_taps(pixel_loop.body, tap, max(tap_depths), mac) if tap_depths else pixel_loop.body
    windows = [window] if windowed is not None or windowed_border_ is not None else []
    tests, row_tests = [], []
    for loop, (low, high) in bounds:
        var, start, end = loop.loop_var, int(loop.min), int(loop.min) + int(loop.extent)
        loop_tests = []
        if low > start:
            loop_tests.append(tirx.LE(tirx.const(low, var.ty.dtype), var))
        if high < end:
            loop_tests.append(tirx.LT(var, tirx.const(high, var.ty.dtype)))
        tests += loop_tests
        row_tests += [] if loop.same_as(pixel_loop) else loop_tests
    # A padded window's zeros (the same for the interior's copy and the border's): written once per call.
    padding = next((w.padding for w in (windowed, windowed_border_) if w is not None and w.padding is not None),
                   None)
    if not tests:
        return pixel_loop.body, clean, [window] if windowed is not None else [], padding
    branch = tirx.IfThenElse(_conjunction(tests), clean, border)
    if first is not None and windowed is None:
        border_pairs = _border_pairs(mac, tap, pixel_loop, inner_loops, first, bounds[-1][1], row_tests, branch,
                                     max(tap_depths) - innermost - 1) if windowed_border_ is not None else None
        branch, scratch = border_pairs or _paired(mac, tap, pixel_loop, inner_loops, first, bounds[-1][1], row_tests,
                                                  branch)
        windows += scratch
    return pixel_loop.body, branch, windows, padding


def _border_only(mac: Optional[MacSchedules], tap: _GuardedTap, pixel_loop: tirx.For, loops: list,
                 first: Optional[int], test_depth: int, window: Optional[tirx.Buffer]):
    """(the innermost pixel loop's body, every pixel's copied-window form, the buffers it allocates, the window's
    padding zeros or None) for a convolution of no interior pixel (every window crosses the padding: a 3x3 window
    padded by 1 over a 2x2 image; the backend copies such windows: ``mac.windows_without_interior``), else None
    (its guarded loops kept). Where the backend pairs copied windows (``mac.paired_windows``), the pixels of a row
    go in pairs from the first (each weight word read once for both), the last one alone where their count is
    odd."""
    if first is None:
        return None
    windowed = _windowed(mac, tap, loops, first, test_depth, window)
    if windowed is None:
        return None
    single = _with_window(pixel_loop.body, windowed)
    pixels = int(pixel_loop.extent)
    pairs = _window_pairs(mac, tap, pixel_loop, loops, first, test_depth) if pixels >= 2 else None
    if pairs is None:
        return pixel_loop.body, single, [window], windowed.padding
    starts, ends = mac.pair_tests(pixel_loop.loop_var, int(pixel_loop.min), pixels // 2)
    lone = tirx.IfThenElse(tirx.Not(ends), single, None) if pixels % 2 else None
    buffers = [window, *pairs[1]] if lone is not None else pairs[1]
    return pixel_loop.body, tirx.IfThenElse(starts, pairs[0], lone), buffers, windowed.padding


def _window_pairs(mac: MacSchedules, tap: _GuardedTap, pixel_loop: tirx.For, loops: list, first: int,
                  test_depth: int, scratch: Optional[tirx.Buffer] = None
                  ) -> Optional[tuple[tirx.Stmt, list[tirx.Buffer]]]:
    """The statements of a pair of pixels (``pixel_loop``'s variable and the next) either of whose windows
    overhangs the image, both windows copied (``mac.paired_windows``, the test once per tap at
    ``loops[test_depth]``; ``scratch``: widened inputs to reuse), and the scratch buffers they use; None where the
    backend has no such pairs or the pair does not fit."""
    paired_windows = getattr(mac, "paired_windows", None)
    if paired_windows is None:
        return None
    try:
        return paired_windows(pixel_loop.body, tap.realize, tap.guard, loops, first, test_depth,
                              pixel_loop.loop_var, scratch=scratch)
    except KeyError:
        return None  # an index form we do not evaluate: the pixels stay one by one


def _conjunction(tests: list) -> tirx.Expr:
    condition = tests[0]
    for test in tests[1:]:
        condition = tirx.And(condition, test)
    return condition


def _paired(mac: MacSchedules, tap: _GuardedTap, pixel_loop: tirx.For, loops: list, first: int,
            interior: tuple[int, int], row_tests: list, branch: tirx.Stmt) -> tuple[tirx.Stmt, list[tirx.Buffer]]:
    """``branch`` (a pixel's statements) preceded by the pairs of interior pixels (``mac.paired_pixel_body``)
    of the columns ``interior`` ([low, high) of ``pixel_loop``) in the rows where ``row_tests`` hold, and the
    scratch buffers the pairs use; ``branch`` itself where no pair fits."""
    low, high = interior
    pairs = (high - low) // 2
    paired = mac.paired_pixel_body(pixel_loop.body, _tap_read_as(tap, tap.guard.args[1], "_pair"), loops, first,
                               pixel_loop.loop_var) if pairs else None
    if paired is None:
        return branch, []
    body, scratch = paired
    starts, ends = mac.pair_tests(pixel_loop.loop_var, low, pairs)
    return tirx.IfThenElse(_conjunction([*row_tests, starts]), body,
                           tirx.IfThenElse(tirx.Not(_conjunction([*row_tests, ends])), branch, None)), scratch


def _border_pairs(mac: MacSchedules, tap: _GuardedTap, pixel_loop: tirx.For, loops: list, first: int,
                  interior: tuple[int, int], row_tests: list, branch: tirx.Stmt, test_depth: int
                  ) -> Optional[tuple[tirx.Stmt, list[tirx.Buffer]]]:
    """Every pixel of ``pixel_loop`` in pairs from its first (the last one alone where their count is odd): a
    pair inside the interior (``interior``: [low, high) of the pixel loop, in the rows where ``row_tests``
    hold) as ``mac.paired_pixel_body`` computes it, any other, one of whose windows overhangs the image, as
    ``mac.paired_windows`` does (both windows copied, the test once per tap at ``loops[test_depth]``); the lone
    pixel is ``branch``. With the scratch buffers the pairs use; None where the backend has no such pairs or
    either pair does not fit."""
    start, pixels = int(pixel_loop.min), int(pixel_loop.extent)
    if getattr(mac, "paired_windows", None) is None or pixels < 2:
        return None
    pixel = pixel_loop.loop_var
    inside = mac.paired_pixel_body(pixel_loop.body, _tap_read_as(tap, tap.guard.args[1], "_pair"), loops, first, pixel)
    if inside is None:
        return None
    # the interior pairs' scratch (if any) serves the border pairs too: never live at once
    on_border = _window_pairs(mac, tap, pixel_loop, loops, first, test_depth, inside[1][0] if inside[1] else None)
    if on_border is None:
        return None
    low, high = interior
    dtype = pixel.ty.dtype
    inside_pair = _conjunction([*row_tests, tirx.LE(tirx.const(low, dtype), pixel),
                                tirx.LT(pixel, tirx.const(high - 1, dtype))])
    starts, ends = mac.pair_tests(pixel, start, pixels // 2)
    pairs = tirx.IfThenElse(inside_pair, inside[0], on_border[0])
    return tirx.IfThenElse(starts, pairs, tirx.IfThenElse(tirx.Not(ends), branch, None)), [*inside[1], *on_border[1]]


def _windowed(mac: MacSchedules, tap: _GuardedTap, loops: list, first: int, test_depth: Optional[int],
              window: tirx.Buffer):
    """The copied-window form (``mac.windowed_border``: its ``copy``, ``reduction`` and ``call``) of a pixel whose loops below the pixel loop are
    ``loops`` (``loops[first]`` the first reduction loop, ``loops[test_depth]`` the innermost the guard's
    test reads, None inside the image); None where it does not fit."""
    try:
        return mac.windowed_border(tap.realize, tap.guard, loops, first, test_depth, window)
    except KeyError:
        return None  # an index form we do not evaluate: keep the loops as they are


def _with_window(pixel_body: tirx.Stmt, windowed) -> tirx.Stmt:
    """A pixel's statements with the window copied first and its reduction the helper's call."""
    return tirx.SeqStmt([windowed.copy, replace_stmt(pixel_body, windowed.reduction, windowed.call)])


def _border_regions(tap: _GuardedTap, mac: MacSchedules):
    """(the reduction's outermost loop, the branches it becomes: one per rectangle of pixels reading the
    same taps of the image, ``tvm_ext.schedule.border_regions``), or None where a conjunct of the test is not one pixel
    loop against one tap loop, the tap loops are not the reduction's, or there are more than MAX_REGIONS
    rectangles around an interior. Each rectangle's reduction runs the MAC helper over its box of image taps and
    adds the padding's products over the rest of the window (the guard's false value): the tests left at run time
    pick the rectangle, once per reduction (the accumulators' zeroing and the epilogue stay one copy)."""
    depth = {loop.loop_var: index for index, loop in enumerate(tap.loops)}
    pixel_of_tap: dict[int, int] = {}
    tap_conjuncts: dict[int, list] = {}
    for conjunct in tap.conjuncts:
        used = sorted(depth[var] for var in vars_read(conjunct) if var in depth)
        if len(used) != 2 or pixel_of_tap.setdefault(used[1], used[0]) != used[0]:
            return None
        tap_conjuncts.setdefault(used[1], []).append(conjunct)
    pixel_depths = sorted(set(pixel_of_tap.values()))
    innermost = pixel_depths[-1]
    start = _first_reduction_loop(tap.realize, tap.loops[innermost + 1:])
    if start is None:
        return None
    chain_depths = list(range(innermost + 1 + start, len(tap.loops)))
    chain = [tap.loops[d] for d in chain_depths]
    if not all(body.same_as(inner) for body, inner in zip([loop.body for loop in chain], [*chain[1:], tap.realize])):
        return None  # another statement between the reduction loops
    if not set(pixel_of_tap) <= set(chain_depths) or not all(
            isinstance(tap.loops[d].extent, tirx.IntImm) for d in [*pixel_depths, *chain_depths]):
        return None
    segments = []
    for pixel in pixel_depths:
        taps = sorted(t for t, p in pixel_of_tap.items() if p == pixel)
        found = pixel_segments(tap.loops[pixel], [(tap.loops[t], tap_conjuncts[t]) for t in taps])
        if found is None:
            return None
        choices = [(segment.end, dict(zip(taps, segment.taps))) for segment in found]
        segments.append((tap.loops[pixel].loop_var, choices))
    inside = _tap_read_as(tap, tap.guard.args[1], "_inside")
    padded = _tap_read_as(tap, tap.guard.args[2], "_padded")
    window = [(int(loop.min), int(loop.min) + int(loop.extent)) for loop in chain]

    def region(box: dict) -> tirx.Stmt:
        ranges = [box.get(d, full) for d, full in zip(chain_depths, window)]
        reduction = [_box_reduction(mac, chain, inside, ranges, window)]
        reduction += [_box_reduction(mac, chain, padded, outside, window) for outside in outside_boxes(ranges, window)]
        return _sequence(reduction)

    def select(level: int, box: dict) -> tirx.Stmt:
        if level == len(segments):
            return region(box)
        var, choices = segments[level]
        stmt = select(level + 1, {**box, **choices[-1][1]})
        for end, taps in reversed(choices[:-1]):
            below = tirx.LT(var, tirx.const(end, var.ty.dtype))
            stmt = tirx.IfThenElse(below, select(level + 1, {**box, **taps}), stmt)
        return stmt

    # whether the backend's later pass makes the border's rectangles one helper call: any other border keeps the
    # MAX_REGIONS bound
    image_types = frozenset(str(node.ty.dtype) for node in walk(tap.guard.args[1]) if isinstance(node, TensorLoad))
    collapses = getattr(mac, "collapses_border", None)
    collapsed = collapses is not None and collapses(image_types, tuple(end - first for first, end in window[:-1]))
    if prod(len(choices) for _, choices in segments) > MAX_REGIONS and not collapsed \
            and _has_interior(segments, window, chain_depths):
        return None
    return chain[0], select(0, {})


def _has_interior(segments: list, window: list, chain_depths: list) -> bool:
    """Whether some pixel reads its whole window from the image: a segment of every pixel loop whose taps
    inside are each tap loop's full range (``window``, per loop of ``chain_depths``)."""
    full = dict(zip(chain_depths, window))
    return all(any(all(taps[d] == full[d] for d in taps) for _, taps in choices) for _, choices in segments)


def _sequence(stmts: list) -> tirx.Stmt:
    """``stmts`` in order (TIR has no SeqStmt of one statement)."""
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _loop_nest(chain: list, realize: s_tir.SBlockRealize, ranges: list) -> tirx.Stmt:
    """The loops ``chain`` (outermost first) around ``realize``, each over its range of ``ranges``."""
    body = realize
    for loop, (first, end) in reversed(list(zip(chain, ranges))):
        body = tirx.For(loop.loop_var, first, end - first, loop.kind, body, loop.thread_binding, loop.annotations)
    return body


def _box_reduction(mac: MacSchedules, chain: list, realize: s_tir.SBlockRealize, box: list,
                   window: list) -> tirx.Stmt:
    """The reduction of ``realize`` (the image's taps, or the padding's: ``mac.replacement`` may have a helper for
    either) over ``box`` of the loops ``chain``: as the MAC helper's call where one fits (the loops shifted to
    start at 0, as the helper's replacement requires; a depthwise box smaller than the ``window`` calls the
    helper's out-of-line copy), else as loops."""
    shift = {loop.loop_var: loop.loop_var + first for loop, (first, _) in zip(chain, box) if first}
    shifted = s_tir.SBlockRealize([substitute_index(value, shift) for value in realize.iter_values],
                                  realize.predicate, realize.block)
    loops = [tirx.For(loop.loop_var, 0, end - first, loop.kind, tirx.Evaluate(0)) for loop, (first, end) in
             zip(chain, box)]
    return mac.replacement(shifted, loops, outlined_depthwise=box != window) or _loop_nest(chain, realize, box)


def _interior_range(loops: list, index: int, entries: list) -> Optional[tuple[int, int]]:
    """[low, high) of loop ``index`` where every conjunct of ``entries`` holds for every value of its tap
    loops, or None where that set is empty or not one range."""
    loop = loops[index]
    if not all(isinstance(loops[i].extent, tirx.IntImm) for i in [index, *(d for _, taps in entries for d in taps)]):
        return None
    inside = []
    for value in range(int(loop.min), int(loop.min) + int(loop.extent)):
        if all(_holds_for_every_tap(conjunct, loops, index, value, taps) for conjunct, taps in entries):
            inside.append(value)
    if not inside or inside[-1] - inside[0] + 1 != len(inside):
        return None
    return inside[0], inside[-1] + 1


def _holds_for_every_tap(conjunct, loops: list, index: int, value: int, taps: list[int]) -> bool:
    ranges = [range(int(loops[d].min), int(loops[d].min) + int(loops[d].extent)) for d in taps]
    for point in product(*ranges):
        values = {loops[index].loop_var: value}
        values.update((loops[d].loop_var, v) for d, v in zip(taps, point))
        if not holds(conjunct, values):
            return False
    return True


def _tap_read_as(tap: _GuardedTap, value, suffix: str) -> s_tir.SBlockRealize:
    """The update block with its guarded tap replaced by ``value`` (the guard's true or false value), named
    with ``suffix``."""
    block = tap.realize.block
    store = block.body
    product_ = store.value.b
    factors = [value if factor.same_as(tap.guard) else factor for factor in (product_.a, product_.b)]
    new_store = tirx.BufferStore(store.buffer, tirx.Add(store.value.a, tirx.Mul(*factors)), store.indices)
    new_block = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint + suffix, new_store,
                             block.init, block.alloc_buffers, block.match_buffers, block.annotations)
    return s_tir.SBlockRealize(tap.realize.iter_values, tap.realize.predicate, new_block)


def _helper_call(realize: s_tir.SBlockRealize, loops: list, mac: Optional[MacSchedules]):
    """(the loop a MAC helper's call replaces, that call) for the update block ``realize`` under its reduction
    ``loops`` (outermost first), or None where no helper of ``mac`` computes them."""
    if mac is None or not loops:
        return None
    # From the first reduction loop; where the window loops are all outside (one tap), the channel loop.
    start = _first_reduction_loop(realize, loops)
    start = len(loops) - 1 if start is None else start
    call = mac.replacement(realize, loops[start:])
    return None if call is None else (loops[start], call)


def _helper_fits(realize: s_tir.SBlockRealize, loops: list, mac: Optional[MacSchedules]) -> bool:
    """Whether a MAC helper of ``mac`` computes the update block ``realize`` under ``loops`` where it reads the
    image in place. Where none does (a window of several rows whose columns are not adjacent: a dilated
    convolution's), an interior pixel copies its window (``MacSchedules.windowed_border``), which the dual MAC
    reads as one run: measured on cortex-m4f, on a 16x16x16 image, 3x3 convolutions of dilation 2 (16 channels) and
    4 (12) and a 5x5 one of dilation 2 (8) 3.58, 2.70 and 2.72 -> 1.96, 2.01 and 2.09 instructions per MAC."""
    return _helper_call(realize, loops, mac) is not None


def _with_helper(stmt: tirx.Stmt, tap: _GuardedTap, realize: s_tir.SBlockRealize, loops: list,
                 mac: Optional[MacSchedules]) -> tirx.Stmt:
    """``stmt`` with the update block ``realize`` in place of the guarded one, and with ``mac`` its
    reduction ``loops`` (the loops below ``stmt``'s, outermost first) as a MAC helper's call where one fits."""
    found = _helper_call(realize, loops, mac)
    if found is not None:
        return replace_stmt(stmt, *found)
    return replace_stmt(stmt, tap.realize, realize)


def _border_taps(stmt: tirx.Stmt, tap: _GuardedTap, tap_depth: int, mac: Optional[MacSchedules]) -> tirx.Stmt:
    """``stmt`` (a border pixel's loops) with the test asked once per tap, at the innermost loop the test
    reads (``tap.loops[tap_depth]``), instead of once per multiply-accumulate: inside the image the tap's
    channels are read unguarded (through a MAC helper with ``mac``), outside they take the guard's
    false value."""
    tap_loop = tap.loops[tap_depth]
    condition = tap.conjuncts[0]
    for conjunct in tap.conjuncts[1:]:
        condition = tirx.And(condition, conjunct)
    inside = _with_helper(tap_loop.body, tap, _tap_read_as(tap, tap.guard.args[1], "_inside"),
                          tap.loops[tap_depth + 1:], mac)
    outside = replace_stmt(tap_loop.body, tap.realize, _tap_read_as(tap, tap.guard.args[2], "_padded"))
    return replace_stmt(stmt, tap_loop.body, tirx.IfThenElse(condition, inside, outside))


def _first_reduction_loop(realize: s_tir.SBlockRealize, loops: list) -> Optional[int]:
    """Index in ``loops`` of the outermost loop a reduction iteration variable of the block is bound to."""
    reduce_vars = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if iv.iter_type == tirx.IterVar.CommReduce:
            reduce_vars |= vars_read(tirx.Evaluate(value))  # the binding itself may be the variable
    for index, loop in enumerate(loops):
        if loop.loop_var in reduce_vars:
            return index
    return None
