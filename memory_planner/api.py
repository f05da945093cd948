"""The memory planner's contract: buffers with live ranges in, offsets in one arena out.

Pure Python, no TVM. Steps are the positions of kernel calls in execution order (0, 1, ...). A buffer is
live from `first_step` to `last_step` inclusive; two buffers whose ranges share a step must not overlap,
with one exception: a buffer with `inplace_of` set may share bytes with the buffer it names at their
hand-over step, because the kernel there writes it over that buffer in a known order (see `Buffer` and
`StreamOrder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

Interval = tuple[int, int]  # bytes [start, end), end exclusive


@dataclass(frozen=True)
class StreamOrder:
    """The order in which a kernel reads one input while it writes one output, pass by pass.

    The kernel runs `len(reads)` passes in order (the iterations of its outermost loop, in the order its
    schedule emits them). In pass k it reads the input's bytes within `reads[k]` and writes the output's
    bytes within `writes[k]`, both relative to the start of their own buffer; (0, 0) means none. Within a
    pass, reads and writes may interleave in any order. So the output may share bytes with the input if
    every pass writes only below the input bytes that this pass or a later one still reads: the output's
    write front stays behind the input's read front (`lead_bytes`), or, for a kernel whose passes run
    downwards (its outermost loop reversed), every pass writes only above them (`trail_bytes`).
    """

    reads: tuple[Interval, ...]
    writes: tuple[Interval, ...]

    def __post_init__(self) -> None:
        if len(self.reads) != len(self.writes):
            raise ValueError(f"stream order: {len(self.reads)} read intervals but {len(self.writes)} write intervals")

    def lead_bytes(self) -> int:
        """How far (bytes) the output's start must lie below the input's start when they overlap: the
        largest excess of a pass's write end over the lowest input byte still to be read then. May be
        negative (the output may then even start above the input)."""
        return _lead_bytes(self.reads, self.writes)

    def trail_bytes(self) -> int:
        """How far (bytes) the output's start must lie above the input's start when they overlap with the
        output above: the largest excess of the end of an input byte range this pass or a later one still
        reads over a pass's write start (the lead of the order mirrored, every byte offset negated). May be
        negative (the output may then even start below the input)."""
        return _lead_bytes(_mirrored(self.reads), _mirrored(self.writes))

    def reversed(self) -> "StreamOrder":
        """The order of the same kernel with its passes run last first (its outermost loop reversed)."""
        return StreamOrder(self.reads[::-1], self.writes[::-1])


@lru_cache(maxsize=4096)
def _lead_bytes(reads: tuple[Interval, ...], writes: tuple[Interval, ...]) -> int:
    """`StreamOrder.lead_bytes` of these passes, kept per distinct order: the planner's strategies ask for
    every hand-over's distance at each planning (time conflicts, bytes live per step), tens of thousands of
    times per compile, of orders of up to 256 passes."""
    lead = None
    unread: int | None = None  # lowest input byte read by this pass or a later one
    for (read_start, read_end), (write_start, write_end) in reversed(list(zip(reads, writes))):
        if read_start < read_end:
            unread = read_start if unread is None else min(unread, read_start)
        if write_start < write_end and unread is not None:
            lead = write_end - unread if lead is None else max(lead, write_end - unread)
    return 0 if lead is None else lead


@lru_cache(maxsize=4096)
def _mirrored(intervals: tuple[Interval, ...]) -> tuple[Interval, ...]:
    """The intervals with every byte offset negated (an empty interval stays empty)."""
    return tuple((-end, -start) for start, end in intervals)


@dataclass(frozen=True)
class Buffer:
    """One block of arena bytes. `alignment` is in bytes and a power of two; `label` is for people.

    `inplace_of` names another buffer (the source) whose bytes this one may take: the source was born at
    an earlier step (or is `filled_before`) and its last step is this buffer's first step, where one kernel
    reads the source and writes this buffer. `stream` says in what order (see `StreamOrder`): the two may
    then overlap if this buffer starts at least `stream.lead_bytes()` below the source, or at least
    `stream.trail_bytes()` above it (the planner takes the side where the pair spans fewer bytes: the
    `liveness.Handover`'s signed distance). Without `stream`,
    the kernel reads each element of the source before it writes this buffer's element at the same offset
    (an elementwise operator) and this buffer is not larger: the two may sit at exactly the same offset.
    Apart is always legal.

    `filled_before`: the caller fills this buffer before its first step (a model input planned into the
    arena), so the kernel there only reads it and it may give its bytes away at that very step. Any other
    source must be born before its hand-over step (the kernel that writes it at its first step could still
    be writing it while it writes the taker).
    """

    name: str
    nbytes: int
    first_step: int
    last_step: int
    alignment: int = 16
    label: str = ""
    inplace_of: str | None = None
    stream: StreamOrder | None = None
    filled_before: bool = False


VIEW_ALIGNMENT_BYTES = 16
"""The most alignment a view's first byte needs (bytes): the most any kernel's reads need (a 128-bit vector's;
Helium's VLDRW needs 4, LDRD 4; no helper assumes more than `__builtin_assume_aligned(w, 4)`). A buffer's larger
alignment (cortex-m55's and cortex-m7's 32, a D-cache line) is for speed: a piece at 16 bytes on still lies in one
line, and its copy costs more than the line it may share (an unrolled GRU's UNPACK pieces of 16 int8 on cortex-m55:
20 copies, kws_gru_40x16 7,320 -> 7,016 B of code, 406,746 -> 404,602 instructions, arena 5,328 -> 5,232 B;
`tvm_ext.transform.contiguous_views`)."""


@dataclass(frozen=True)
class View:
    """A tensor that has no buffer: `nbytes` bytes from `offset` bytes into buffer `base` (a reshape at 0, a
    contiguous slice at its block's offset), passed to kernels at steps `first_step` to `last_step`. The base's
    buffer holds the view's bytes: it must be live at every step the view is, so no other buffer overwrites
    them (the buffer's live range already spans its views': `from_plan.buffers_from_plan`), and the view
    starts at a multiple of the base's alignment or of VIEW_ALIGNMENT_BYTES, whichever is smaller (a kernel finds
    a view aligned as its reads need).

    `written_at`: the steps whose call writes the view (a piece of a join written in place, whose bytes are then
    the base's until the base's last step); empty for a view that is only read."""

    name: str
    base: str
    offset: int
    nbytes: int
    first_step: int
    last_step: int
    written_at: tuple[int, ...] = ()


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
