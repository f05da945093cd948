"""Hand-overs with a stream order are soft conflicts for every strategy, not merged rectangles.

A merged rectangle reserves the pair's union over the source's whole life and stacks the distances of a
whole chain; as a soft conflict each taker only has to start its distance below its source at their one
shared step. Checked on a hand case and, for the exact search, against a brute force on random sets.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_planner import Buffer, plan_memory
from memory_planner.api import StreamOrder
from memory_planner.check import check_plan
from memory_planner.strategies import STRATEGIES

ROWS = StreamOrder(((0, 50), (50, 100)), ((0, 50), (50, 100)))  # two passes of 50 B each: lead 50 B


def test_a_streamed_pair_does_not_hold_its_union_over_the_source_s_whole_life() -> None:
    """Step 0 holds `source` and `other` (200 B); at step 1 `taker` starts 50 B below `source` (union 150 B).
    A merged pair would hold 150 B at step 0 too: 250 B. As a soft conflict: e.g. `source` at 100, `taker` at
    50 over `other`'s dead bytes: 200 B, the bound."""
    assert ROWS.lead_bytes() == 50
    buffers = [
        Buffer("source", 100, 0, 1, alignment=1),
        Buffer("other", 100, 0, 0, alignment=1),
        Buffer("taker", 100, 1, 2, alignment=1, inplace_of="source", stream=ROWS),
    ]
    for strategy in ["auto", *STRATEGIES]:
        plan = plan_memory(buffers, strategy)
        check_plan(buffers, plan)
        assert (plan.lower_bound, plan.arena_bytes) == (200, 200), strategy


def test_a_chain_of_streamed_hand_overs_does_not_stack_every_distance() -> None:
    """a <- b <- c, each taker 50 B below its source, and `big` live with `a` only. Merging the chain into
    one block stacks both distances over a's whole life (200 + 100 B next to `big`); as soft conflicts `c`
    may start anywhere clear of `b` (a is dead by then)."""
    buffers = [
        Buffer("a", 100, 0, 1, alignment=1),
        Buffer("big", 150, 0, 0, alignment=1),
        Buffer("b", 100, 1, 2, alignment=1, inplace_of="a", stream=ROWS),
        Buffer("c", 100, 2, 3, alignment=1, inplace_of="b", stream=ROWS),
    ]
    plan = plan_memory(buffers)
    check_plan(buffers, plan)
    assert (plan.lower_bound, plan.arena_bytes) == (250, 250)


@st.composite
def streamed_sets(draw) -> list[Buffer]:
    """Up to 4 buffers on a 16-byte grid; a buffer may take the one before it with a random stream order
    (each buffer is taken at most once)."""
    buffers: list[Buffer] = []
    for i in range(draw(st.integers(1, 4))):
        nbytes = draw(st.integers(0, 48))
        first = draw(st.integers(0, 3))
        source = buffers[-1] if buffers and draw(st.booleans()) else None
        stream = None
        if source is not None and source.first_step < source.last_step:
            first = source.last_step
            passes = draw(st.integers(1, 4))
            stream = StreamOrder(tuple(_interval(draw, source.nbytes) for _ in range(passes)),
                                 tuple(_interval(draw, nbytes) for _ in range(passes)))
        buffers.append(Buffer(f"b{i}", nbytes, first, first + draw(st.integers(0, 2)),
                              inplace_of=None if stream is None else source.name, stream=stream))
    return buffers


def _interval(draw, nbytes: int) -> tuple[int, int]:
    start = draw(st.integers(0, nbytes))
    return start, draw(st.integers(start, nbytes))


def _distance(taker: Buffer) -> int:
    """The least distance (bytes, >= 0) its source must start above `taker`, found byte by byte."""
    assert taker.stream is not None
    stream = taker.stream
    return next(d for d in range(taker.nbytes + 1)
                if all(w_end <= d + r_start for k, (w_start, w_end) in enumerate(stream.writes) if w_start < w_end
                       for r_start, r_end in stream.reads[k:] if r_start < r_end))


def _rise(taker: Buffer, source: Buffer) -> int:
    """The least distance (bytes, >= 0) `taker` must start above its source, found byte by byte (its passes
    writing only above the source bytes still to be read)."""
    assert taker.stream is not None
    stream = taker.stream
    return next(e for e in range(source.nbytes + 1)
                if all(e + w_start >= r_end for k, (w_start, w_end) in enumerate(stream.writes) if w_start < w_end
                       for r_start, r_end in stream.reads[k:] if r_start < r_end))


def _side(taker: Buffer, source: Buffer) -> int | None:
    """The signed distance the planner shares at (liveness.Handover): below, or above (negative, at least one
    byte: distance 0 is below) when that spans fewer bytes; None when neither saves a byte."""
    below, above = _distance(taker), max(_rise(taker, source), 1)
    spans = [(max(taker.nbytes, below + source.nbytes), 0, below)] if below < taker.nbytes else []
    if above < source.nbytes:
        spans.append((max(source.nbytes, above + taker.nbytes), 1, -above))
    return min(spans)[2] if spans else None


def _legal(a: Buffer, a_off: int, b: Buffer, b_off: int) -> bool:
    """Whether `a` at `a_off` and `b` at `b_off` may coexist (b is listed after a, so only b may take a)."""
    if not (a.first_step <= b.last_step and b.first_step <= a.last_step):
        return True
    if not (a.nbytes and b.nbytes and a_off < b_off + b.nbytes and b_off < a_off + a.nbytes):
        return True
    side = _side(b, a) if b.inplace_of == a.name else None
    if side is None:
        return False
    return a_off - b_off >= side if side >= 0 else b_off - a_off >= -side


def brute_force_arena(buffers: list[Buffer]) -> int:
    """The smallest arena over every assignment of offsets on the 16-byte grid."""
    best = sum(-(-b.nbytes // 16) * 16 for b in buffers) + 1  # stacked one above the other fits below this
    grid = range(0, best, 16)

    def search(offsets: list[int], top: int) -> None:
        nonlocal best
        if top >= best:
            return
        if len(offsets) == len(buffers):
            best = top
            return
        b = buffers[len(offsets)]
        for off in grid:
            if all(_legal(a, a_off, b, off) for a, a_off in zip(buffers, offsets)):
                search(offsets + [off], max(top, off + b.nbytes))

    search([], 0)
    return best


@settings(max_examples=150, deadline=None)
@given(streamed_sets())
@example([  # issue 19: b1 at 16 over its taker b2 (distance 0), b3 below both; the search put b1 at 0
    Buffer("b0", 0, 0, 0),
    Buffer("b1", 17, 0, 1),
    Buffer("b2", 33, 1, 2, inplace_of="b1", stream=StreamOrder(((0, 0),), ((0, 0),))),
    Buffer("b3", 2, 2, 2, inplace_of="b2", stream=StreamOrder(((0, 1),), ((0, 1),))),
]).via("discovered failure")
def test_exact_search_equals_brute_force_with_streamed_hand_overs(buffers: list[Buffer]) -> None:
    optimum = brute_force_arena(buffers)
    for strategy in ("exact", "auto"):
        plan = plan_memory(buffers, strategy)
        check_plan(buffers, plan)
        assert plan.arena_bytes == optimum
        assert plan.optimal
    for strategy in ("greedy_by_size", "best_of_orders", "hill_climb"):
        plan = plan_memory(buffers, strategy)
        assert plan.arena_bytes >= optimum
        assert not plan.optimal or plan.arena_bytes == optimum
