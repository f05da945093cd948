"""The memory planner's contract: buffers with live ranges in, offsets in one arena out.

Pure Python, no TVM. Steps are the positions of kernel calls in execution order (0, 1, ...). A buffer is
live from `first_step` to `last_step` inclusive; two buffers whose ranges share a step must not overlap,
with one exception: a buffer with `inplace_of` set may sit at exactly the same offset as the buffer it
names, because the kernel at their hand-over step writes it over that buffer (see `Buffer`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Buffer:
    """One block of arena bytes. `alignment` is in bytes and a power of two; `label` is for people.

    `inplace_of` names another buffer whose bytes this one may take: that buffer was born at an earlier
    step, its last step is this buffer's first step, this buffer is not larger, and the kernel at that
    step reads each element of it before writing this buffer's element at the same offset. Placing the
    two at the same offset is then legal although both are live at that step; apart is legal too.
    """

    name: str
    nbytes: int
    first_step: int
    last_step: int
    alignment: int = 16
    label: str = ""
    inplace_of: str | None = None


@dataclass(frozen=True)
class MemoryPlan:
    """Where each buffer lives in the arena.

    `offsets` maps every buffer name to its byte offset; `arena_bytes` is the arena's size in bytes;
    `lower_bound` the largest sum of bytes live at one step (no plan can be smaller); `optimal` is True only
    when the plan is proved minimal for the given order. `strategy` names the strategy whose placement won.
    """

    offsets: dict[str, int]
    arena_bytes: int
    lower_bound: int
    strategy: str
    optimal: bool
