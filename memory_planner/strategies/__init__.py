"""Placement strategies, one module each, all with the same signature, chosen by name.

A strategy is `place(buffers) -> Placement`: an offset in bytes for every buffer such that buffers live
at a same step do not overlap and each offset is a multiple of its buffer's alignment. `plan_memory` has
already merged same-offset hand-overs into one buffer; a hand-over with a stream order is a soft conflict
(`placement.time_conflicts`): the pair may overlap with the source at least its distance above the taker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory_planner.api import Buffer
from memory_planner.strategies import best_of_orders, exact, greedy_by_size, hill_climb
from memory_planner.strategies.placement import Placement

Strategy = Callable[[Sequence[Buffer]], Placement]

STRATEGIES: dict[str, Strategy] = {
    "greedy_by_size": greedy_by_size.place,
    "best_of_orders": best_of_orders.place,
    "hill_climb": hill_climb.place,
    "exact": exact.place,
}

HEURISTICS: tuple[str, ...] = ("greedy_by_size", "best_of_orders", "hill_climb")  # cheapest first

__all__ = ["HEURISTICS", "STRATEGIES", "Placement", "Strategy"]
