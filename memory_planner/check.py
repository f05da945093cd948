"""An independent checker for memory plans. It shares no code with the strategies or with liveness.

`check_plan(buffers, plan)` raises `InvalidMemoryPlanError` (one line naming the buffers at fault) unless:
- every buffer, and nothing else, has an offset;
- every offset is >= 0 and a multiple of its buffer's alignment;
- every buffer ends inside the arena (offset + bytes <= arena bytes);
- no two buffers live at a same step share a byte, except at a hand-over: B names A in `inplace_of`, no
  buffer listed before B names A, their only shared step is A's last and B's first, A was born before
  it (or filled by the caller before the run: `filled_before`), and either B has no stream order, both
  sit at one offset and B is not larger than A, or B's stream order, simulated pass by pass at the two
  offsets, writes only below, or only above (a kernel whose passes run downwards), every byte of A that this
  pass or a later one still reads;
- no hand-overs form a cycle (A takes B's bytes and B takes A's, or a longer ring): no execution can read
  each source before its taker writes it;
- every view (`api.View`, given with `views`) lies inside its base buffer at a multiple of the base's
  alignment, and its base is live at every step the view is (so the bytes it reads are the base's, which no
  other buffer shares then);
- every view a call writes (`View.written_at`: a piece of a join written in place) is written once, at the first
  step that passes it, and shares no byte with another view of its base that is written too (whose write would
  overwrite it while the base still holds it) or that is read before it is written (which would read bytes no
  call wrote yet);
- the plan's lower bound is the largest number of bytes live at one step (recounted here by a sweep
  over start and end events; at a hand-over the pair counts as their union at the smallest legal
  distance, B below A or above it, whichever spans fewer bytes, found by simulating the stream order), and
  the arena is not below it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from memory_planner.api import VIEW_ALIGNMENT_BYTES, Buffer, Interval, MemoryPlan, View


class InvalidMemoryPlanError(ValueError):
    """A memory plan breaks one of the rules `check_plan` verifies."""


def _behind(writes: Sequence[Interval], reads: Sequence[Interval], reads_above_writes: int) -> bool:
    """Whether every pass k writes (`writes[k]`) only below every byte that pass k or a later one reads
    (`reads[k:]`), the reads' offsets counted `reads_above_writes` bytes above the writes'."""
    for k, (write_start, write_end) in enumerate(writes):
        if write_start >= write_end:
            continue
        for read_start, read_end in reads[k:]:
            if read_start < read_end and write_end > reads_above_writes + read_start:
                return False
    return True


def _writes_stay_behind_reads(taker: Buffer, source_above_taker: int) -> bool:
    """Simulate `taker.stream` with the source starting `source_above_taker` bytes above the taker: whether
    every pass writes only below every source byte that this pass or a later one reads."""
    assert taker.stream is not None
    return _behind(taker.stream.writes, taker.stream.reads, source_above_taker)


def _writes_stay_above_reads(taker: Buffer, taker_above_source: int) -> bool:
    """Simulate `taker.stream` with the taker starting `taker_above_source` bytes above the source: whether
    every pass writes only above every source byte that this pass or a later one reads (a kernel whose
    passes run downwards): the simulation above with every byte offset negated."""
    assert taker.stream is not None

    def negated(intervals: Sequence[Interval]) -> list[Interval]:
        return [(-end, -start) for start, end in intervals]

    return _behind(negated(taker.stream.writes), negated(taker.stream.reads), taker_above_source)


def _smallest_legal(legal: Callable[[int], bool], low: int, limit: int) -> int:
    """The smallest distance >= `low` (bytes) for which `legal` holds, by bisection (a legal distance stays
    legal when it grows); `limit` if none below it is."""
    high = max(low, limit)
    while low < high:
        middle = (low + high) // 2
        if legal(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _smallest_legal_distance(taker: Buffer, source: Buffer) -> int | None:
    """The signed distance the source starts above `taker` at their hand-over where the pair spans the fewest
    bytes: the smallest legal one with the taker below (>= 0), or minus the smallest with the taker above,
    whichever spans fewer (ties: below); None when neither side lets the two share a byte."""
    below = _smallest_legal(lambda d: _writes_stay_behind_reads(taker, d), 0, taker.nbytes)
    above = _smallest_legal(lambda d: _writes_stay_above_reads(taker, d), 1, source.nbytes)  # 0: below
    shares_below, shares_above = below < taker.nbytes, above < source.nbytes
    if shares_above and (not shares_below or
                         max(source.nbytes, above + taker.nbytes) < max(taker.nbytes, below + source.nbytes)):
        return -above
    return below if shares_below else None


@dataclass(frozen=True)
class _HandOver:
    """A taker's legal sharing with its source: `distance` is the smallest distance (bytes) the source may
    start above it (0 without a stream order: both at one offset)."""

    source: Buffer
    distance: int

    def union_bytes(self, taker: Buffer) -> int:
        """The fewest bytes the pair spans at their hand-over step."""
        low, high = min(0, self.distance), max(taker.nbytes, self.distance + self.source.nbytes)
        return high - low


def _hand_over(taker: Buffer, source: Buffer) -> _HandOver | None:
    """How `taker` may share bytes with the `source` it names (offsets aside), or None if it may not."""
    if taker is source or source.last_step != taker.first_step \
            or not (source.first_step < source.last_step or source.filled_before):
        return None
    if taker.stream is None:
        return _HandOver(source, 0) if taker.nbytes <= source.nbytes else None
    distance = _smallest_legal_distance(taker, source)
    return None if distance is None else _HandOver(source, distance)


def _hand_overs(buffers: Sequence[Buffer]) -> dict[str, _HandOver]:
    """By taker name, the buffers that share bytes with their source at their hand-over: the one each names,
    if they may share and no buffer listed before it may share with that source. Computed once per check."""
    by_name: dict[str, Buffer] = {}
    for b in buffers:
        by_name.setdefault(b.name, b)
    found: dict[str, _HandOver] = {}
    given: set[str] = set()
    for taker in buffers:
        source = by_name.get(taker.inplace_of or "")
        hand_over = _hand_over(taker, source) if source is not None and source.name not in given else None
        if hand_over is not None:
            found[taker.name] = hand_over
            given.add(source.name)
    return found


def _check_no_cycle(hand_overs: dict[str, _HandOver]) -> None:
    """Raise unless following each taker's source, then that buffer's source and so on, never leads back to
    the taker (a ring has at most as many buffers as there are takers)."""
    for taker in hand_overs:
        ring = [taker]
        source = hand_overs[taker].source.name
        while source != taker and source in hand_overs and len(ring) <= len(hand_overs):
            ring.append(source)
            source = hand_overs[source].source.name
        if source == taker:
            names = " -> ".join(repr(name) for name in [*ring, taker])
            raise InvalidMemoryPlanError(f"hand-overs {names} form a cycle (each takes the bytes of the next)")


def _legal_overlap(source: Buffer, taker: Buffer, offsets: dict[str, int]) -> bool:
    if taker.stream is None:
        return offsets[taker.name] == offsets[source.name] and taker.nbytes <= source.nbytes
    source_above_taker = offsets[source.name] - offsets[taker.name]
    return (_writes_stay_behind_reads(taker, source_above_taker)
            or _writes_stay_above_reads(taker, -source_above_taker))


def _check_pair(a: Buffer, b: Buffer, offsets: dict[str, int], hand_overs: dict[str, _HandOver]) -> None:
    live_together = a.first_step <= b.last_step and b.first_step <= a.last_step
    a_lo, b_lo = offsets[a.name], offsets[b.name]
    bytes_shared = a.nbytes > 0 and b.nbytes > 0 and a_lo < b_lo + b.nbytes and b_lo < a_lo + a.nbytes
    if not (live_together and bytes_shared):
        return
    for source, taker in ((a, b), (b, a)):
        hand_over = hand_overs.get(taker.name)
        if hand_over is not None and hand_over.source is source and _legal_overlap(source, taker, offsets):
            return
    raise InvalidMemoryPlanError(
        f"buffers {a.name!r} [{a_lo}, {a_lo + a.nbytes}) steps {a.first_step}..{a.last_step} and "
        f"{b.name!r} [{b_lo}, {b_lo + b.nbytes}) steps {b.first_step}..{b.last_step} overlap while both live"
    )


def _peak_live_bytes(buffers: Sequence[Buffer], hand_overs: dict[str, _HandOver]) -> int:
    events: dict[int, int] = {}
    for b in buffers:
        events[b.first_step] = events.get(b.first_step, 0) + b.nbytes
        events[b.last_step + 1] = events.get(b.last_step + 1, 0) - b.nbytes
        hand_over = hand_overs.get(b.name)
        if hand_over is not None:
            saved = hand_over.source.nbytes + b.nbytes - hand_over.union_bytes(b)
            events[b.first_step] -= saved  # the pair shares bytes at the hand-over step only
            events[b.first_step + 1] = events.get(b.first_step + 1, 0) + saved
    peak = live = 0
    for step in sorted(events):
        live += events[step]
        peak = max(peak, live)
    return peak


def _check_view(view: View, bases: dict[str, Buffer]) -> None:
    """Raise unless `view` lies inside its base, aligned as its readers need (View), while the base is live."""
    base = bases.get(view.base)
    if base is None:
        raise InvalidMemoryPlanError(f"view {view.name!r}: its base {view.base!r} is no buffer of the plan")
    alignment = min(base.alignment, VIEW_ALIGNMENT_BYTES)
    if view.offset < 0 or view.offset + view.nbytes > base.nbytes or view.offset % alignment:
        raise InvalidMemoryPlanError(
            f"view {view.name!r}: bytes [{view.offset}, {view.offset + view.nbytes}) of {view.base!r} are not "
            f"inside its {base.nbytes} bytes at a multiple of {alignment} (alignment)")
    if not base.first_step <= view.first_step <= view.last_step <= base.last_step:
        raise InvalidMemoryPlanError(
            f"view {view.name!r}: read at steps {view.first_step}..{view.last_step}, but its base {view.base!r} "
            f"lives only at steps {base.first_step}..{base.last_step}")


def _shares_bytes(a: View, b: View) -> bool:
    return a.base == b.base and a.nbytes > 0 and b.nbytes > 0 and a.offset < b.offset + b.nbytes \
        and b.offset < a.offset + a.nbytes


def _check_written_views(views: Sequence[View]) -> None:
    """Raise unless every written view is written once, first, and no other view of its base that is written, or
    read before it is written, shares a byte with it."""
    for view in views:
        if not view.written_at:
            continue
        if list(view.written_at) != [view.first_step]:
            raise InvalidMemoryPlanError(
                f"view {view.name!r}: written at steps {list(view.written_at)}, not once at the first step that "
                f"passes it ({view.first_step})")
        for other in views:
            if other is view or not _shares_bytes(view, other):
                continue
            if other.written_at or other.first_step < view.first_step:
                what = f"written at step {other.first_step}" if other.written_at else f"read at step {other.first_step}"
                raise InvalidMemoryPlanError(
                    f"views {view.name!r} (written at step {view.first_step}) and {other.name!r} ({what}) share "
                    f"bytes of {view.base!r}")


def check_plan(buffers: Sequence[Buffer], plan: MemoryPlan, views: Sequence[View] = ()) -> None:
    """Raise InvalidMemoryPlanError unless `plan` places `buffers` and their `views` legally (rules in the module
    docstring)."""
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
    bases = {b.name: b for b in buffers}
    for view in views:
        _check_view(view, bases)
    _check_written_views(views)
    hand_overs = _hand_overs(buffers)
    _check_no_cycle(hand_overs)
    for a, b in combinations(buffers, 2):
        _check_pair(a, b, offsets, hand_overs)
    peak = _peak_live_bytes(buffers, hand_overs)
    if plan.lower_bound != peak or plan.arena_bytes < peak:
        raise InvalidMemoryPlanError(
            f"lower bound {plan.lower_bound} and arena {plan.arena_bytes} bytes disagree with the "
            f"{peak} bytes live at the busiest step"
        )
