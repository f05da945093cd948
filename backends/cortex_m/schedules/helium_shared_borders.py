"""On Helium cores, the bundle's choice of whether a 3x3 window's border pixels call the border copy that runs the
interior's out-of-line copy instead of the one holding its own tile.

A 3x3 depthwise kernel's border pixels call one out-of-line copy per bundle and bias type,
``<prefix>_depthwise_border3x3_s8`` (``_b16``; ``helium_depthwise16.h.in``), which copies a tile's taps inside the
image into a window on the stack and runs a tile of its own on it: 888 B with whole tiles of 16 channels, some 600 B
more with the rolled tile of a layer of fewer than 16 channels; where the interior's copy
``<prefix>_depthwise_tiles3x3_s8`` is in the bundle too (``depthwise_tiles.shared_tiles``), two copies of one
tile's code (ds_cnn_w30_49x10 on cortex-m55: 888 + 890 B of its 4,224, cortex-m4f's code 3,140).
``<prefix>_depthwise_border3x3_shared_s8`` copies the window alike and calls the interior's copy on it, a tile at a
time: some 220-320 B, for some BorderCost.tile_call instructions more per border tile (the call's arguments, the
copy's registers saved and its constants set up again). ``shared_borders`` takes it per bias type where the bytes
it saves (the own copy's, less the interior copy's where no kernel's interior calls it, and its rolled tile's where
a border layer of fewer than 16 channels needs it and no interior caller does) are worth more at the one price of
code (``code_price.INSTRUCTIONS_PER_BYTE``) than the instructions the border tiles' calls add. Measured on
cortex-m55 (code B, instructions), every bundle's border calling the interior copy: ds_cnn_w30_49x10 4,224 /
1,073,407 -> 3,584 / 1,116,495 (taken); mobilenet_v1_030_80 14,128 / 6,579,144 -> 13,192 / 6,705,995 (not taken:
936 B for 126,851 instructions). The same tiles on the same window: bit-exact.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import op_executions
from backends.cortex_m.schedules.depthwise_tiles import (BORDER_OPS, DEPTHWISE_TILES, HELIUM_COPY_COSTS, FormKey,
                                                         KernelUse, SharedTiles)
from tvm_ext.tir.tir_walk import children, walk

FORM = "3x3"
"""The window form whose border copy may run the interior's copy (the one both have out-of-line copies of)."""


@dataclass(frozen=True)
class BorderCost:
    """What the border copy that runs the interior's copy saves (bytes) and costs (instructions), against the one
    holding its own tile."""

    own: int
    """The own tile's copy (bytes), whole tiles of 16 channels."""
    own_rolled: int
    """Its code more where a border layer of fewer than 16 channels calls it (bytes: its rolled tile)."""
    shared: int
    """The copy running the interior's (bytes)."""
    tile_call: int
    """Instructions more per border tile (16 channels, or a layer's fewer)."""


BORDER_COST = BorderCost(own=888, own_rolled=600, shared=320, tile_call=100)
"""Measured on cortex-m55 (arm-none-eabi-gcc 12.2 -O2, nm): ds_cnn_w30_49x10's (30 channels) own copy 888 B, the
copy running the interior's 220 B, 96 instructions more per border tile (its 3x3 kernel 67,040 -> 77,812 over 112
border tiles); mobilenet_v1_030_80's (a layer of 9 channels) 1,850 / 324 B, 79-103 instructions per border tile;
vww_96_int8's own copy 1,490 B (``helium_depthwise16.h.in``)."""


def _condition_holds(condition: tirx.PrimExpr, loops: tuple) -> int:
    """How many iterations of ``loops`` ((var, min, extent) each, constants) ``condition`` holds at: per loop
    variable, the values every conjunct reading it alone accepts; a conjunct reading several variables or none of
    them counts as never holding (the border's executions then every iteration's: an upper bound)."""
    conjuncts, stack = [], [condition]
    while stack:
        part = stack.pop()
        if isinstance(part, tirx.And):
            stack.extend((part.a, part.b))
        else:
            conjuncts.append(part)
    allowed = {var: range(low, low + extent) for var, low, extent in loops}
    for conjunct in conjuncts:
        read = [var for var, _, _ in loops if any(node.same_as(var) for node in walk(conjunct))]
        if len(read) != 1:
            return 0
        (var,) = read

        def holds(value: int, var=var, conjunct=conjunct) -> bool:
            analyzer = Analyzer()
            analyzer.bind(var, tirx.const(value, str(var.ty.dtype)))
            result = analyzer.simplify(conjunct)
            return isinstance(result, tirx.IntImm) and int(result) != 0

        allowed[var] = [value for value in allowed[var] if holds(value)]
    return functools.reduce(lambda product, values: product * len(values), allowed.values(), 1)


def border_executions(stmt, ops: set[str], loops: tuple = ()) -> Iterator[tuple[tvm.ir.Call, int]]:
    """(call, executions per call of the function) of each call of ``ops`` under ``stmt``: the iterations of the
    loops ``loops`` ((var, min, extent) each) and of those around it (``op_executions``: a loop of another extent
    counting once), a call in the else branch of a test only those where the test fails (``_condition_holds``)."""
    if isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm) and isinstance(stmt.min, tirx.IntImm):
        loops = (*loops, (stmt.loop_var, int(stmt.min), int(stmt.extent)))
    total = functools.reduce(lambda product, loop: product * loop[2], loops, 1)
    if isinstance(stmt, tirx.IfThenElse) and stmt.else_case is not None:
        yield from border_executions(stmt.then_case, ops, loops)
        failing = total - _condition_holds(stmt.condition, loops)
        yield from ((call, failing * times) for call, times in op_executions(stmt.else_case, ops))
        return
    if isinstance(stmt, tvm.ir.Call) and isinstance(stmt.op, tvm.ir.Op) and stmt.op.name in ops:
        yield stmt, total
        return
    for child in children(stmt):
        yield from border_executions(child, ops, loops)


def border_uses(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> dict[FormKey, tuple[KernelUse, ...]]:
    """Per 3x3 border copy ((FORM, bias type)), the kernels of ``kernels`` (name -> PrimFunc, scheduled) whose border
    pixels call it: their calls per inference (``calls``: name -> calls; a kernel not in it counts once), the
    border call's executions per call of the kernel, its channels and taps (9)."""
    bias_of = {op: bias for (bias, form), op in BORDER_OPS.items() if form == FORM}
    uses: dict[FormKey, list[KernelUse]] = {}
    for name, func in kernels.items():
        for call, executions in border_executions(func.body, set(bias_of)):
            channels = call.args[-1]
            if isinstance(channels, tirx.IntImm) and executions:
                uses.setdefault((FORM, bias_of[call.op.name]), []).append(
                    KernelUse(name, calls.get(name, 1), executions, int(channels), 9))
    return {key: tuple(found) for key, found in uses.items()}


def shared_borders(uses: Mapping[FormKey, tuple[KernelUse, ...]], tiles: SharedTiles, cost: BorderCost = BORDER_COST,
                   instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> frozenset[FormKey]:
    """The 3x3 border copies ((FORM, bias type)) whose kernels call the copy running the interior's copy, from the
    kernels' border ``uses`` (``border_uses``) and the bundle's interior choice ``tiles`` (``shared_tiles``): where
    the bytes saved (``cost``: the own copy's, its rolled tile's where a border layer has fewer than 16 channels,
    less the copy running the interior's, less the interior copy's own ``HELIUM_COPY_COSTS`` bytes where no
    kernel's interior calls it and its rolled tile's where a border layer needs it and no interior caller does) at
    ``instructions_per_byte`` exceed the instructions the border tiles' calls add."""
    tile = DEPTHWISE_TILES[0]
    copy = HELIUM_COPY_COSTS[FORM]
    interior = dict(tiles.uses)
    sharing = dict(tiles.sharing)
    chosen = set()
    for key, found in uses.items():
        rolls = any(use.channels < tile for use in found)
        saved = cost.own + (cost.own_rolled if rolls else 0) - cost.shared
        callers = sharing.get(key, frozenset())
        if not callers:
            saved -= copy.copy
        if rolls and not any(use.kernel in callers and copy.rolls(use.channels) for use in interior.get(key, ())):
            saved -= copy.rolled_copy
        added = sum(use.calls * use.pixels * -(-use.channels // tile) * cost.tile_call for use in found)
        if saved * instructions_per_byte > added:
            chosen.add(key)
    return frozenset(chosen)
