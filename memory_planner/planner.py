"""`plan_memory`: validate buffers, merge in-place chains, run strategies, report the arena and its proof."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.inplace import merge_inplace
from memory_planner.liveness import aligned_lower_bound, lower_bound
from memory_planner.strategies import HEURISTICS, STRATEGIES, exact
from memory_planner.strategies.placement import Placement, arena_bytes

AUTO = "auto"


def _validate(buffers: Sequence[Buffer]) -> None:
    """Raise ValueError naming the first buffer that breaks the contract of `Buffer`."""
    seen: set[str] = set()
    for b in buffers:
        if b.name in seen:
            raise ValueError(f"buffer {b.name!r}: name used twice")
        seen.add(b.name)
        if b.nbytes < 0 or b.first_step < 0 or b.last_step < b.first_step:
            live = f"{b.nbytes} bytes, steps {b.first_step}..{b.last_step}"
            raise ValueError(f"buffer {b.name!r}: bad size or live range ({live})")
        if b.alignment <= 0 or b.alignment & (b.alignment - 1):
            raise ValueError(f"buffer {b.name!r}: alignment {b.alignment} is not a power of two")


def _auto(blocks: Sequence[Buffer]) -> tuple[str, Placement]:
    """The heuristics, cheapest first, until one reaches the bound; then, only if none did, the exact
    search from the best of them. Ties go to the earlier strategy."""
    bound = aligned_lower_bound(blocks)
    best: tuple[int, str, Placement] | None = None
    for heuristic in HEURISTICS:
        placement = STRATEGIES[heuristic](blocks)
        if best is None or arena_bytes(blocks, placement.offsets) < best[0]:
            best = (arena_bytes(blocks, placement.offsets), heuristic, placement)
        if best[0] == bound:
            return best[1:]
    _, name, placement = best
    searched = exact.place(blocks, incumbent=placement.offsets)
    if arena_bytes(blocks, searched.offsets) < arena_bytes(blocks, placement.offsets):
        return "exact", searched
    return name, Placement(placement.offsets, searched.proved_minimal)


PLANS_KEPT = 256
"""How many plans `plan_memory` keeps, the most recently asked for (a plan is a few hundred bytes)."""


def plan_memory(buffers: list[Buffer], strategy: str = AUTO) -> MemoryPlan:
    """Place every buffer in one arena with the named strategy ("auto": heuristics, then exact search).

    `lower_bound` is the largest number of bytes live at one step, with in-place hand-overs counted
    once. `optimal` is True only when proved: the arena equals that bound or the tighter one that counts
    alignment (`liveness.aligned_lower_bound`), or the exact search ran to its end on buffers where no
    in-place chain was merged (merging is a choice the search does not undo).

    The plan of the same buffers (equal in every field, in the same order) and strategy is computed once per
    process (the last PLANS_KEPT): every strategy is deterministic (the exact search's budget counts work, not
    seconds), a compile plans the trial it takes again, and the same model's compiles for several profiles
    often plan the same buffers. Each call returns its own copy of the offsets.
    """
    plan = _planned(tuple(buffers), strategy)
    return replace(plan, offsets=dict(plan.offsets))


@functools.lru_cache(maxsize=PLANS_KEPT)
def _planned(buffers: tuple[Buffer, ...], strategy: str) -> MemoryPlan:
    """`plan_memory`'s plan, computed (the caller copies its offsets)."""
    _validate(buffers)
    if strategy != AUTO and strategy not in STRATEGIES:
        raise ValueError(f"unknown memory planning strategy {strategy!r}; choose from {[AUTO, *STRATEGIES]}")
    merged = merge_inplace(buffers)
    if strategy == AUTO:
        strategy, placement = _auto(merged.blocks)
    else:
        placement = STRATEGIES[strategy](merged.blocks)
    offsets = merged.expand(placement.offsets)
    arena = arena_bytes(buffers, offsets)
    no_merges = len(merged.blocks) == len(buffers)
    optimal = arena == aligned_lower_bound(buffers) or (placement.proved_minimal and no_merges)
    return MemoryPlan(offsets, arena, lower_bound(buffers), strategy, optimal)
