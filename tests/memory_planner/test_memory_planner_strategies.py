"""Every strategy on hand-made buffer sets and on random ones (hypothesis), checked independently."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_planner import Buffer, plan_memory
from memory_planner.api import StreamOrder
from memory_planner.api import MemoryPlan
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.liveness import aligned_lower_bound, lower_bound
from memory_planner.strategies import HEURISTICS, STRATEGIES
from memory_planner_cases import (
    AD01_BUFFERS,
    AD01_GREEDY_ARENA,
    AD01_LOWER_BOUND,
    GREEDY_TRAP,
    RESNET8_BUFFERS,
    RESNET8_LOWER_BOUND,
)

ALL_STRATEGIES = ["auto", *STRATEGIES]


def naive_lower_bound(buffers: list[Buffer]) -> int:
    """Bytes live at the busiest step, a hand-over counted as the pair's union (a third, plain count: the
    union from a distance tried byte by byte)."""
    by_name = {b.name: b for b in buffers}
    steps = {s for b in buffers for s in range(b.first_step, b.last_step + 1)}

    def distance(taker: Buffer) -> int:  # where the source may start above the taker; None: nowhere useful
        source = by_name.get(taker.inplace_of or "")
        if source is None or source is taker or not source.first_step < source.last_step == taker.first_step:
            return None
        if taker.stream is None:
            return 0 if taker.nbytes <= source.nbytes else None
        pairs = [(w, r) for k, w in enumerate(taker.stream.writes) if w[0] < w[1]
                 for r in taker.stream.reads[k:] if r[0] < r[1]]
        below = next((d for d in range(taker.nbytes) if all(w[1] <= d + r[0] for w, r in pairs)), None)
        # a kernel whose passes run downwards: the taker at least `above` bytes above its source
        above = next((e for e in range(1, source.nbytes) if all(e + w[0] >= r[1] for w, r in pairs)), None)
        if above is not None and (below is None or max(source.nbytes, above + taker.nbytes)
                                  < max(taker.nbytes, below + source.nbytes)):
            return -above
        return below

    takers: dict[str, Buffer] = {}  # source -> its first taker with a useful distance
    for b in buffers:
        if distance(b) is not None:
            takers.setdefault(b.inplace_of, b)

    def at(step: int) -> int:
        live = [b for b in buffers if b.first_step <= step <= b.last_step]
        total = sum(b.nbytes for b in live)
        for source, taker in takers.items():
            if taker.first_step == step:
                union = max(taker.nbytes, distance(taker) + by_name[source].nbytes) - min(distance(taker), 0)
                total -= by_name[source].nbytes + taker.nbytes - union
        return total

    return max((at(s) for s in steps), default=0)


def brute_force_arena(buffers: list[Buffer]) -> int:
    """The smallest arena over every assignment of aligned offsets (no in-place sharing)."""
    best = sum(b.nbytes + b.alignment for b in buffers)
    offsets: list[int] = []

    def conflict(i: int, off: int) -> bool:
        b = buffers[i]
        return any(
            a.first_step <= b.last_step and b.first_step <= a.last_step and o < off + b.nbytes and off < o + a.nbytes
            for a, o in zip(buffers, offsets)
        )

    def search(i: int, top: int) -> None:
        nonlocal best
        if top >= best:
            return
        if i == len(buffers):
            best = top
            return
        b = buffers[i]
        for off in range(0, best - b.nbytes, b.alignment):
            if not conflict(i, off):
                offsets.append(off)
                search(i + 1, max(top, off + b.nbytes))
                offsets.pop()

    search(0, 0)
    return best


@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
def test_resnet8_reaches_the_lower_bound(strategy: str) -> None:
    plan = plan_memory(RESNET8_BUFFERS, strategy)
    check_plan(RESNET8_BUFFERS, plan)
    assert plan.lower_bound == RESNET8_LOWER_BOUND
    assert plan.arena_bytes == RESNET8_LOWER_BOUND
    assert plan.optimal


def _greedy_and_searched(buffers: list[Buffer], strategy: str) -> tuple[MemoryPlan, MemoryPlan]:
    """The plans of `buffers` by greedy_by_size and by `strategy`, each checked by the independent checker."""
    plans = plan_memory(buffers, "greedy_by_size"), plan_memory(buffers, strategy)
    for plan in plans:
        check_plan(buffers, plan)
    return plans


@pytest.mark.parametrize("strategy", ["hill_climb", "exact", "auto"])
def test_search_closes_greedys_gap_on_the_autoencoder(strategy: str) -> None:
    greedy, searched = _greedy_and_searched(AD01_BUFFERS, strategy)
    assert (greedy.arena_bytes, greedy.optimal) == (AD01_GREEDY_ARENA, False)
    assert plan_memory(AD01_BUFFERS, "best_of_orders").arena_bytes == AD01_GREEDY_ARENA
    assert (searched.arena_bytes, searched.lower_bound, searched.optimal) == (AD01_LOWER_BOUND, AD01_LOWER_BOUND, True)


@pytest.mark.parametrize("strategy", ["hill_climb", "exact", "auto"])
def test_search_beats_greedy_on_a_set_that_traps_it(strategy: str) -> None:
    greedy, searched = _greedy_and_searched(GREEDY_TRAP, strategy)
    assert plan_memory(GREEDY_TRAP, "best_of_orders").arena_bytes == greedy.arena_bytes == 112
    assert brute_force_arena(GREEDY_TRAP) == searched.arena_bytes == searched.lower_bound == 96
    assert searched.optimal and not greedy.optimal


def test_inplace_pair_shares_bytes_and_lowers_the_bound() -> None:
    conv = Buffer("conv", 4096, 0, 1, label="conv")
    relu = Buffer("relu", 4096, 1, 2, label="relu", inplace_of="conv")
    other = Buffer("other", 1000, 0, 2)
    plan = plan_memory([conv, relu, other])
    check_plan([conv, relu, other], plan)
    assert plan.offsets["conv"] == plan.offsets["relu"]
    assert plan.lower_bound == plan.arena_bytes == 4096 + 1000
    assert plan.optimal


def test_unknown_strategy_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown memory planning strategy 'nope'"):
        plan_memory(RESNET8_BUFFERS, "nope")


@pytest.mark.parametrize(
    "bad, message",
    [
        ([Buffer("a", 8, 0, 0), Buffer("a", 8, 1, 1)], "'a': name used twice"),
        ([Buffer("a", 8, 2, 1)], "'a': bad size or live range"),
        ([Buffer("a", 8, 0, 1, alignment=12)], "'a': alignment 12"),
    ],
)
def test_bad_buffers_are_rejected_by_name(bad: list[Buffer], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_memory(bad)


@st.composite
def buffer_sets(
    draw, max_buffers: int = 8, inplace: bool = True, max_bytes: int = 200, alignments: tuple[int, ...] = (1, 4, 16)
) -> list[Buffer]:
    """Random buffers over 11 steps; `inplace` lets a buffer name an earlier one in `inplace_of`."""
    count = draw(st.integers(1, max_buffers))
    buffers = []
    for i in range(count):
        first = draw(st.integers(0, 6))
        source = draw(st.sampled_from([None] + [f"b{j}" for j in range(i)])) if inplace and i else None
        nbytes = draw(st.integers(0, max_bytes))
        stream = draw(stream_orders(buffers[int(source[1:])].nbytes, nbytes)) if source and draw(st.booleans()) else None
        buffers.append(
            Buffer(
                f"b{i}",
                nbytes,
                first,
                first + draw(st.integers(0, 4)),
                alignment=draw(st.sampled_from(alignments)),
                inplace_of=source,
                stream=stream,
            )
        )
    return buffers


@st.composite
def stream_orders(draw, source_bytes: int, taker_bytes: int) -> StreamOrder:
    """A random access order over 1 to 5 passes: each reads some source bytes and writes some taker bytes."""

    def interval(nbytes: int) -> tuple[int, int]:
        start = draw(st.integers(0, nbytes))
        return start, draw(st.integers(start, nbytes))

    passes = draw(st.integers(1, 5))
    return StreamOrder(tuple(interval(source_bytes) for _ in range(passes)),
                       tuple(interval(taker_bytes) for _ in range(passes)))


# Small enough for the brute force: at most 5 buffers of at most 64 bytes on a 16-byte grid.
SMALL_SETS = buffer_sets(max_buffers=5, inplace=False, max_bytes=64, alignments=(16,))


@settings(max_examples=150, deadline=None)
@given(buffer_sets())
def test_every_strategy_gives_a_plan_the_checker_accepts(buffers: list[Buffer]) -> None:
    plans = {s: plan_memory(buffers, s) for s in ALL_STRATEGIES}
    for plan in plans.values():
        check_plan(buffers, plan)
        assert plan.lower_bound == naive_lower_bound(buffers)
        assert plan.arena_bytes >= plan.lower_bound
    assert plans["auto"].arena_bytes <= min(plans[h].arena_bytes for h in HEURISTICS)
    assert plan_memory(buffers) == plans["auto"], "same input, same plan"


@settings(max_examples=120, deadline=None)
@given(SMALL_SETS)
def test_exact_equals_brute_force_on_small_sets(buffers: list[Buffer]) -> None:
    optimum = brute_force_arena(buffers)
    for strategy in ("exact", "auto"):
        plan = plan_memory(buffers, strategy)
        assert plan.arena_bytes == optimum
        assert plan.optimal


@settings(max_examples=100, deadline=None)
@given(SMALL_SETS)
def test_heuristics_claim_optimal_only_when_they_are(buffers: list[Buffer]) -> None:
    optimum = brute_force_arena(buffers)
    for strategy in ("greedy_by_size", "best_of_orders", "hill_climb"):
        plan = plan_memory(buffers, strategy)
        assert plan.arena_bytes >= optimum
        assert not plan.optimal or plan.arena_bytes == optimum


@settings(max_examples=60, deadline=None)
@given(buffer_sets(max_buffers=4, inplace=False, max_bytes=40, alignments=(4, 8, 16)))
def test_the_aligned_bound_never_exceeds_the_optimum(buffers: list[Buffer]) -> None:
    assert lower_bound(buffers) <= aligned_lower_bound(buffers) <= brute_force_arena(buffers)


def test_a_stream_order_lets_a_growing_output_start_below_its_input() -> None:
    """vww_96_int8's peak: a 1x1 convolution 48x48x8 -> 48x48x16 written row by row (each pass reads one input
    row of 384 B and writes one output row of 768 B). The output may run up to the input's unread rows: the
    pair needs 18,432 + 18,816 B (the output's lead over the last input row), not the sum 55,296 B."""
    rows = 48
    stream = StreamOrder(tuple((384 * k, 384 * (k + 1)) for k in range(rows)),
                         tuple((768 * k, 768 * (k + 1)) for k in range(rows)))
    assert stream.lead_bytes() == 768 * rows - 384 * (rows - 1) == 18_816
    before = Buffer("input", 18_432, 0, 1)
    conv = Buffer("conv", 36_864, 1, 2, inplace_of="input", stream=stream)
    plan = plan_memory([before, conv])
    check_plan([before, conv], plan)
    assert (plan.lower_bound, plan.arena_bytes) == (18_816 + 18_432, 18_816 + 18_432)
    assert plan.offsets["input"] - plan.offsets["conv"] == 18_816


def test_the_checker_refuses_an_output_that_overtakes_its_input_read_front() -> None:
    stream = StreamOrder(((0, 16), (16, 32)), ((0, 32), (32, 64)))  # each pass writes twice what it reads
    source, taker = Buffer("x", 32, 0, 1, alignment=1), Buffer("y", 64, 1, 2, alignment=1, inplace_of="x", stream=stream)
    assert stream.lead_bytes() == 48
    legal = MemoryPlan({"y": 0, "x": 48}, 80, 80, "hand-made", False)
    check_plan([source, taker], legal)
    one_byte_too_close = MemoryPlan({"y": 0, "x": 47}, 80, 80, "hand-made", False)
    with pytest.raises(InvalidMemoryPlanError, match="overlap while both live"):
        check_plan([source, taker], one_byte_too_close)


# Rows carried in from earlier steps (b2, b3: 16 B each from step 1) meet buffers born at the busiest step (b0
# at step 4 with b4, b5 from step 3): every size or lifetime order leaves a 16-byte gap there (128 B), the walk
# by breadth that places the busiest step's buffers earliest born first stacks them at the bound.
CARRIED_ROWS = [Buffer(f"b{k}", nbytes, first, last) for k, (nbytes, first, last) in enumerate(
    [(64, 4, 8), (64, 1, 1), (16, 1, 3), (16, 1, 5), (16, 3, 4), (16, 3, 6), (48, 0, 0)])]


def test_best_of_orders_stacks_carried_rows_below_those_born_at_the_busiest_step() -> None:
    greedy, best = plan_memory(CARRIED_ROWS, "greedy_by_size"), plan_memory(CARRIED_ROWS, "best_of_orders")
    check_plan(CARRIED_ROWS, best)
    assert (greedy.arena_bytes, best.arena_bytes, best.lower_bound, best.optimal) == (128, 112, 112, True)
