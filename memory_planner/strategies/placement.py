"""Building blocks the placement strategies share: time conflicts and the gap a buffer fits in.

Offsets and sizes are bytes. An occupied interval is (start, end), end exclusive.

Hand-overs with a stream order (`liveness.handovers`) are soft conflicts: taker T may overlap its source S
when S starts at least `distance` d above T. So for T a placed S blocks only [o_S + T.nbytes - d, o_S +
S.nbytes) (T then ends at or below o_S + T.nbytes - d, i.e. starts at least d below S, or lies above S), and
for S a placed T blocks only [o_T, o_T + d). A negative distance d (the taker at least -d above its source)
mirrors this: for T a placed S blocks only [o_S, o_S - d), for S a placed T only [o_T + S.nbytes + d, o_T +
T.nbytes). That interval may be empty or even reversed (start > end): it
still forbids what it must, because a buffer of n bytes at x collides with [start, end) exactly when
x < end and start < x + n, which `first_fit` and `best_fit` test in that form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from memory_planner.api import Buffer
from memory_planner.liveness import handovers

Interval = tuple[int, int]
Fit = Callable[[int, int, Sequence[Interval]], int]


class Blocker(NamedTuple):
    """Buffer `index`, once placed at offset o, blocks bytes [o + start, o + end) for the buffer being placed."""

    index: int
    start: int
    end: int


@dataclass(frozen=True)
class Placement:
    """A strategy's answer: an offset (bytes) for every buffer, and whether the search proved that no
    placement of these buffers has a smaller arena."""

    offsets: dict[str, int]
    proved_minimal: bool = False


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of `alignment` (a power of two) that is >= `value`."""
    return (value + alignment - 1) & -alignment


def time_conflicts(buffers: Sequence[Buffer]) -> list[list[Blocker]]:
    """For each buffer (by index), the other buffers live at one of its steps and the bytes each blocks for
    it: all of its own, or less at a hand-over with a stream order (module docstring)."""
    index = {b.name: i for i, b in enumerate(buffers)}
    soft: dict[tuple[int, int], Interval] = {}
    for h in handovers(buffers).values():
        if h.taker.stream is not None:
            taker, source = index[h.taker.name], index[h.source.name]
            if h.distance >= 0:
                soft[taker, source] = (h.taker.nbytes - h.distance, h.source.nbytes)
                soft[source, taker] = (0, h.distance)
            else:  # the taker at least -distance above its source
                soft[taker, source] = (0, -h.distance)
                soft[source, taker] = (h.source.nbytes + h.distance, h.taker.nbytes)
    return [
        [Blocker(j, *soft.get((i, j), (0, other.nbytes))) for j, other in enumerate(buffers)
         if j != i and other.first_step <= b.last_step and b.first_step <= other.last_step]
        for i, b in enumerate(buffers)
    ]


def first_fit(nbytes: int, alignment: int, occupied: Sequence[Interval]) -> int:
    """The lowest aligned offset where `nbytes` fit between the `occupied` intervals (TFLM's rule)."""
    offset = 0
    for start, end in sorted(occupied):
        if end <= offset:
            continue
        if offset + nbytes <= start:
            break
        offset = (end + alignment - 1) & -alignment  # align_up, inline: the searches call this millions of times
    return offset


def best_fit(nbytes: int, alignment: int, occupied: Sequence[Interval]) -> int:
    """The aligned offset in the smallest gap between `occupied` intervals that holds `nbytes`;
    above all of them when no gap does. Ties go to the lowest gap."""
    best: tuple[int, int] | None = None  # (gap bytes, offset)
    offset = 0
    for start, end in sorted(occupied):
        if end <= offset:
            continue
        if offset + nbytes <= start and (best is None or start - offset < best[0]):
            best = (start - offset, offset)
        offset = max(offset, align_up(end, alignment))
    return offset if best is None else best[1]


def place_in_order(
    buffers: Sequence[Buffer], order: Sequence[int], fit: Fit, conflicts: Sequence[Sequence[Blocker]] | None = None
) -> dict[str, int]:
    """Place buffers one by one in `order` (indices), each where `fit` puts it among the bytes the placed
    buffers live at one of its steps block; `conflicts` is `time_conflicts(buffers)` when the caller has it."""
    if conflicts is None:
        conflicts = time_conflicts(buffers)
    placed: list[int | None] = [None] * len(buffers)  # each buffer's offset (by index) once placed
    for i in order:
        occupied = [(placed[j] + start, placed[j] + end) for j, start, end in conflicts[i] if placed[j] is not None]
        placed[i] = fit(buffers[i].nbytes, buffers[i].alignment, occupied)
    return {buffers[i].name: placed[i] for i in order}


def arena_bytes(buffers: Sequence[Buffer], offsets: dict[str, int]) -> int:
    """The arena's size in bytes: the highest end of a placed buffer."""
    return max((offsets[b.name] + b.nbytes for b in buffers), default=0)
