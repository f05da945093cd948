"""Liveness: live ranges from an order of steps, bytes live per step, and the arena's lower bound.

A step is one kernel call in execution order. A name is live from the first step that touches it to
the last step that touches it, inclusive. The lower bound on any arena for a fixed order is the largest
number of bytes live at one step; a buffer that takes over its `inplace_of` buffer at their shared step
adds nothing at that step (the two share bytes there), so the pair counts as the larger of the two.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memory_planner.api import Buffer


def live_ranges(steps: Sequence[Collection[str]]) -> dict[str, tuple[int, int]]:
    """Map each name touched by `steps[i]` (i = step) to its (first step, last step), inclusive."""
    ranges: dict[str, tuple[int, int]] = {}
    for step, names in enumerate(steps):
        for name in names:
            first, _ = ranges.get(name, (step, step))
            ranges[name] = (first, step)
    return ranges


def shares_at_handover(buffer: Buffer, by_name: dict[str, Buffer]) -> bool:
    """True when `buffer` may take its `inplace_of` buffer's bytes: that buffer exists, was born at an
    earlier step, dies at the step `buffer` is born, and is at least as large."""
    if buffer.inplace_of is None or buffer.inplace_of not in by_name:
        return False
    source = by_name[buffer.inplace_of]
    return source.first_step < source.last_step == buffer.first_step and buffer.nbytes <= source.nbytes


def live_per_step(buffers: Sequence[Buffer]) -> list[list[Buffer]]:
    """The buffers holding bytes of their own at each step 0..last step of any buffer: a buffer is left
    out at the step where it takes over its `inplace_of` buffer's bytes."""
    steps = max((b.last_step for b in buffers), default=-1) + 1
    live: list[list[Buffer]] = [[] for _ in range(steps)]
    by_name = {b.name: b for b in buffers}
    for buffer in buffers:
        first = buffer.first_step + shares_at_handover(buffer, by_name)
        for step in range(first, buffer.last_step + 1):
            live[step].append(buffer)
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
