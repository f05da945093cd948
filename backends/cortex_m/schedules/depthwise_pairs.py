"""On DSP cores, two interior depthwise pixels per call of the two-pixel fused tiles, where the saved instructions
pay for the code; else the one-pixel call stepping its tiles' pointers, where that pays.

After ``depthwise_tiles`` a depthwise kernel's pixel loops hold, per pixel, the one-pixel fused call
(``<prefix>_depthwise_tiles_s8x4w16``, inlined: constant sizes), alone or as ``if (tests to the interior) that call
else the border's``. ``depthwise_pair_calls`` takes one of those pixel loops (``v`` over ``E`` pixels) in steps of
two:

    for (v2 = 0; v2 < ceil(E / 2); ++v2)
        if (tests at 2 v2 && tests at 2 v2 + 1 [&& 2 v2 + 1 < E])  two-pixel call at 2 v2
        else for (v = 2 v2; v < min(2 v2 + 2, E); ++v)              the pixel as before

(without tests and E even: the two-pixel call alone). The two-pixel call is
``<prefix>_depthwise_pair_s8x4w16`` (``_b16``; ``backends.cortex_m.helpers.depthwise_mac_c``'s
``depthwise_pair.h.in``): the same window, weights and epilogue, the second pixel's outputs and inputs a constant
step further (``out_step``, ``x_step``: proved by TVM's integer analysis; a loop that steps backwards in memory
calls it at its second pixel; a second pixel one window row on runs its window's columns as rows: ``pair_form``),
both pixels' sums in an assembly block of twelve registers (one pixel's window after the other, so neither the
weights nor the input columns are loaded once for both: r7 and r9 may be reserved), each channel's multiplier and
shift loaded once for its two outputs. Measured on cortex-m4f (gcc 12.2
-O2) on a 3x3 window over 25x5x64: 256 instructions a pair's tile of four channels where two one-pixel tiles run
277 (PairCost).

Which loop, and whether at all, is the price of code's (``code_price.INSTRUCTIONS_PER_BYTE``): the pairs whose two
pixels both pass the tests (counted over the loops' whole iteration space, the tests evaluated there) times the
tiles times the instructions a pair's tile saves (PairCost) must exceed the code the two-pixel call adds at that
price, its window rows written out or one loop iteration each (``rolled``: less code, a few instructions more a
row), whichever pays more; times the kernel's calls per inference (``calls``: the bundle's choice,
``backends.cortex_m.schedules.dsp_bundle_choice``, schedules a kernel called several times again with its count;
a first schedule counts one call). The second pixel's outputs and inputs
are another pixel's of the same kernel and the same sums are computed for each: bit-exact.

Where no pairing pays, the one-pixel call becomes ``<prefix>_depthwise_tiles_stepped_s8x4w16`` (``_b16``;
``depthwise_tiles.h.in``): the same arguments and sums, its tile loop stepping the outputs', inputs', weights',
biases', multipliers' and shifts' pointers by a tile where the indexed call takes each as its base plus the tile's
channel offset through an empty asm (one induction variable, so that gcc keeps no six pointers across the taps):
inlined into the pixel loops, that form reloads the bases from the stack and adds the offset to each, some 14
instructions a tile besides the taps and the requantization, the stepped one some 7 (cortex-m4f, gcc 12.2 -O2,
kws_ref_model's 3x3 layer on 25x5x64: 123 and 116 instructions a tile). It pays where the interior's tile
iterations (its pixels, the tests evaluated as for the pairs, times the tiles, times the kernel's calls) times
the instructions saved exceed the code it adds at the code price, for windows of at most ``SteppedCost.max_taps``
taps (a wider one's pointers spill among its taps): ``SteppedCost``.

Measured on cortex-m4f with the fourteen-register block (both pixels' sums at once, which a build reserving r7
and r9 could not compile; instructions per inference; code B): efficientnet_lite_w030_112_int8 30,907,374 ->
30,385,869; 32,236 -> 34,940 (its 3x3 layers on 56x56x16 and 28x28x48 and its 5x5 layer on 14x14x96 paired along
their columns: 1,795,843 -> 1,563,768, 1,324,527 -> 1,176,206, 1,566,206 -> 1,425,097; its stack 532 -> 556 B: the
paired kernels' frames, 136 -> 184, 136 -> 176 and 152 -> 184 B, under the border helper's call); on the other
shared and zoo models no layer's pairs pay for their code (the largest candidates: mobilenet_v2_050_64_int8's 3x3
on 16x16x96 and vww_96_int8's on 48x48x8, some 87,000 instructions for about 1,050 B): one pixel per call.
With every pair taken (no price), kws_ref_model 4,358,862 ->
4,277,086 instructions, code 4,380 -> 5,428 B, arena 9,344 -> 9,664 B (the planner keeps its 3x3 layer's output
a row further from its input where a call reads the next row's window). With the twelve-register block (main at
63fc4be -> it; cortex-m4f, bench_speed): efficientnet_lite_w030_112_int8 29,162,872 -> 29,632,828 instructions, code
33,984 -> 31,504 B (fewer layers' pairs pay: 21 instructions a 3x3 tile pair), its 3x3 layer on 56x56x16
1,462,181 -> 1,663,909.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np
import tvm
from tvm import s_tir, tirx
from tvm.sym import Analyzer

from backends.bias_forms import BIAS_TYPES, by_bias
from backends.cortex_m.helpers import DEPTHWISE_PAIR_HELPERS
from backends.cortex_m.helpers.depthwise_mac_c import dsp_depthwise_pair_helper_name
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import _region, call_of, flat_offset, pointee
from backends.cortex_m.schedules.depthwise_tiles import DSP_TILES_STEPPED_OPS, DSP_TILES_W16_OPS, FUSED_ARGS
from backends.cortex_m.schedules.dual_mac import _whole
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import map_leaves, walk, with_root_loops_replaced

PAIR_OPS = by_bias("tvm_ext.depthwise_pair_s8x4w16")
"""The two-pixel fused tiles' op per bias type: the one-pixel call's arguments (``depthwise_tiles.FUSED_ARGS``),
then out_step, x_step (elements: the second pixel's outputs and inputs from the first's) and rolled (0 or 1)."""
PAIR_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(2, Arg(14)), Axis(Arg(13), 1))),
    PointerAccess(1, (Axis(2, Arg(15)), Axis(Arg(11), Arg(7)), Axis(Arg(12), Arg(8)), Axis(Arg(13), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(9)), Axis(Arg(12), Arg(10)), Axis(Arg(13), 1))),
    *(PointerAccess(pointer, (Axis(Arg(13), 1),)) for pointer in (3, 4, 5)),
))
for _bias in BIAS_TYPES:
    register_helper_call(PAIR_OPS[_bias], DEPTHWISE_PAIR_HELPERS,
                         functools.partial(dsp_depthwise_pair_helper_name, bias=_bias), PAIR_ACCESS)

MAX_GRID = 1 << 16
"""The most iterations of a kernel's pixel loops over which the tests are evaluated (a larger kernel is left as
it is)."""


@dataclass(frozen=True)
class PairCost:
    """What a two-pixel call costs and saves on a DSP core against two one-pixel calls (bytes of code, instructions
    per inference), for a window of ``rows`` x ``cols`` taps as the pair's helper runs it (``pair_form``; the
    block takes twelve registers: its two pixels' windows one after the other, so neither the weights nor the
    columns are shared, and shared columns cost as any). Measured on cortex-m4f (arm-none-eabi-gcc 12.2
    -O2, a 3x3 window over a 25x5x64 input, one tile of four channels as a function, static count): two one-pixel
    tiles 277 instructions, a pair's tile 256 (the fourteen-register block's: 253, 235 with shared columns); the
    kernel's code 1,112 B more with the fourteen-register pair's call (not shared, rows written out)."""

    window_instruction_bytes: int = 4
    """Bytes per instruction of the pair's window (its SMLA<x><y>, SXTB16 and LDRD are 32-bit encodings)."""
    base_bytes: int = 616
    """The pair's code besides its window: the biases, pointers, both pixels' requantization, the tile loop, the
    pixel loop's tests and the one-pixel branch around it (580 measured with the fourteen-register block, 9
    instructions more for the second pass's pointers and biases and the first pixel's two sums through memory)."""
    single_tap_bytes: int = 26
    single_base_bytes: int = 300
    """The one-pixel call's inlined code (per tap and besides), gone where every pixel is in a pair."""
    saved_base: int = 21
    """Instructions a pair's tile saves (its window's as many as two one-pixel tiles': the tile loop's, the
    multipliers' and shifts' loads once for two pixels, less the second pass's setup)."""
    rolled_row: int = 8
    rolled_tile: int = 4
    """Instructions more per row and per tile of a pair's tile that loops over its rows (each pixel's pass)."""

    def window_instructions(self, rows: int, cols: int, rolled: bool) -> int:
        """The instructions of the pair's window as code (``depthwise_pair.h.in``'s assembly block): per pixel
        8 per tap; one row's where ``rolled``, and its loop, per pixel."""
        return 2 * (8 * cols + 6) if rolled else 2 * rows * 8 * cols

    def bytes_added(self, rows: int, cols: int, rolled: bool, replaces_single: bool) -> int:
        """The kernel's code more with the pair's call (bytes)."""
        added = self.window_instruction_bytes * self.window_instructions(rows, cols, rolled) + self.base_bytes
        if replaces_single:
            added -= self.single_tap_bytes * rows * cols + self.single_base_bytes
        return added

    def saved(self, rows: int, cols: int, rolled: bool) -> int:
        """Instructions a pair's tile of four channels saves against two one-pixel tiles (8 a tap each, as the
        pair's per pixel): those besides the window; less the rows' loops where ``rolled``."""
        return self.saved_base - (self.rolled_row * rows + self.rolled_tile if rolled else 0)


PAIR_COST = PairCost()


@dataclass(frozen=True)
class SteppedCost:
    """What the one-pixel call with its tile's pointers stepped on (``depthwise_tiles.DSP_TILES_STEPPED_OPS``)
    saves against the indexed one (instructions per tile iteration of an interior pixel) and adds to the kernel's
    code (bytes), for windows of at most ``max_taps`` taps. Measured on cortex-m4f (arm-none-eabi-gcc 12.2 -O2, every
    interior call stepped, per call): kws_ref_model's 3x3 layer on 25x5x64 272,481 -> 263,833 instructions (1,104
    interior tile iterations: 7.8 each), vww_96_int8's on 6x6x128 163,858 -> 159,934 (512: 7.7),
    str_ww_ref_model's 3x1 on 28x1x40 22,168 -> 20,014 (280: 7.7), its 10x1 on 15x1x128 73,577 -> 69,908 (480:
    7.6); its 15x1 one (32) 6,196 -> 6,134 and efficientnet_lite_w030_112_int8's 5x5 ones on 7x7x192 791,046 ->
    791,868 (25 taps: the pointers then spill among the taps). Each kernel's code 4-40 B more (vww_96_int8's
    kernels 4-22, str_ww_ref_model's 22-40, kws_ref_model's 16)."""

    saved_per_tile: int = 7
    bytes_added: int = 40
    max_taps: int = 10

    def pays(self, taps: int, interior_tiles: int, instructions_per_byte: int) -> bool:
        """Whether a kernel of a window of ``taps`` taps and ``interior_tiles`` interior tile iterations (per
        inference: every call of the kernel) saves more than its code costs at ``instructions_per_byte``."""
        return taps <= self.max_taps \
            and interior_tiles * self.saved_per_tile > self.bytes_added * instructions_per_byte


STEPPED_COST = SteppedCost()

_STEPPED_OP = {DSP_TILES_W16_OPS[bias]: DSP_TILES_STEPPED_OPS[bias] for bias in DSP_TILES_W16_OPS}
"""The stepped form's op of each one-pixel fused call's op (one per bias type)."""


@dataclass(frozen=True)
class _Leaf:
    """A pixel's statement: the one-pixel fused call (``realize``, its ``call``), alone or the then branch of
    ``test`` (``other`` the else branch)."""

    realize: s_tir.SBlockRealize
    call: tvm.ir.Call
    test: Optional[tirx.PrimExpr]
    other: Optional[tirx.Stmt]


def _leaf(stmt: tirx.Stmt) -> Optional[_Leaf]:
    """``stmt`` as a pixel's statement of the module docstring's form, else None."""
    ops = tuple(DSP_TILES_W16_OPS.values())
    call = call_of(stmt, ops)
    if call is not None:
        return _Leaf(stmt, call, None, None)
    if isinstance(stmt, tirx.IfThenElse) and stmt.else_case is not None:
        call = call_of(stmt.then_case, ops)
        if call is not None:
            return _Leaf(stmt.then_case, call, stmt.condition, stmt.else_case)
    return None


def _evaluate(expr, values: dict):
    """``expr`` (a position test or index) at every point of the grid ``values`` (loop variable -> array); raises
    KeyError for a node kind it does not evaluate."""
    operators = {tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply, tirx.FloorDiv: np.floor_divide,
                 tirx.FloorMod: np.mod, tirx.Min: np.minimum, tirx.Max: np.maximum, tirx.LT: np.less,
                 tirx.LE: np.less_equal, tirx.GT: np.greater, tirx.GE: np.greater_equal, tirx.EQ: np.equal,
                 tirx.NE: np.not_equal, tirx.And: np.logical_and, tirx.Or: np.logical_or}
    if isinstance(expr, tirx.Var):
        return values[expr]
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if type(expr) in operators:
        return operators[type(expr)](_evaluate(expr.a, values), _evaluate(expr.b, values))
    if isinstance(expr, tirx.Not):
        return np.logical_not(_evaluate(expr.a, values))
    if isinstance(expr, tirx.Cast):
        return np.asarray(_evaluate(expr.value, values)).astype(np.int64)
    if isinstance(expr, tirx.Select):
        return np.where(_evaluate(expr.condition, values), _evaluate(expr.true_value, values),
                        _evaluate(expr.false_value, values))
    if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op) and len(expr.args) == 1:
        return _evaluate(expr.args[0], values)  # the likely marker: its argument
    raise KeyError(type(expr).__name__)


def _step(analyzer: Analyzer, arg, var: tirx.Var) -> Optional[int]:
    """The constant element distance from the element ``arg`` points at with ``var`` to the one with ``var + 1``,
    else None."""
    load = pointee(arg)
    if load is None:
        return None
    offset = flat_offset(load)
    step = analyzer.simplify(map_leaves(offset, lambda n: var + 1 if n.same_as(var) else n) - offset)
    return int(step.value) if isinstance(step, tirx.IntImm) else None


def fits(rows: int, cols: int, x_row: int, x_col: int, w_row: int, w_col: int, x_step: int) -> bool:
    """Whether the pair's assembly block takes a window of these sizes and strides (elements) and input step
    (``depthwise_pair.h.in``'s ``<prefix>_depthwise_pair_fits``): its loads' immediates."""
    return 1 <= rows <= 255 and 1 <= cols <= 255 and x_step >= 0 and x_col >= 0 \
        and (cols - 1) * x_col + x_step <= 4095 and cols * x_col <= 4095 and 0 <= x_row <= 65535 \
        and 0 <= w_col <= 510 and w_col % 2 == 0 and abs((w_row - cols * w_col) * 2) <= 4095


def pair_form(sizes: dict, x_step: int) -> Optional[tuple[int, int]]:
    """(rows, cols) of the window (``FUSED_ARGS``' sizes) as the pair's helper runs it for a second pixel
    ``x_step`` elements on: its columns as rows where that pixel is one window row on; None where the assembly
    block does not take it."""
    rows, cols, x_row, x_col, w_row, w_col = (sizes[name] for name in (
        "rows", "cols", "x_row_stride", "x_col_stride", "w_row_stride", "w_col_stride"))
    if x_step == x_row != x_col and rows > 1 and fits(cols, rows, x_col, x_row, w_col, w_row, x_step):
        return cols, rows
    if fits(rows, cols, x_row, x_col, w_row, w_col, x_step):
        return rows, cols
    return None


@dataclass(frozen=True)
class _Choice:
    """A pairing of one pixel loop: the loop (its index in the nest), the steps, the rows' form and the gain (the
    instructions saved less the code's price)."""

    index: int
    out_step: int
    x_step: int
    rolled: bool
    gain: int
    reversed: bool = False
    """Whether the loop steps its pixels backwards in memory (kws_ref_model's rows: ``24 - y``): the call's first
    pixel is then the pair's second one (both steps positive)."""


def _choice(nest: list[tirx.For], leaf: _Leaf, cost: PairCost, instructions_per_byte: int, calls: int) \
        -> Optional[_Choice]:
    """The best-paying pairing of a loop of ``nest`` (a perfect nest around ``leaf``) in a kernel called ``calls``
    times per inference, None where none pays."""
    sizes = {name: leaf.call.args[index] for name, index in FUSED_ARGS.items()
             if name not in ("out", "x", "w", "bias", "multiplier", "shift", "zero_point")}
    if not all(isinstance(size, tirx.IntImm) for size in sizes.values()) \
            or not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm)
                       and int(loop.min) == 0 for loop in nest):
        return None
    sizes = {name: int(size) for name, size in sizes.items()}
    extents = [int(loop.extent) for loop in nest]
    if sizes["channels"] % 4:
        return None
    passes = _interior(nest, leaf)
    if passes is None:
        return None
    analyzer = Analyzer()
    for loop in nest:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    best = None
    for index, loop in enumerate(nest):
        extent = extents[index]
        out_step = _step(analyzer, leaf.call.args[FUSED_ARGS["out"]], loop.loop_var)
        x_step = _step(analyzer, leaf.call.args[FUSED_ARGS["x"]], loop.loop_var)
        if out_step is None or x_step is None:
            continue
        reversed_ = out_step < 0 and x_step < 0
        out_step, x_step = (-out_step, -x_step) if reversed_ else (out_step, x_step)
        form = pair_form(sizes, x_step)
        if extent < 2 or out_step < sizes["channels"] or form is None:
            continue
        rows, cols = form
        firsts = np.take(passes, np.arange(0, extent - 1, 2), axis=index)
        seconds = np.take(passes, np.arange(1, extent, 2), axis=index)
        pairs = int(np.count_nonzero(firsts & seconds))
        replaces_single = leaf.test is None and extent % 2 == 0
        for rolled in (False, True):
            if rolled and rows == 1:
                continue
            saved = calls * pairs * sizes["channels"] // 4 * cost.saved(rows, cols, rolled)
            gain = saved - instructions_per_byte * cost.bytes_added(rows, cols, rolled, replaces_single)
            # on a tie the inner loop: its second pixel's window one pixel on, not a row (the planner's gap between a
            # layer's output and its input, where they overlap, grows by the window's read-ahead)
            if gain > 0 and (best is None or (gain, index) > (best.gain, best.index)):
                best = _Choice(index, out_step, x_step, rolled, gain, reversed_)
    return best


def _interior(nest: list[tirx.For], leaf: _Leaf) -> Optional[np.ndarray]:
    """Whether each pixel of the loops ``nest`` (constant extents, from 0) runs ``leaf``'s call (its tests passed),
    over their whole iteration space; None where that is over MAX_GRID pixels or a test is not evaluated."""
    extents = [int(loop.extent) for loop in nest]
    if int(np.prod(extents)) > MAX_GRID:
        return None
    grid = np.meshgrid(*(np.arange(extent) for extent in extents), indexing="ij")
    values = {loop.loop_var: axis for loop, axis in zip(nest, grid)}
    try:
        return np.broadcast_to(_evaluate(leaf.test, values), grid[0].shape) if leaf.test is not None \
            else np.ones(grid[0].shape, dtype=bool)
    except KeyError:
        return None


def _stepped(nest: list[tirx.For], leaf: _Leaf, cost: SteppedCost, instructions_per_byte: int, calls: int) \
        -> Optional[tirx.Stmt]:
    """``nest`` around ``leaf`` with its one-pixel call stepping its tiles' pointers (``SteppedCost``) where that
    pays in a kernel called ``calls`` times per inference, else None."""
    args = leaf.call.args
    sizes = [args[FUSED_ARGS[name]] for name in ("rows", "cols", "channels")]
    if not all(isinstance(size, tirx.IntImm) for size in sizes) \
            or not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm)
                       and int(loop.min) == 0 for loop in nest):
        return None
    rows, cols, channels = (int(size) for size in sizes)
    passes = _interior(nest, leaf)
    if passes is None or not cost.pays(rows * cols, calls * int(np.count_nonzero(passes)) * (channels // 4),
                                       instructions_per_byte):
        return None
    block = leaf.realize.block
    call = tirx.Evaluate(tirx.call_intrin("int32", _STEPPED_OP[leaf.call.op.name], *args))
    stmt = s_tir.SBlockRealize(leaf.realize.iter_values, leaf.realize.predicate,
                               s_tir.SBlock([], block.reads, block.writes, block.name_hint, call))
    if leaf.test is not None:
        stmt = tirx.IfThenElse(leaf.test, stmt, leaf.other)
    for outer in reversed(nest):
        stmt = tirx.For(outer.loop_var, outer.min, outer.extent, outer.kind, stmt, outer.thread_binding,
                        outer.annotations)
    return stmt


def _pair_block(leaf: _Leaf, first, choice: _Choice, var: tirx.Var) -> s_tir.SBlockRealize:
    """The two-pixel call block of ``leaf``'s call with ``var`` at ``first``."""
    call = map_leaves(leaf.call, lambda n: first if n.same_as(var) else n)
    bias = pointee(call.args[FUSED_ARGS["bias"]])
    op = PAIR_OPS["int16" if str(bias.source.dtype) == "int16" else "int32"]
    args = [*call.args, tirx.const(choice.out_step, "int32"), tirx.const(choice.x_step, "int32"),
            tirx.const(int(choice.rolled), "int32")]
    reads = [_whole(pointee(call.args[FUSED_ARGS[name]]).source)
             for name in ("x", "w", "bias", "multiplier", "shift")]
    out = pointee(call.args[FUSED_ARGS["out"]])
    total = choice.out_step + int(call.args[FUSED_ARGS["channels"]])
    block = s_tir.SBlock([], reads, [_region(out, total)], "depthwise_pair",
                         tirx.Evaluate(tirx.call_intrin("int32", op, *args)))
    return s_tir.SBlockRealize([], True, block)


def _paired(nest: list[tirx.For], leaf: _Leaf, choice: _Choice) -> tirx.Stmt:
    """``nest`` around ``leaf`` with the chosen loop in steps of two pixels (the module docstring's form)."""
    loop = nest[choice.index]
    var, extent = loop.loop_var, int(loop.extent)
    dtype = str(var.ty.dtype)
    pair_var = tirx.Var(f"{var.name}_pair", dtype)
    first = pair_var * tirx.const(2, dtype)
    second = first + tirx.const(1, dtype)
    pair = _pair_block(leaf, second if choice.reversed else first, choice, var)
    tests = []
    if leaf.test is not None:
        tests = [map_leaves(leaf.test, lambda n, at=at: at if n.same_as(var) else n) for at in (first, second)]
    if extent % 2:
        tests.append(tirx.LT(second, tirx.const(extent, dtype)))
    body = leaf.realize if leaf.test is None else tirx.IfThenElse(leaf.test, leaf.realize, leaf.other)
    if tests:
        count = tirx.const(2, dtype) if extent % 2 == 0 else tirx.Min(tirx.const(2, dtype),
                                                                     tirx.const(extent, dtype) - first)
        single = tirx.For(var, first, count, tirx.ForKind.SERIAL, body)
        stmt = tirx.IfThenElse(functools.reduce(tirx.And, tests), pair, single)
    else:
        stmt = pair
    for index in range(len(nest) - 1, -1, -1):
        outer = nest[index]
        if index == choice.index:
            stmt = tirx.For(pair_var, tirx.const(0, dtype), tirx.const((extent + 1) // 2, dtype), outer.kind, stmt,
                            outer.thread_binding, outer.annotations)
        else:
            stmt = tirx.For(outer.loop_var, outer.min, outer.extent, outer.kind, stmt, outer.thread_binding,
                            outer.annotations)
    return stmt


def _pairs_call(loop: tirx.For, cost: PairCost, stepped: SteppedCost, instructions_per_byte: int, calls: int) \
        -> Optional[tirx.Stmt]:
    """``loop``, the outermost of a perfect nest of pixel loops around a pixel's statement of the module
    docstring's form, with its best-paying pixel loop in steps of two, else its one-pixel call stepped where that
    pays (its kernel called ``calls`` times per inference), else None."""
    nest = [loop]
    while isinstance(nest[-1].body, tirx.For):
        nest.append(nest[-1].body)
    leaf = _leaf(nest[-1].body)
    if leaf is None:
        return None
    pairable = leaf.other is None or not any(isinstance(node, tirx.For) for node in walk(leaf.other))
    choice = _choice(nest, leaf, cost, instructions_per_byte, calls) if pairable else None
    return _paired(nest, leaf, choice) if choice is not None \
        else _stepped(nest, leaf, stepped, instructions_per_byte, calls)


def depthwise_pair_calls(func: tirx.PrimFunc, calls: int = 1, cost: PairCost = PAIR_COST,
                         stepped: SteppedCost = STEPPED_COST,
                         instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> tirx.PrimFunc:
    """``func`` (a DSP kernel after ``depthwise_tiles``' calls, called ``calls`` times per inference) with the pixel
    loops around its one-pixel fused calls in steps of two pixels where that pays, else those calls stepping their
    tiles' pointers where that pays (the module docstring); any other function unchanged."""
    return with_root_loops_replaced(func, lambda loop: _pairs_call(loop, cost, stepped, instructions_per_byte, calls))


def priced_per_call(func: tirx.PrimFunc) -> bool:
    """Whether ``func`` (a DSP kernel scheduled) has a depthwise pixel's call whose form ``depthwise_pair_calls``
    chose from the kernel's calls per inference: the one-pixel fused call, its stepped form or the pair's."""
    ops = {*DSP_TILES_W16_OPS.values(), *DSP_TILES_STEPPED_OPS.values(), *PAIR_OPS.values()}
    return any(isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name in ops
               for node in walk(func.body))
