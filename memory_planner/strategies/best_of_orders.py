"""A stronger heuristic: greedy placement under several priority orders and two gap rules, best kept.

Each order is a published greedy rule (Pisarchyk & Lee 2020, arXiv 2001.03288; TVM USMP's greedy
variants): by size, by how long a buffer lives, by size x lifetime, by the number of buffers it
conflicts with, "by breadth" (walk the steps from the one with the most live bytes down, placing
that step's buffers largest first), "by hand-over chains" (ours, below), and two more walks by breadth
(ours) placing each step's buffers earliest born first or, walking equal steps latest first, latest
dying first. Each order is tried with first fit and with best fit (smallest gap
that holds it); the placement with the smallest arena wins, ties to the earlier rule, so the result is
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory_planner.api import Buffer
from memory_planner.liveness import bytes_live_per_step, handovers
from memory_planner.strategies.placement import (
    Placement,
    arena_bytes,
    best_fit,
    first_fit,
    place_in_order,
    time_conflicts,
)

Order = Callable[[Sequence[Buffer]], list[int]]


def _by_key(key: Callable[[Buffer], tuple[int, ...]]) -> Order:
    return lambda buffers: sorted(range(len(buffers)), key=lambda i: key(buffers[i]))


def _span(b: Buffer) -> int:
    return b.last_step - b.first_step + 1


def _by_conflicts(buffers: Sequence[Buffer]) -> list[int]:
    degree = [sum(buffers[j].nbytes for j, _, _ in js) for js in time_conflicts(buffers)]
    return sorted(range(len(buffers)), key=lambda i: (-degree[i], -buffers[i].nbytes))


def _by_breadth(within: Callable[[Buffer], tuple[int, ...]], latest_first: bool = False) -> Order:
    """Walk the steps from the one with the most live bytes down (equal ones earliest first, or latest first
    with `latest_first`), placing each step's unplaced buffers in the order of `within` (a sort key)."""

    def order(buffers: Sequence[Buffer]) -> list[int]:
        live = bytes_live_per_step(buffers)
        walk: list[int] = []
        seen: set[int] = set()
        for step in sorted(range(len(live)), key=lambda s: (-live[s], -s if latest_first else s)):
            at_step = [i for i, b in enumerate(buffers) if b.first_step <= step <= b.last_step and i not in seen]
            at_step.sort(key=lambda i: within(buffers[i]))
            walk += at_step
            seen.update(at_step)
        return walk

    return order


def _by_handover_chains(buffers: Sequence[Buffer]) -> list[int]:
    """Each chain of streamed hand-overs (source, its taker, that taker's taker...) as one unit, units by
    their largest member, largest first (ties to the earlier born). Within a unit, largest first and, among
    equals, the last taker first: first fit then puts each source just its distance above its taker, a
    staircase the chain descends, where any other order makes a taker jump above its placed source or
    leaves a small buffer (a kernel's scratch) where the staircase must go."""
    index = {b.name: i for i, b in enumerate(buffers)}
    source_of = {index[h.taker.name]: index[h.source.name] for h in handovers(buffers).values() if h.taker.stream}
    sources = set(source_of.values())
    chains: list[list[int]] = []
    for last in (i for i in range(len(buffers)) if i not in sources):
        chain = [last]
        while chain[-1] in source_of:
            chain.append(source_of[chain[-1]])
        chains.append(sorted(chain, key=lambda i: -buffers[i].nbytes))
    chains.sort(key=lambda chain: (-buffers[chain[0]].nbytes, min(buffers[i].first_step for i in chain)))
    return [i for chain in chains for i in chain]


ORDERS: tuple[Order, ...] = (
    _by_key(lambda b: (-b.nbytes,)),
    _by_key(lambda b: (-_span(b), -b.nbytes)),
    _by_key(lambda b: (-b.nbytes * _span(b), -b.nbytes)),
    _by_key(lambda b: (b.first_step, -b.nbytes)),
    _by_conflicts,
    _by_breadth(lambda b: (-b.nbytes,)),
    _by_handover_chains,
    # After the rules above (ties go to them): at the steps of most live bytes, the buffers carried in from
    # earlier steps (a streamed plan's rows kept from band to band, skip rows waiting for their join) below
    # those born there, so that these stack above them in one piece; or, walking equal steps latest first,
    # those that live on longest below.
    _by_breadth(lambda b: (b.first_step, -b.nbytes)),
    _by_breadth(lambda b: (-b.last_step, -b.nbytes), latest_first=True),
)


def place(buffers: Sequence[Buffer]) -> Placement:
    """The smallest-arena placement over every (order, gap rule) pair."""
    conflicts = time_conflicts(buffers)  # once for the 18 placements
    candidates = (
        place_in_order(buffers, order, fit, conflicts) for order in (rule(buffers) for rule in ORDERS)
        for fit in (first_fit, best_fit)
    )
    return Placement(min(candidates, key=lambda offsets: arena_bytes(buffers, offsets)))
