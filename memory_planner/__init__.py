"""Arena planning for an execution plan's buffers (pure Python, no TVM).

`plan_memory(buffers)` returns a `MemoryPlan` with an offset for every buffer in ONE arena.
"""

from __future__ import annotations

from memory_planner.api import Buffer, MemoryPlan

__all__ = ["Buffer", "MemoryPlan", "plan_memory"]


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def plan_memory(buffers: list[Buffer], strategy: str = "greedy_by_size") -> MemoryPlan:
    """Place each buffer, largest first, at the lowest aligned offset free during its live range."""
    steps = {s for b in buffers for s in range(b.first_step, b.last_step + 1)}
    lower_bound = max(
        (sum(b.nbytes for b in buffers if b.first_step <= s <= b.last_step) for s in steps), default=0
    )
    placed: list[tuple[Buffer, int]] = []
    offsets: dict[str, int] = {}
    for buf in sorted(buffers, key=lambda b: (-b.nbytes, b.first_step, b.name)):
        conflicts = sorted(
            (off, off + other.nbytes)
            for other, off in placed
            if other.first_step <= buf.last_step and buf.first_step <= other.last_step
        )
        offset = 0
        for start, end in conflicts:
            if offset + buf.nbytes <= start:
                break
            offset = max(offset, _align_up(end, buf.alignment))
        offsets[buf.name] = offset
        placed.append((buf, offset))
    arena = max((offsets[b.name] + b.nbytes for b in buffers), default=0)
    return MemoryPlan(offsets, arena, lower_bound, strategy, optimal=arena == lower_bound)
