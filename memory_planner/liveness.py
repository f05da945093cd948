"""Liveness: live ranges from an order of steps, bytes live per step, and the arena's lower bound.

A step is one kernel call in execution order. A name is live from the first step that touches it to
the last step that touches it, inclusive. The lower bound on any arena for a fixed order is the largest
number of bytes live at one step; a buffer that takes over its `inplace_of` buffer at their shared step
shares bytes with it there, so the pair counts as the bytes of their union (`Handover`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from memory_planner.api import Buffer


def live_ranges(steps: Sequence[Collection[str]]) -> dict[str, tuple[int, int]]:
    """Map each name touched by `steps[i]` (i = step) to its (first step, last step), inclusive."""
    ranges: dict[str, tuple[int, int]] = {}
    for step, names in enumerate(steps):
        for name in names:
            first, _ = ranges.get(name, (step, step))
            ranges[name] = (first, step)
    return ranges


@dataclass(frozen=True)
class Handover:
    """A taker shares bytes with its source at their hand-over step: the source starts `distance` bytes
    (unaligned) above the taker, at least that far when the two overlap; a negative distance: the taker starts
    at least -distance bytes above the source (a kernel whose passes run downwards, `StreamOrder.trail_bytes`).
    The two span `union_bytes` there."""

    taker: Buffer
    source: Buffer
    distance: int

    @property
    def union_bytes(self) -> int:
        return max(self.taker.nbytes, self.distance + self.source.nbytes) - min(self.distance, 0)


def stream_distance(taker: Buffer, source: Buffer) -> int | None:
    """The signed distance (`Handover.distance`) at which `taker` (which has a stream order) shares the most
    bytes with `source`: its lead below the source (at least 0) when smaller than the taker, or its trail above
    (at least 1, negated: distance 0 means below) when smaller than the source, whichever spans fewer bytes (ties: below); None when
    neither side saves a byte."""
    assert taker.stream is not None
    below, above = max(taker.stream.lead_bytes(), 0), max(taker.stream.trail_bytes(), 1)
    sides = []
    if below < taker.nbytes:
        sides.append((max(taker.nbytes, below + source.nbytes), 0, below))
    if above < source.nbytes:
        sides.append((max(source.nbytes, above + taker.nbytes), 1, -above))
    return min(sides)[2] if sides else None


class HandoverCycleError(ValueError):
    """Legal hand-overs that form a cycle (A takes B's bytes and B takes A's, or a longer ring): each kernel
    would have to read its source before another writes it, which no execution can do. Only one-step
    buffers that are all `filled_before` at one step can form one; whoever made such buffers has a bug."""


def handovers(buffers: Sequence[Buffer]) -> dict[str, Handover]:
    """The legal hand-overs by taker name. Legal: the taker's `inplace_of` buffer exists, was born at an
    earlier step (or is `filled_before`) and dies at the step the taker is born; without a stream order the
    taker is not larger (distance 0); with one, the distance is `stream_distance`'s (None: sharing saves
    nothing). A source gives its bytes to the first buffer listed with a
    legal hand-over. Raises HandoverCycleError if the legal hand-overs form a cycle."""
    by_name = {b.name: b for b in buffers}
    found: dict[str, Handover] = {}
    given: set[str] = set()
    for taker in buffers:
        source = by_name.get(taker.inplace_of or "")
        if source is None or source.name in given or taker.name == source.name:
            continue
        born_before = source.first_step < source.last_step or source.filled_before
        if source.last_step != taker.first_step or not born_before:
            continue
        if taker.stream is None:
            distance = 0 if taker.nbytes <= source.nbytes else None
        else:
            distance = stream_distance(taker, source)
        if distance is not None:
            found[taker.name] = Handover(taker, source, distance)
            given.add(source.name)
    _reject_cycles(found)
    return found


def _reject_cycles(found: dict[str, Handover]) -> None:
    """Raise HandoverCycleError naming the buffers of the first cycle among `found` (taker name -> its
    hand-over), each followed by the one whose bytes it takes. Each taker has one source, so following
    sources from any taker either leaves the takers or comes back to a buffer already on the walk."""
    cleared: set[str] = set()  # takers whose walk leaves the takers
    for start in found:
        walk: list[str] = []
        name = start
        while name in found and name not in cleared and name not in walk:
            walk.append(name)
            name = found[name].source.name
        if name in walk:
            ring = walk[walk.index(name):] + [name]
            names = " -> ".join(repr(n) for n in ring)
            raise HandoverCycleError(f"in-place hand-overs {names} form a cycle that no execution can satisfy "
                                     "(each buffer takes the bytes of the next)")
        cleared.update(walk)


def live_per_step(buffers: Sequence[Buffer]) -> list[list[Buffer]]:
    """The blocks of bytes live at each step 0..last step of any buffer: each buffer over its live range,
    except that at a hand-over step the source and its taker are one block of their union's bytes (with the
    source's alignment when it starts lowest or both start at one offset, else the taker's)."""
    steps = max((b.last_step for b in buffers), default=-1) + 1
    live: list[list[Buffer]] = [[] for _ in range(steps)]
    shared = handovers(buffers)
    sources = {h.source.name: h for h in shared.values()}
    for buffer in buffers:
        for step in range(buffer.first_step, buffer.last_step + 1):
            taken, given = shared.get(buffer.name), sources.get(buffer.name)  # at its first, at its last step
            handover = taken if taken is not None and step == buffer.first_step else given
            if handover is None or step != handover.taker.first_step:
                live[step].append(buffer)
            elif buffer is handover.taker:  # the pair's one block, counted once
                lowest = handover.source if handover.distance <= 0 else handover.taker
                live[step].append(replace(lowest, nbytes=handover.union_bytes))
    return live


def bytes_live_per_step(buffers: Sequence[Buffer]) -> list[int]:
    """Bytes live at each step 0..last step of any buffer (in-place hand-overs counted once)."""
    return [sum(b.nbytes for b in at_step) for at_step in live_per_step(buffers)]


def lower_bound(buffers: Sequence[Buffer]) -> int:
    """The largest number of bytes live at one step: no arena for this order can be smaller (bytes)."""
    return max(bytes_live_per_step(buffers), default=0)


def _stack_bound(at_step: Sequence[Buffer]) -> int:
    if not at_step:
        return 0
    grain = min(b.alignment for b in at_step)
    padded = [-(-b.nbytes // grain) * grain for b in at_step]
    return sum(padded) - max(p - b.nbytes for p, b in zip(padded, at_step))


def aligned_lower_bound(buffers: Sequence[Buffer]) -> int:
    """A bound >= `lower_bound` that counts alignment (bytes).

    At one step, take the live buffers by offset: each offset is a multiple of the smallest alignment
    `g` among them (alignments are powers of two), so each buffer but the top one takes its size
    rounded up to `g` before the next starts. The stack is at least the sum of the rounded sizes minus
    the largest rounding.
    """
    return max((_stack_bound(at_step) for at_step in live_per_step(buffers)), default=0)
