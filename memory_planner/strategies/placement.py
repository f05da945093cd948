"""Building blocks the placement strategies share: time conflicts and the gap a buffer fits in.

Offsets and sizes are bytes. An occupied interval is (start, end), end exclusive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_planner.api import Buffer

Interval = tuple[int, int]
Fit = Callable[[int, int, Sequence[Interval]], int]


@dataclass(frozen=True)
class Placement:
    """A strategy's answer: an offset (bytes) for every buffer, and whether the search proved that no
    placement of these buffers has a smaller arena."""

    offsets: dict[str, int]
    proved_minimal: bool = False


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of `alignment` (a power of two) that is >= `value`."""
    return (value + alignment - 1) & -alignment


def time_conflicts(buffers: Sequence[Buffer]) -> list[list[int]]:
    """For each buffer (by index), the indices of the other buffers live at one of its steps."""
    return [
        [j for j, other in enumerate(buffers) if j != i and other.first_step <= b.last_step
         and b.first_step <= other.last_step]
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
        offset = align_up(end, alignment)
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
    buffers: Sequence[Buffer], order: Sequence[int], fit: Fit, conflicts: Sequence[Sequence[int]] | None = None
) -> dict[str, int]:
    """Place buffers one by one in `order` (indices), each where `fit` puts it among the placed buffers
    that are live at one of its steps; `conflicts` is `time_conflicts(buffers)` when the caller has it."""
    if conflicts is None:
        conflicts = time_conflicts(buffers)
    offsets: dict[int, int] = {}
    for i in order:
        occupied = [(offsets[j], offsets[j] + buffers[j].nbytes) for j in conflicts[i] if j in offsets]
        offsets[i] = fit(buffers[i].nbytes, buffers[i].alignment, occupied)
    return {buffers[i].name: off for i, off in offsets.items()}


def arena_bytes(buffers: Sequence[Buffer], offsets: dict[str, int]) -> int:
    """The arena's size in bytes: the highest end of a placed buffer."""
    return max((offsets[b.name] + b.nbytes for b in buffers), default=0)
