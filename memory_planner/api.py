"""The memory planner's contract: buffers with live ranges in, offsets in one arena out.

Pure Python, no TVM. Steps are the positions of kernel calls in execution order (0, 1, ...). A buffer is
live from `first_step` to `last_step` inclusive; two buffers whose ranges share a step must not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Buffer:
    """One block of arena bytes. `alignment` is in bytes and a power of two; `label` is for people."""

    name: str
    nbytes: int
    first_step: int
    last_step: int
    alignment: int = 16
    label: str = ""


@dataclass(frozen=True)
class MemoryPlan:
    """Where each buffer lives in the arena.

    `offsets` maps every buffer name to its byte offset; `arena_bytes` is the arena's size in bytes;
    `lower_bound` the largest sum of bytes live at one step (no plan can be smaller); `optimal` is True only
    when the plan is proved minimal for the given order.
    """

    offsets: dict[str, int]
    arena_bytes: int
    lower_bound: int
    strategy: str
    optimal: bool
