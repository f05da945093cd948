"""Region assignment: split a plan's arena buffers over RAM regions of different speed, one arena per region.

A step of its own over the static plan, after the call order and before placement: `plan_regions` takes the
buffers `buffers_from_plan` gives and the regions as (name, bytes), fastest first, and returns one
`RegionArena` per region, each planned by `plan_memory` (the same minimal-offset planner as a one-region
bundle) and verified by the independent checker (`check.check_plan`). With one region it is `plan_memory` on
all the buffers: the same plan, byte for byte, as before regions existed.

Which buffers go where. Each buffer is ranked by its estimated traffic per byte held (`traffic_per_byte`):
the bytes the kernels load from and store to it in one inference, over its size. A kernel that multiplies
and accumulates (`KernelCall.macs` > 0) loads one element of each activation input and scratch per MAC
(its inputs are read again for every output channel and window tap); any other access (a MAC kernel's output,
which it stores once per element; every operand of a kernel without MACs, such as an add, a copy or a pool
counted without MACs) moves the buffer's bytes once. A high rank means a small buffer that a convolution
streams through many times: what a fast, small memory pays off for. The buffers are then placed greedily,
highest rank first (ties: the smaller, then by name), into the fastest region where first fit finds them a
place within its bytes beside the buffers already there (the lowest aligned offset free at every step the
buffer lives: linear in the buffers placed, so the assignment stays fast on a model of hundreds of buffers;
where first fit finds no place, but the liveness bound of the region's buffers with it fits, a re-plan of
them all by the best of nine greedy orders (best_of_orders), which also takes in-place hand-overs such as a 1x1 convolution writing
its output over its input, may: its offsets then replace the region's);
whatever no faster region holds goes to the last region, which has no limit here (the last region also holds
the inputs, outputs, state and stack, which the RAM check counts: target.resources). Each region is then
planned by `plan_memory`; a faster region keeps the first-fit placement instead in the rare case where
`plan_memory`'s arena would not fit its bytes (it is a legal plan, and the checker verifies it all the same).

Two rules keep the arenas independent: the model's inputs and outputs stay in the last region (their places
are the run function's arena offsets, `<MODEL>_INPUT0_OFFSET`); and an in-place hand-over (`Buffer.inplace_of`)
whose source lies in another region is dropped (two arrays cannot share bytes; apart is always legal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.check import check_plan
from memory_planner.from_plan import views_from_plan
from memory_planner.liveness import aligned_lower_bound, lower_bound
from memory_planner.plan import ExecutionPlan, TensorRole
from memory_planner.planner import plan_memory
from memory_planner.strategies.placement import arena_bytes, first_fit

REPLAN_STRATEGY = "best_of_orders"
"""The strategy that re-plans a region's buffers with one first fit could not place (module docstring)."""

FIRST_FIT = "regions_first_fit"
"""The strategy a faster region's MemoryPlan names when it keeps the assignment's first-fit placement."""


@dataclass(frozen=True)
class RegionArena:
    """One region's arena: `region` its name, `capacity_bytes` the region's size (None for the last region,
    which takes the rest), `buffers` the buffers placed in it (in-place hand-overs across regions dropped),
    `memory` their plan (offsets from the region arena's start, bytes), `traffic_per_byte` the rank that placed
    them (`traffic_per_byte`, by buffer name: computed once by `plan_regions`; empty for one region, which
    ranks nothing)."""

    region: str
    capacity_bytes: int | None
    buffers: tuple[Buffer, ...]
    memory: MemoryPlan
    traffic_per_byte: Mapping[str, float] = field(default_factory=dict)


def traffic_per_byte(plan: ExecutionPlan, buffers: Sequence[Buffer]) -> dict[str, float]:
    """Each buffer's estimated bytes loaded and stored per inference over its bytes (module docstring), by
    buffer name; steps are positions in `plan.calls` (the order `buffers` were made for)."""
    moved = {buffer.name: 0 for buffer in buffers}
    for call in plan.calls:
        streamed = {plan.storage_of(name) for name in call.inputs + call.scratch} if call.macs > 0 else set()
        for root in {plan.storage_of(name) for name in call.args}:
            if root not in moved:
                continue
            tensor = plan.tensors[root]
            item_bytes = tensor.nbytes // tensor.elements if tensor.elements else 0
            moved[root] += call.macs * item_bytes if root in streamed else tensor.nbytes
    return {buffer.name: moved[buffer.name] / buffer.nbytes if buffer.nbytes else 0.0 for buffer in buffers}


def _apart(buffers: Sequence[Buffer]) -> list[Buffer]:
    """`buffers` with each in-place hand-over whose source is not among them dropped."""
    names = {buffer.name for buffer in buffers}
    return [buffer if buffer.inplace_of is None or buffer.inplace_of in names
            else replace(buffer, inplace_of=None, stream=None) for buffer in buffers]


def first_fit_offset(buffer: Buffer, placed: Sequence[tuple[int, Buffer]]) -> int:
    """The lowest offset (bytes), a multiple of `buffer.alignment`, at which `buffer` shares no byte with a
    buffer of `placed` ((offset, buffer) pairs) live at one of its steps; but the offset of the buffer it takes
    the bytes of in place (`Buffer.inplace_of`, without a stream order: same offset, not larger) where that one
    is placed and no other placed buffer live with it is in the way."""
    live = [(offset, other) for offset, other in placed
            if other.first_step <= buffer.last_step and buffer.first_step <= other.last_step]
    source = next(((offset, other) for offset, other in live if other.name == buffer.inplace_of), None)
    if source is not None and buffer.stream is None and buffer.nbytes <= source[1].nbytes:
        start = source[0]
        if all(offset + other.nbytes <= start or start + buffer.nbytes <= offset
               for offset, other in live if other is not source[1]):
            return start
    return first_fit(buffer.nbytes, buffer.alignment, [(offset, offset + other.nbytes) for offset, other in live])


def assign_regions(buffers: Sequence[Buffer], rank: dict[str, float], capacities: Sequence[int],
                   movable: Callable[[Buffer], bool]) -> list[dict[str, int]]:
    """Each region's buffers with their first-fit offsets (bytes), fastest first: greedily by `rank` (highest
    first; ties: smaller, then by name) into the fastest of the first len(capacities) - 1 regions where first
    fit places them within its capacity (bytes); the rest (and every buffer not `movable`) into the last
    region, offset 0 (planned afterwards). Each mapping keeps `buffers`' order."""
    placed: list[list[tuple[int, Buffer]]] = [[] for _ in capacities[:-1]]
    ranked = sorted((b for b in buffers if movable(b) and b.nbytes > 0), key=lambda b: (-rank[b.name], b.nbytes, b.name))
    for buffer in ranked:
        for index, capacity in enumerate(capacities[:-1]):
            if buffer.nbytes > capacity:
                continue
            offset = first_fit_offset(buffer, placed[index])
            if offset + buffer.nbytes <= capacity:
                placed[index].append((offset, buffer))
                break
            replanned = _replanned([b for _, b in placed[index]] + [buffer], capacity)
            if replanned is not None:
                placed[index] = replanned
                break
    offsets = [{b.name: offset for offset, b in region} for region in placed]
    taken = {name for region in offsets for name in region}
    return [*({b.name: region[b.name] for b in buffers if b.name in region} for region in offsets),
            {b.name: 0 for b in buffers if b.name not in taken}]


def _replanned(members: list[Buffer], capacity: int) -> list[tuple[int, Buffer]] | None:
    """`members` (in the order given) at the offsets REPLAN_STRATEGY gives them, or None when its arena (or,
    before it is run, the aligned liveness bound) exceeds `capacity` bytes."""
    blocks = _apart(members)
    if aligned_lower_bound(blocks) > capacity:
        return None
    memory = plan_memory(blocks, strategy=REPLAN_STRATEGY)
    return None if memory.arena_bytes > capacity else [(memory.offsets[b.name], b) for b in blocks]


def _kept(blocks: list[Buffer], offsets: dict[str, int]) -> MemoryPlan:
    """The first-fit placement `offsets` of `blocks` as a MemoryPlan (FIRST_FIT)."""
    arena = arena_bytes(blocks, offsets)
    return MemoryPlan(dict(offsets), arena, lower_bound(blocks), FIRST_FIT, arena == aligned_lower_bound(blocks))


def faster_arena_bytes(arenas: Sequence[RegionArena]) -> int:
    """The bytes of the faster regions' arenas (0 for one region)."""
    return sum(arena.memory.arena_bytes for arena in arenas[:-1])


def plan_regions(plan: ExecutionPlan, buffers: list[Buffer], regions: Sequence[tuple[str, int]],
                 checked: bool = True) -> list[RegionArena]:
    """One checked arena per region of `regions` ((name, bytes), fastest first) for `buffers` of `plan` in its
    call order (module docstring); with one region, `plan_memory(buffers)` itself. Raises
    InvalidMemoryPlanError (check.check_plan) when a region's plan fails the independent checker, RuntimeError
    when a faster region's final arena exceeds its bytes (both our bug). `checked` False leaves out the
    independent checker: for a trial whose arena only informs a choice, the plan taken being planned (and
    checked) again; the arenas are the same either way."""
    if len(regions) == 1:
        memory = plan_memory(buffers)
        if checked:
            check_plan(buffers, memory, views_from_plan(plan, buffers))
        return [RegionArena(regions[0][0], None, tuple(buffers), memory)]
    io = {plan.storage_of(name) for name in plan.inputs + plan.outputs}
    rank = traffic_per_byte(plan, buffers)
    placements = assign_regions(buffers, rank, [capacity for _, capacity in regions],
                                movable=lambda b: b.name not in io and plan.tensors[b.name].role in
                                (TensorRole.INTERMEDIATE, TensorRole.SCRATCH))
    arenas = []
    for index, ((name, capacity), offsets) in enumerate(zip(regions, placements, strict=True)):
        blocks = _apart([b for b in buffers if b.name in offsets])
        memory = plan_memory(blocks)
        last = index == len(regions) - 1
        if not last and memory.arena_bytes > capacity:
            memory = _kept(blocks, offsets)
        if checked:
            check_plan(blocks, memory, views_from_plan(plan, blocks))
        if not last and memory.arena_bytes > capacity:
            raise RuntimeError(f"region {name}: its arena of {memory.arena_bytes:,} B exceeds its {capacity:,} B")
        arenas.append(RegionArena(name, None if last else capacity, tuple(blocks), memory,
                                  {b.name: rank[b.name] for b in blocks}))
    return arenas


def regions_phrase(arenas: Sequence[RegionArena]) -> str:
    """The regions' arenas in words, fastest first: "dtcm 10,048 of 65,536 B, sram 0 B"."""
    return ", ".join(f"{arena.region} {arena.memory.arena_bytes:,}"
                     + ("" if arena.capacity_bytes is None else f" of {arena.capacity_bytes:,}") + " B"
                     for arena in arenas)
