"""An independent checker for memory plans. It shares no code with the strategies or with liveness.

`check_plan(buffers, plan)` raises `InvalidMemoryPlanError` (one line naming the buffers at fault) unless:
- every buffer, and nothing else, has an offset;
- every offset is >= 0 and a multiple of its buffer's alignment;
- every buffer ends inside the arena (offset + bytes <= arena bytes);
- no two buffers live at a same step share a byte, except an in-place hand-over: B names A in
  `inplace_of`, both sit at one offset, their only shared step is A's last and B's first, A was born
  before it, and B is not larger than A;
- the plan's lower bound is the largest number of bytes live at one step (recounted here by a sweep
  over start and end events, a hand-over counted once), and the arena is not below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from memory_planner.api import Buffer, MemoryPlan


class InvalidMemoryPlanError(ValueError):
    """A memory plan breaks one of the rules `check_plan` verifies."""


def _may_take(taker: Buffer, source: Buffer) -> bool:
    """Whether `taker` may reuse `source`'s bytes at their one shared step."""
    return (
        taker.inplace_of == source.name
        and source.first_step < source.last_step == taker.first_step
        and taker.nbytes <= source.nbytes
    )


def _is_handover(source: Buffer, taker: Buffer, offsets: dict[str, int]) -> bool:
    return _may_take(taker, source) and offsets[taker.name] == offsets[source.name]


def _check_pair(a: Buffer, b: Buffer, offsets: dict[str, int]) -> None:
    live_together = a.first_step <= b.last_step and b.first_step <= a.last_step
    a_lo, b_lo = offsets[a.name], offsets[b.name]
    bytes_shared = a.nbytes > 0 and b.nbytes > 0 and a_lo < b_lo + b.nbytes and b_lo < a_lo + a.nbytes
    if live_together and bytes_shared and not (_is_handover(a, b, offsets) or _is_handover(b, a, offsets)):
        raise InvalidMemoryPlanError(
            f"buffers {a.name!r} [{a_lo}, {a_lo + a.nbytes}) steps {a.first_step}..{a.last_step} and "
            f"{b.name!r} [{b_lo}, {b_lo + b.nbytes}) steps {b.first_step}..{b.last_step} overlap while both live"
        )


def _peak_live_bytes(buffers: Sequence[Buffer]) -> int:
    by_name = {b.name: b for b in buffers}
    events: dict[int, int] = {}
    for b in buffers:
        events[b.first_step] = events.get(b.first_step, 0) + b.nbytes
        events[b.last_step + 1] = events.get(b.last_step + 1, 0) - b.nbytes
        source = by_name.get(b.inplace_of or "")
        if source is not None and _may_take(b, source):
            events[b.first_step] -= b.nbytes  # the taker reuses the source's bytes at the hand-over step
            events[b.first_step + 1] = events.get(b.first_step + 1, 0) + b.nbytes
    peak = live = 0
    for step in sorted(events):
        live += events[step]
        peak = max(peak, live)
    return peak


def check_plan(buffers: Sequence[Buffer], plan: MemoryPlan) -> None:
    """Raise InvalidMemoryPlanError unless `plan` places `buffers` legally (rules in the module docstring)."""
    offsets = plan.offsets
    names = [b.name for b in buffers]
    missing = [n for n in names if n not in offsets]
    unknown = sorted(set(offsets) - set(names))
    if missing or unknown:
        raise InvalidMemoryPlanError(f"offsets missing for {missing} and given for unknown buffers {unknown}")
    for b in buffers:
        offset = offsets[b.name]
        if offset < 0 or offset % b.alignment:
            raise InvalidMemoryPlanError(f"buffer {b.name!r}: offset {offset} is not a non-negative multiple of {b.alignment}")
        if offset + b.nbytes > plan.arena_bytes:
            end = offset + b.nbytes
            raise InvalidMemoryPlanError(f"buffer {b.name!r}: ends at {end}, past the arena's {plan.arena_bytes} bytes")
    for a, b in combinations(buffers, 2):
        _check_pair(a, b, offsets)
    peak = _peak_live_bytes(buffers)
    if plan.lower_bound != peak or plan.arena_bytes < peak:
        raise InvalidMemoryPlanError(
            f"lower bound {plan.lower_bound} and arena {plan.arena_bytes} bytes disagree with the "
            f"{peak} bytes live at the busiest step"
        )
