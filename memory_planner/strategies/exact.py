"""Exact placement by branch and bound, stopped at the lower bound or a work budget.

Search space. Any placement can be pushed into a normal form where no buffer can move to a lower
aligned offset without overlapping another buffer live at one of its steps (each move lowers the sum
of offsets, so pushing ends). In that form, taking buffers in (offset, rank) order, each sits at the
lowest aligned offset free among the buffers taken before it: a lower free gap would also be free of
the buffers after it, which all lie above it. So the search picks which buffer comes next, puts it at
its lowest free offset, and keeps only picks that continue the (offset, rank) order; this enumerates
every normal form once, so a search that runs to the end proves its best arena minimal.

Hand-overs with a stream order are soft conflicts (`placement.time_conflicts`); the normal-form argument
holds for them too: moving a buffer down, away from the buffers above it, keeps a taker at least its
distance below its source and a source below its taker disjoint. One exception forces the rank: a taker
at distance 0 blocks its source from no byte at its own offset, yet from every lower offset where the two
would overlap; so a source sharing its taker's offset is not at its lowest free offset among the buffers
before it unless the taker comes first. The rank (`_takers_first`) puts every taker before its source
and otherwise follows the index. A taker above its source (a negative distance: a kernel run backwards) blocks
the source only above the taker's own offset, and the source blocks it only at and above the source's, so the
argument holds for them unchanged (the two never share an offset).

Bounds. Buffers not yet placed all go at or above the last placed offset `floor`, so at every step
`t` the arena is at least `floor` + bytes that placed buffers live at `t` hold above `floor` + bytes of
unplaced buffers live at `t`, minus at a hand-over step what the pair may share there (at most their
shared bytes at the smallest distance, and at most what each of the two counted); and at least each
unplaced buffer's lowest free offset plus its size.

Determinism. The budget counts work (buffer pairs examined), not seconds, so the same input gives the
same plan on any machine. DEFAULT_WORK_BUDGET (about 0.5-1.9 M units a second measured in CPython
on a shared core) keeps the search well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_planner.api import Buffer
from memory_planner.liveness import aligned_lower_bound, handovers
from memory_planner.strategies import greedy_by_size
from memory_planner.strategies.placement import Blocker, Placement, arena_bytes, first_fit, time_conflicts

DEFAULT_WORK_BUDGET = 400_000


class _BudgetSpent(Exception):
    """Raised inside the search when the work budget is used up."""


@dataclass(frozen=True)
class _SharedBytes:
    """Taker and source (indices) of a hand-over with a stream order may share up to `nbytes` at `step`."""

    taker: int
    source: int
    step: int
    nbytes: int


@dataclass
class _Search:
    buffers: Sequence[Buffer]
    target: int  # stop as soon as an arena this small is found (the lower bound)
    best_arena: int
    best_offsets: list[int]
    work_left: int
    conflicts: list[list[Blocker]] = field(init=False)
    blocks_for: list[list[Blocker]] = field(init=False)  # [i]: i at o blocks [o + start, o + end) for `index`
    shared: list[_SharedBytes] = field(init=False)
    offsets: list[int | None] = field(init=False)
    unplaced_live: list[int] = field(init=False)  # bytes of unplaced buffers live at each step
    rank: list[int] = field(init=False)  # [i]: buffer i's place in the tie order at one offset

    def __post_init__(self) -> None:
        self.conflicts = time_conflicts(self.buffers)
        self.blocks_for = [[] for _ in self.buffers]
        for k, blockers in enumerate(self.conflicts):
            for i, start, end in blockers:
                self.blocks_for[i].append(Blocker(k, start, end))
        index = {b.name: i for i, b in enumerate(self.buffers)}
        self.shared = [
            _SharedBytes(index[h.taker.name], index[h.source.name], h.taker.first_step,
                         h.taker.nbytes + h.source.nbytes - h.union_bytes)
            for h in handovers(self.buffers).values() if h.taker.stream is not None
        ]
        self.rank = _takers_first(len(self.buffers), self.shared)
        self.offsets = [None] * len(self.buffers)
        steps = max((b.last_step for b in self.buffers), default=-1) + 1
        self.unplaced_live = [0] * steps
        for b in self.buffers:
            self._add_live(b, b.nbytes)

    def _add_live(self, b: Buffer, nbytes: int) -> None:
        for step in range(b.first_step, b.last_step + 1):
            self.unplaced_live[step] += nbytes

    def _spend(self, work: int) -> None:
        self.work_left -= work
        if self.work_left < 0:
            raise _BudgetSpent

    def _lowest_free(self, i: int) -> int:
        """Lowest aligned offset where buffer i fits among the placed buffers live with it."""
        occupied = [
            (off + start, off + end) for j, start, end in self.conflicts[i] if (off := self.offsets[j]) is not None
        ]
        self._spend(len(self.conflicts[i]) + 1)
        b = self.buffers[i]
        return first_fit(b.nbytes, b.alignment, occupied)

    def _bound(self, floor: int, top: int, lowest: dict[int, int]) -> int:
        """A lower bound on every arena below this node (see the module docstring)."""
        bound = max([top] + [max(off, floor) + self.buffers[i].nbytes for i, off in lowest.items()])
        above_floor = list(self.unplaced_live)
        work = len(self.buffers) + len(above_floor) + len(self.shared)
        for j, off in enumerate(self.offsets):
            b = self.buffers[j]
            if off is not None and off + b.nbytes > floor:
                held = self._counted(j, floor)
                for step in range(b.first_step, b.last_step + 1):
                    above_floor[step] += held
                work += b.last_step - b.first_step + 1
        for pair in self.shared:
            above_floor[pair.step] -= min(pair.nbytes, self._counted(pair.taker, floor),
                                          self._counted(pair.source, floor))
        self._spend(work)
        return max(bound, floor + max(above_floor, default=0))

    def _counted(self, j: int, floor: int) -> int:
        """The bytes `_bound` counts for buffer j above `floor`: all if unplaced, else those it holds there."""
        off, nbytes = self.offsets[j], self.buffers[j].nbytes
        return nbytes if off is None else max(off + nbytes - max(off, floor), 0)

    def _after_placing(self, i: int, lowest: dict[int, int]) -> dict[int, int]:
        """The unplaced buffers' lowest free offsets once buffer i is placed: only those live with i
        whose lowest free bytes it now covers move up (more placed buffers never lower an offset)."""
        off = self.offsets[i]
        assert off is not None
        moved = {
            k: self._lowest_free(k)
            for k, start, end in self.blocks_for[i]
            if k in lowest and lowest[k] < off + end and off + start < lowest[k] + self.buffers[k].nbytes
        }
        self._spend(len(self.blocks_for[i]) + 1)
        return {k: moved.get(k, v) for k, v in lowest.items() if k != i}

    def run(self, floor: int, last_rank: int, top: int, lowest: dict[int, int]) -> None:
        """Extend the placement whose last buffer (of rank `last_rank`) sits at `floor`; `top` is its arena
        and `lowest` maps each unplaced buffer to its lowest free offset among the placed ones."""
        if not lowest:
            if top < self.best_arena:
                self.best_arena = top
                self.best_offsets = list(self.offsets)  # type: ignore[arg-type]
            return
        if self._bound(floor, top, lowest) >= self.best_arena:
            return
        picks = sorted((off, -self.buffers[i].nbytes, i) for i, off in lowest.items()
                       if (off, self.rank[i]) > (floor, last_rank))
        for off, _, i in picks:
            b = self.buffers[i]
            self.offsets[i] = off
            self._add_live(b, -b.nbytes)
            self.run(off, self.rank[i], max(top, off + b.nbytes), self._after_placing(i, lowest))
            self._add_live(b, b.nbytes)
            self.offsets[i] = None
            if self.best_arena <= self.target:
                return


def _takers_first(count: int, shared: Sequence[_SharedBytes]) -> list[int]:
    """A rank (0..count-1) for each of `count` buffers that puts every taker in `shared` before its source:
    by the number of hand-overs down the chain of takers from the buffer, then by index."""
    taker_of = {pair.source: pair.taker for pair in shared}
    takers_below = [0] * count
    for i in range(count):
        j = i
        while j in taker_of and takers_below[i] < count:  # the bound only matters for a cycle of hand-overs
            j = taker_of[j]
            takers_below[i] += 1
    order = sorted(range(count), key=lambda i: (takers_below[i], i))
    rank = [0] * count
    for position, i in enumerate(order):
        rank[i] = position
    return rank


def place(
    buffers: Sequence[Buffer],
    incumbent: dict[str, int] | None = None,
    work_budget: int = DEFAULT_WORK_BUDGET,
) -> Placement:
    """Search for the smallest arena; start from `incumbent` (default: greedy by size) and return it
    unchanged unless the search finds a smaller one. `proved_minimal` is True when the arena reaches the
    lower bound or the search ran to its end within `work_budget`."""
    if incumbent is None:
        incumbent = greedy_by_size.place(buffers).offsets
    search = _Search(
        buffers=buffers,
        target=aligned_lower_bound(buffers),
        best_arena=arena_bytes(buffers, incumbent),
        best_offsets=[incumbent[b.name] for b in buffers],
        work_left=work_budget,
    )
    finished = True
    if search.best_arena > search.target:
        try:
            search.run(floor=0, last_rank=-1, top=0, lowest={i: 0 for i in range(len(buffers))})
        except (_BudgetSpent, RecursionError):  # one level per buffer: ~1000 buffers exceed Python's stack
            finished = False
    offsets = {b.name: off for b, off in zip(buffers, search.best_offsets)}
    return Placement(offsets, proved_minimal=finished or search.best_arena <= search.target)
