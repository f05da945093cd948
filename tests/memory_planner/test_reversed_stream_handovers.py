"""A kernel whose passes run downwards writes its output above the input it still reads (issue 31).

`StreamOrder.trail_bytes` is how far the output must then start above the input; the planner shares the pair's
bytes on whichever side spans fewer (`liveness.stream_distance`), and the independent checker agrees on both
the placement's legality and the lower bound.
"""

from __future__ import annotations

import pytest

from memory_planner.api import Buffer, MemoryPlan, StreamOrder
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.liveness import handovers, lower_bound
from memory_planner.planner import plan_memory

ROW = 128  # bytes of one row of 128 int8 channels
ROWS = 8


def _window_rows(rows: int, window: int) -> StreamOrder:
    """A 'valid' k x 1 depthwise convolution run forwards: pass r reads input rows r..r+window-1 and writes
    output row r."""
    return StreamOrder(tuple((r * ROW, (r + window) * ROW) for r in range(rows)),
                       tuple((r * ROW, (r + 1) * ROW) for r in range(rows)))


def _pointwise_rows(rows: int) -> StreamOrder:
    """A 1x1 convolution run forwards: pass r reads input row r and writes output row r."""
    return StreamOrder(tuple((r * ROW, (r + 1) * ROW) for r in range(rows)),
                       tuple((r * ROW, (r + 1) * ROW) for r in range(rows)))


def test_trail_is_the_lead_of_the_mirrored_kernel() -> None:
    """Forwards, a 3x1 window's output row r may sit one row below input row r, and above the input only past
    all of it; backwards, output row r must sit above every input row the later passes (rows 0..r+2) read:
    three rows above, and below the input only past all of it."""
    forwards = _window_rows(ROWS, 3)
    assert forwards.lead_bytes() == ROW and forwards.trail_bytes() == (ROWS + 2) * ROW
    backwards = forwards.reversed()
    assert backwards.reads == forwards.reads[::-1] and backwards.writes == forwards.writes[::-1]
    assert backwards.trail_bytes() == 3 * ROW and backwards.lead_bytes() == ROWS * ROW
    assert backwards.reversed() == forwards


def test_a_pointwise_kernel_run_backwards_takes_the_bytes_above_its_source() -> None:
    """The taker of a backwards 1x1 convolution starts one row above its source: the pair spans one row more
    than the source, the planner places it so, and the checker accepts it."""
    source = Buffer("x", ROWS * ROW, 0, 1)
    taker = Buffer("y", ROWS * ROW, 1, 2, inplace_of="x", stream=_pointwise_rows(ROWS).reversed())
    buffers = [source, taker]
    (handover,) = handovers(buffers).values()
    assert handover.distance == -ROW and handover.union_bytes == (ROWS + 1) * ROW
    assert lower_bound(buffers) == (ROWS + 1) * ROW
    plan = plan_memory(buffers)
    check_plan(buffers, plan)
    assert plan.arena_bytes == (ROWS + 1) * ROW
    assert plan.offsets["y"] - plan.offsets["x"] == ROW


def test_the_checker_refuses_a_backwards_taker_below_its_source() -> None:
    """Below its source a backwards taker overwrites input rows the later passes still read."""
    source = Buffer("x", ROWS * ROW, 0, 1)
    taker = Buffer("y", ROWS * ROW, 1, 2, inplace_of="x", stream=_pointwise_rows(ROWS).reversed())
    bound = (ROWS + 1) * ROW
    with pytest.raises(InvalidMemoryPlanError, match="overlap while both live"):
        check_plan([source, taker], MemoryPlan({"x": ROW, "y": 0}, bound, bound, "hand-made", False))
    check_plan([source, taker], MemoryPlan({"x": 0, "y": ROW}, bound, bound, "hand-made", False))


def test_a_chain_drifts_less_when_one_kernel_runs_backwards() -> None:
    """x -> (3x1 window) -> y -> (1x1) -> z -> (1x1) -> w, each hand-over's source dying there. Forwards each
    taker starts its lead below its source, so x sits above the whole drift; with the middle 1x1 run backwards,
    z climbs back up and the arena is the liveness bound."""
    x = Buffer("x", (ROWS + 2) * ROW, 0, 1)
    y = Buffer("y", ROWS * ROW, 1, 2, inplace_of="x", stream=_window_rows(ROWS, 3))

    def chain(middle: StreamOrder) -> list[Buffer]:
        z = Buffer("z", ROWS * ROW, 2, 3, inplace_of="y", stream=middle)
        w = Buffer("w", ROWS * ROW, 3, 4, inplace_of="z", stream=_pointwise_rows(ROWS))
        return [x, y, z, w]

    forwards, mixed = chain(_pointwise_rows(ROWS)), chain(_pointwise_rows(ROWS).reversed())
    plans = {name: plan_memory(buffers) for name, buffers in (("forwards", forwards), ("mixed", mixed))}
    check_plan(forwards, plans["forwards"])
    check_plan(mixed, plans["mixed"])
    assert plans["forwards"].arena_bytes == (ROWS + 2) * ROW + 3 * ROW  # x above three rows of drift
    assert plans["mixed"].arena_bytes == lower_bound(mixed) == (ROWS + 2) * ROW + ROW
