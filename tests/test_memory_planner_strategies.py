"""Every strategy on hand-made buffer sets and on random ones (hypothesis), checked independently."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_planner import Buffer, plan_memory
from memory_planner.check import check_plan
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
    """Bytes live at the busiest step, in-place hand-overs counted once (a third, plain count)."""
    by_name = {b.name: b for b in buffers}
    steps = {s for b in buffers for s in range(b.first_step, b.last_step + 1)}

    def at(step: int) -> int:
        live = [b for b in buffers if b.first_step <= step <= b.last_step]
        shared = [
            b for b in live
            if b.inplace_of in by_name
            and by_name[b.inplace_of].first_step < by_name[b.inplace_of].last_step == step == b.first_step
            and b.nbytes <= by_name[b.inplace_of].nbytes
        ]
        return sum(b.nbytes for b in live) - sum(b.nbytes for b in shared)

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


@pytest.mark.parametrize("strategy", ["hill_climb", "exact", "auto"])
def test_search_closes_greedys_gap_on_the_autoencoder(strategy: str) -> None:
    greedy = plan_memory(AD01_BUFFERS, "greedy_by_size")
    searched = plan_memory(AD01_BUFFERS, strategy)
    for plan in (greedy, searched):
        check_plan(AD01_BUFFERS, plan)
    assert (greedy.arena_bytes, greedy.optimal) == (AD01_GREEDY_ARENA, False)
    assert plan_memory(AD01_BUFFERS, "best_of_orders").arena_bytes == AD01_GREEDY_ARENA
    assert (searched.arena_bytes, searched.lower_bound, searched.optimal) == (AD01_LOWER_BOUND, AD01_LOWER_BOUND, True)


@pytest.mark.parametrize("strategy", ["hill_climb", "exact", "auto"])
def test_search_beats_greedy_on_a_set_that_traps_it(strategy: str) -> None:
    greedy = plan_memory(GREEDY_TRAP, "greedy_by_size")
    searched = plan_memory(GREEDY_TRAP, strategy)
    for plan in (greedy, searched):
        check_plan(GREEDY_TRAP, plan)
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
        buffers.append(
            Buffer(
                f"b{i}",
                draw(st.integers(0, max_bytes)),
                first,
                first + draw(st.integers(0, 4)),
                alignment=draw(st.sampled_from(alignments)),
                inplace_of=source,
            )
        )
    return buffers


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
