"""Local search over placement orders: first fit decodes an order, moves that do not raise the arena stay.

Why orders: by the normal-form argument in `exact`, every minimal placement is first fit of some order
(its buffers by offset), so searching orders loses nothing. The walk starts from the best order of
`best_of_orders` (first fit), then repeats a move: half the time it moves a buffer that reaches the
arena's top to an earlier place in the order, otherwise it swaps two buffers; a move that keeps or
lowers the arena is kept (sideways steps cross plateaus). It stops at the alignment-aware lower bound
when its work budget (buffer pairs examined) is spent, or after STALL_MOVES_PER_BUFFER moves per buffer
without a new best. The moves come from a seeded generator, so
the same input gives the same plan.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from memory_planner.api import Buffer
from memory_planner.liveness import aligned_lower_bound
from memory_planner.strategies.best_of_orders import ORDERS
from memory_planner.strategies.placement import Placement, first_fit, time_conflicts

DEFAULT_WORK_BUDGET = 1_000_000  # about 0.3-0.6 s for 40-100 buffers in CPython
STALL_MOVES_PER_BUFFER = 200
SEED = 20240229


def place(buffers: Sequence[Buffer], work_budget: int = DEFAULT_WORK_BUDGET) -> Placement:
    """The best first-fit placement the walk finds (never worse than its starting order)."""
    if not buffers:
        return Placement({})
    target = aligned_lower_bound(buffers)
    conflicts = time_conflicts(buffers)
    cost = len(buffers) + sum(len(c) for c in conflicts)  # work of one decoding

    def decode(order: list[int], kept: int = 0, known: list[int] | None = None) -> tuple[int, list[int]]:
        """(arena bytes, offset of each buffer by index) of first fit in `order`, its first `kept` buffers at
        their offsets in `known`: the placement of an order with the same first `kept` buffers (first fit
        places each buffer by those before it alone, so a move redoes only the buffers from its first changed
        position on)."""
        placed: list[int | None] = [None] * len(buffers)
        for i in order[:kept]:
            placed[i] = known[i]
        for i in order[kept:]:
            occupied = [(placed[j] + start, placed[j] + end) for j, start, end in conflicts[i] if placed[j] is not None]
            placed[i] = first_fit(buffers[i].nbytes, buffers[i].alignment, occupied)
        return max(placed[i] + buffers[i].nbytes for i in order), placed

    starts = [order(buffers) for order in ORDERS]
    decoded = [decode(start) for start in starts]
    first_best = min(range(len(starts)), key=lambda k: decoded[k][0])
    order, (arena, offsets) = starts[first_best], decoded[first_best]
    best_arena, best_order, best_offsets = arena, order, offsets
    rng = random.Random(SEED)
    work = cost * (len(starts) + 1)
    stalled, patience = 0, STALL_MOVES_PER_BUFFER * len(buffers)
    while best_arena > target and work + cost <= work_budget and stalled < patience:
        work, stalled = work + cost, stalled + 1
        candidate = list(order)
        tops = [k for k, i in enumerate(candidate) if offsets[i] + buffers[i].nbytes == arena]
        if rng.random() < 0.5 and tops and max(tops) > 0:
            k = rng.choice([t for t in tops if t > 0])
            changed = rng.randrange(k)
            candidate.insert(changed, candidate.pop(k))
        else:
            a, b = rng.randrange(len(candidate)), rng.randrange(len(candidate))
            candidate[a], candidate[b] = candidate[b], candidate[a]
            changed = min(a, b)
        new_arena, new_offsets = decode(candidate, changed, offsets)
        if new_arena <= arena:
            order, arena, offsets = candidate, new_arena, new_offsets
            if arena < best_arena:
                best_arena, best_order, best_offsets, stalled = arena, order, offsets, 0
    return Placement({buffers[i].name: best_offsets[i] for i in best_order})
