"""On Helium cores, a depthwise pixel's loop over its 16-channel tiles as one call of the fused depthwise helper.

After Helium's depthwise schedule (``helium_depthwise``) and the epilogue calls (``requantize_epilogue``), one
output pixel of an int8 DEPTHWISE_CONV_2D runs a loop over its channel tiles whose iteration zeroes the tile's
accumulators (16 or 8), adds the window's products (``<prefix>_depthwise_mac_s8x16``: an interior pixel; a padded
layer's border pixels take clipped windows and padding products under tests of the pixel's position that do
not depend on the tile) and requantizes them (``<prefix>_requantize_s8``). The accumulators go through memory
three times per tile: zeroed, loaded and stored by the MAC helper (VLD2/VST2), reloaded with the biases by the
epilogue (kws_ref_model's interior 16-channel tile: about 35 of its 278 instructions).
``depthwise_tiles_calls`` replaces such a loop by its tree of position tests (hoisted out of the tile loop:
they do not read the tile's variable) whose every leaf is one fused call: ``<prefix>_depthwise_tiles_s8`` for a
window call alone, ``<prefix>_depthwise_border_s8`` for a (clipped) window call and up to PADDING_BOXES padding
calls of one value (``_b16``: int16 biases; ``backends.cortex_m.helpers.helium_c``'s ``helium_depthwise16.h.in``),
whose tiles start their four vector accumulators at the biases and requantize them from the registers.
Where some leaf does not fit (more padding boxes), only the interior's: ``if (the tests that lead to it) fused
call; else the loop`` with that leaf made empty in the loop (no pixel reaching the else branch runs it).
kws_ref_model's 3x3 layers on cortex-m55: 159,001 -> 122,932 instructions each (code 6,432 -> 10,772 B: the
border cases' straight-line taps).

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) each iteration is,
in this order: stores of zero into exactly the accumulators the epilogue reads, the window and padding calls
on them (under position tests not reading the tile's variable), one requantization (int32 or int16 biases)
of those channels; the inputs, weights (the padding boxes' too), outputs, biases, multipliers and shifts all
move one tile's channels per tile, and each call's sizes are constants. The accumulators are written and read
only inside one iteration, so leaving them out changes no output: the same integer sums (acc + bias and the
padding's value times a box's weights wrap as int32 either way), bit-exact.
"""

from __future__ import annotations

import functools
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad
from tvm.sym import Analyzer

from backends.cortex_m.helpers.helium_c import depthwise_tiles_helper_name
from backends.cortex_m.schedules.conv_tiles import _call_of, _flat, _pointee, _region, _zeroed
from backends.cortex_m.schedules.dual_mac import _whole, register_mac_helper
from backends.cortex_m.schedules.helium_depthwise import BOX_OP, MAC_OP, PAD_OP
from backends.cortex_m.schedules.requantize_epilogue import REQUANTIZE_S8_OPS
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.tir_walk import map_leaves, walk, with_root_loops_replaced

DEPTHWISE_TILES_OPS = {"int32": "tvm_ext.depthwise_tiles_s8", "int16": "tvm_ext.depthwise_tiles_s8_b16"}
"""The fused helper's op per bias type (the epilogue's, ``requantize_epilogue.REQUANTIZE_S8_OPS``)."""
# (out, x, w, bias, multiplier, shift, zero_point, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows,
# cols, channels): out and the epilogue's constants `channels` elements; x[r * x_row_stride + k * x_col_stride + c]
# and w[r * w_row_stride + k * w_col_stride + c] for r < rows, k < cols, c < channels.
DEPTHWISE_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(13), 1),)),
    PointerAccess(1, (Axis(Arg(11), Arg(7)), Axis(Arg(12), Arg(8)), Axis(Arg(13), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(9)), Axis(Arg(12), Arg(10)), Axis(Arg(13), 1))),
    *(PointerAccess(pointer, (Axis(Arg(13), 1),)) for pointer in (3, 4, 5)),
))
BORDER_OPS = {"int32": "tvm_ext.depthwise_border_s8", "int16": "tvm_ext.depthwise_border_s8_b16"}
"""A border pixel's fused helper per bias type: the tiles' arguments, then two padding boxes and their value."""
# (out, x, w, bias, multiplier, shift, zero_point, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows,
# cols, pad0, pad_rows0, pad_cols0, pad1, pad_rows1, pad_cols1, value, channels): as the tiles' call, and
# pad_i[r * w_row_stride + k * w_col_stride + c] for r < pad_rows_i, k < pad_cols_i, c < channels.
BORDER_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(20), 1),)),
    PointerAccess(1, (Axis(Arg(11), Arg(7)), Axis(Arg(12), Arg(8)), Axis(Arg(20), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(9)), Axis(Arg(12), Arg(10)), Axis(Arg(20), 1))),
    *(PointerAccess(pointer, (Axis(Arg(20), 1),)) for pointer in (3, 4, 5)),
    *(PointerAccess(pointer, (Axis(Arg(pointer + 1), Arg(9)), Axis(Arg(pointer + 2), Arg(10)), Axis(Arg(20), 1)))
      for pointer in (13, 16)),
))
PADDING_BOXES = 2
"""The most padding calls a border pixel's fused call takes (a 3x3 window's corner has two)."""
for _bias, _op in DEPTHWISE_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(depthwise_tiles_helper_name, bias=_bias), DEPTHWISE_TILES_ACCESS)
for _bias, _op in BORDER_OPS.items():
    register_mac_helper(_op, functools.partial(depthwise_tiles_helper_name, bias=_bias, border=True), BORDER_ACCESS)


def _uses(expr, var) -> bool:
    """Whether ``expr`` reads the variable ``var``."""
    return any(node.same_as(var) for node in walk(expr))


def _leaves(stmt: tirx.Stmt, var, conditions: tuple = ()) -> Optional[list[tuple[tirx.Stmt, tuple]]]:
    """The leaves of ``stmt``, a tree of position tests not reading ``var`` (itself a leaf when it is no test),
    each with the tests that lead to it (a test's negation for its else branch); None where a test reads
    ``var`` or has no else branch."""
    if not isinstance(stmt, tirx.IfThenElse):
        return [(stmt, conditions)]
    # a test without an else branch: its other pixels' outputs are the loop's, which no leaf would write
    if _uses(stmt.condition, var) or stmt.else_case is None:
        return None
    then = _leaves(stmt.then_case, var, (*conditions, stmt.condition))
    other = _leaves(stmt.else_case, var, (*conditions, tirx.Not(stmt.condition)))
    return None if then is None or other is None else then + other


def _with_leaves(stmt: tirx.Stmt, replace) -> tirx.Stmt:
    """``stmt`` (``_leaves``'s tree) with each leaf ``replace(leaf)``."""
    if isinstance(stmt, tirx.IfThenElse):
        return tirx.IfThenElse(stmt.condition, _with_leaves(stmt.then_case, replace),
                               _with_leaves(stmt.else_case, replace))
    return replace(stmt)


def _calls(leaf: tirx.Stmt) -> list[Optional[tvm.ir.Call]]:
    """The helper calls of ``leaf`` (one call block, or a sequence of them), None for any other statement."""
    stmts = list(leaf.seq) if isinstance(leaf, tirx.SeqStmt) else [leaf]
    return [_call_of(stmt, (MAC_OP, BOX_OP, PAD_OP)) for stmt in stmts]


class _Tiles:
    """A depthwise tile loop's common parts: its requantization, the analysis over the enclosing loops."""

    def __init__(self, loop: tirx.For, enclosing: tuple, requantization: tvm.ir.Call, channels: int) -> None:
        self.loop, self.requantization, self.channels = loop, requantization, channels
        self.analyzer = Analyzer()
        for outer in (*enclosing, loop):
            self.analyzer.bind(outer.loop_var, tvm.ir.Range.from_min_extent(outer.min, outer.extent))
        self.total = int(loop.extent) * channels
        self.bias_type = next(bias for bias, op in REQUANTIZE_S8_OPS.items() if op == requantization.op.name)

    def constant(self, expr) -> Optional[int]:
        value = self.analyzer.simplify(expr)
        return int(value.value) if isinstance(value, tirx.IntImm) else None

    def step(self, load: TensorLoad, var) -> Optional[int]:
        """How far ``load`` moves per step of ``var``."""
        following = map_leaves(_flat(load), lambda n: n + 1 if n.same_as(var) else n)
        return self.constant(following - _flat(load))

    def address(self, arg):
        """``arg`` at the first tile."""
        tile = self.loop.loop_var
        return map_leaves(arg, lambda n: tirx.const(0, str(tile.ty.dtype)) if n.same_as(tile) else n)

    def moves_one_tile(self, arg) -> bool:
        """Whether the element ``arg`` points at moves one tile's channels per tile."""
        load = _pointee(arg)
        return load is not None and self.step(load, self.loop.loop_var) == self.channels

    def fused(self, leaf: tirx.Stmt, acc: TensorLoad) -> Optional[s_tir.SBlockRealize]:
        """The fused call computing ``leaf`` (a window call, then up to PADDING_BOXES padding calls, all on the
        accumulators ``acc`` over the tile's channels) and the requantization, or None."""
        calls = _calls(leaf)
        if not calls or None in calls or calls[0].op.name not in (MAC_OP, BOX_OP) \
                or any(call.op.name != PAD_OP for call in calls[1:]) or len(calls) > 1 + PADDING_BOXES:
            return None
        mac, pads = calls[0], calls[1:]
        sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[3:]]
        requantization = self.requantization
        if None in sizes or sizes[-1] != self.channels:
            return None
        for call in (mac, *pads):
            target = _pointee(call.args[0])
            if target is None or not target.source.same_as(acc.source) \
                    or self.constant(_flat(target) - _flat(acc)) != 0:
                return None
        pad_args = []
        for pad in pads:  # (acc, w, w_row_stride, w_col_stride, rows, cols, value, channels)
            if any(not isinstance(arg, tirx.IntImm) for arg in pad.args[2:]) or int(pad.args[7]) != self.channels \
                    or int(pad.args[2]) != sizes[2] or int(pad.args[3]) != sizes[3] \
                    or int(pad.args[6]) != int(pads[0].args[6]) or not self.moves_one_tile(pad.args[1]):
                return None
            pad_args += [self.address(pad.args[1]), pad.args[4], pad.args[5]]
        if not all(self.moves_one_tile(arg) for arg in (*mac.args[1:3], requantization.args[0],
                                                         *requantization.args[2:5])):
            return None
        start = self.address(requantization.args[0])
        args = [start, self.address(mac.args[1]), self.address(mac.args[2]),
                *(self.address(arg) for arg in requantization.args[2:5]), requantization.args[5], *sizes[:-1]]
        if mac.op.name == MAC_OP and not pads:
            op = DEPTHWISE_TILES_OPS[self.bias_type]
        else:
            while len(pad_args) < 3 * PADDING_BOXES:  # an absent box: no rows
                pad_args += [self.address(mac.args[2]), tirx.const(0, "int32"), tirx.const(0, "int32")]
            value = pads[0].args[6] if pads else tirx.const(0, "int32")
            args += [*pad_args, value]
            op = BORDER_OPS[self.bias_type]
        call = tirx.call_intrin("int32", op, *args, self.total)
        loads = [_pointee(arg) for arg in (*mac.args[1:3], *requantization.args[2:5], *(p.args[1] for p in pads))]
        reads = [_whole(load.source) for load in loads]
        block = s_tir.SBlock([], reads, [_region(_pointee(start), self.total)], "depthwise_tiles", tirx.Evaluate(call))
        return s_tir.SBlockRealize([], True, block)


def depthwise_tiles_call(loop: tirx.For, enclosing: tuple) -> Optional[tirx.Stmt]:
    """The fused calls computing what ``loop`` (inside the loops ``enclosing``) computes: its tree of position
    tests with every leaf a fused call, else ``if (tests to the interior) fused call else loop`` with that leaf
    empty; None where ``loop`` is not a loop over depthwise tiles of the module docstring's form."""
    if not isinstance(loop.extent, tirx.IntImm) or not isinstance(loop.min, tirx.IntImm) or int(loop.min) != 0:
        return None
    stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else []
    if len(stmts) < 3:
        return None
    tile = loop.loop_var
    leaves = _leaves(stmts[-2], tile)
    requantization = _call_of(stmts[-1], tuple(REQUANTIZE_S8_OPS.values()))
    if leaves is None or requantization is None or not isinstance(requantization.args[6], tirx.IntImm):
        return None
    read = _pointee(requantization.args[1])
    zeroed = [_zeroed(stmt, read.source) if read is not None else None for stmt in stmts[:-2]]
    if any(part is None for part in zeroed):
        return None
    zeroed = [store for part in zeroed for store in part]
    channels = int(requantization.args[6])
    tiles = _Tiles(loop, enclosing, requantization, channels)
    # the zeroed accumulators: exactly those the epilogue reads (one store in a loop of `channels` lanes, its
    # other loops of one)
    if len(zeroed) != 1:
        return None
    store, lanes = zeroed[0]
    for inner in lanes:
        tiles.analyzer.bind(inner.loop_var, tvm.ir.Range.from_min_extent(inner.min, inner.extent))
    if not lanes or any(int(inner.extent) != 1 for inner in lanes[:-1]) or int(lanes[-1].extent) != channels:
        return None
    lane = lanes[-1].loop_var
    at_lane0 = map_leaves(_flat(store), lambda n: tirx.const(0, str(n.ty.dtype)) if n.same_as(lane) else n)
    if not store.source.same_as(read.source) or tiles.constant(at_lane0 - _flat(read)) != 0 \
            or tiles.step(store, lane) != 1:
        return None
    fused = [tiles.fused(leaf, read) for leaf, _ in leaves]  # in _with_leaves' order
    if all(call is not None for call in fused):
        order = iter(fused)
        return _with_leaves(stmts[-2], lambda leaf: next(order))
    interior = [index for index, (leaf, _) in enumerate(leaves)
                if fused[index] is not None and len(_calls(leaf)) == 1 and _calls(leaf)[0].op.name == MAC_OP]
    if len(interior) != 1:
        return None
    conditions = leaves[interior[0]][1]
    if not conditions:
        return fused[interior[0]]
    order = iter(range(len(leaves)))
    rest = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind,
                    tirx.SeqStmt([*stmts[:-2], _with_leaves(stmts[-2], lambda other: tirx.Evaluate(
                        tirx.const(0, "int32")) if next(order) == interior[0] else other), stmts[-1]]),
                    loop.thread_binding, loop.annotations)
    return tirx.IfThenElse(functools.reduce(tirx.And, conditions), fused[interior[0]], rest)


def depthwise_tiles_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each loop over depthwise channel tiles of the
    module docstring's form replaced by its fused calls; any other function unchanged."""
    return with_root_loops_replaced(func, depthwise_tiles_call, enclosing=True)
