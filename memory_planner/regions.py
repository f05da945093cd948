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
highest rank first (ties: the smaller, then by name), into the fastest region whose arena, planned with
them, still fits its bytes; whatever no faster region holds goes to the last region, which has no limit here
(the last region also holds the inputs, outputs, state and stack, which the RAM check counts:
target.resources).

Two rules keep the arenas independent: the model's inputs and outputs stay in the last region (their places
are the run function's arena offsets, `<MODEL>_INPUT0_OFFSET`); and an in-place hand-over (`Buffer.inplace_of`)
whose source lies in another region is dropped (two arrays cannot share bytes; apart is always legal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.check import check_plan
from memory_planner.liveness import aligned_lower_bound
from memory_planner.plan import ExecutionPlan, TensorRole
from memory_planner.planner import plan_memory

TRIAL_STRATEGY = "best_of_orders"
"""The heuristic that decides whether a buffer still fits a region while the greedy assignment tries it (the
final plan of each region, `plan_memory`'s "auto", is never larger: it starts from the heuristics' best)."""


@dataclass(frozen=True)
class RegionArena:
    """One region's arena: `region` its name, `capacity_bytes` the region's size (None for the last region,
    which takes the rest), `buffers` the buffers placed in it (in-place hand-overs across regions dropped),
    `memory` their plan (offsets from the region arena's start, bytes)."""

    region: str
    capacity_bytes: int | None
    buffers: tuple[Buffer, ...]
    memory: MemoryPlan


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


def _fits(buffers: Sequence[Buffer], capacity: int) -> bool:
    """Whether `buffers` can be placed in `capacity` bytes: the aligned liveness bound first (cheap, and no
    plan is smaller), then the trial heuristic's arena."""
    blocks = _apart(buffers)
    return (aligned_lower_bound(blocks) <= capacity
            and plan_memory(blocks, strategy=TRIAL_STRATEGY).arena_bytes <= capacity)


def assign_regions(buffers: Sequence[Buffer], rank: dict[str, float], capacities: Sequence[int],
                   movable: Callable[[Buffer], bool]) -> list[list[Buffer]]:
    """The buffers of each region, fastest first: greedily by `rank` (highest first; ties: smaller, then by
    name) into the fastest of the first len(capacities) - 1 regions whose arena still fits its capacity
    (bytes), the rest (and every buffer not `movable`) into the last region. Each list keeps `buffers`' order."""
    chosen: list[set[str]] = [set() for _ in capacities]
    members: list[list[Buffer]] = [[] for _ in capacities]
    ranked = sorted((b for b in buffers if movable(b) and b.nbytes > 0), key=lambda b: (-rank[b.name], b.nbytes, b.name))
    for buffer in ranked:
        for index, capacity in enumerate(capacities[:-1]):
            if buffer.nbytes <= capacity and _fits(members[index] + [buffer], capacity):
                members[index].append(buffer)
                chosen[index].add(buffer.name)
                break
    placed = set().union(*chosen[:-1]) if len(chosen) > 1 else set()
    regions = [[b for b in buffers if b.name in names] for names in chosen[:-1]]
    return [*regions, [b for b in buffers if b.name not in placed]]


def plan_regions(plan: ExecutionPlan, buffers: list[Buffer], regions: Sequence[tuple[str, int]]) -> list[RegionArena]:
    """One checked arena per region of `regions` ((name, bytes), fastest first) for `buffers` of `plan` in its
    call order (module docstring); with one region, `plan_memory(buffers)` itself. Raises
    InvalidMemoryPlanError (check.check_plan) when a region's plan fails the independent checker, RuntimeError
    when a faster region's final arena exceeds its bytes (both our bug)."""
    if len(regions) == 1:
        groups = [list(buffers)]
    else:
        io = {plan.storage_of(name) for name in plan.inputs + plan.outputs}
        groups = assign_regions(buffers, traffic_per_byte(plan, buffers), [capacity for _, capacity in regions],
                                movable=lambda b: b.name not in io and plan.tensors[b.name].role in
                                (TensorRole.INTERMEDIATE, TensorRole.SCRATCH))
    arenas = []
    for index, ((name, capacity), group) in enumerate(zip(regions, groups, strict=True)):
        blocks = group if len(regions) == 1 else _apart(group)
        memory = plan_memory(blocks)
        check_plan(blocks, memory)
        last = index == len(regions) - 1
        if not last and memory.arena_bytes > capacity:
            raise RuntimeError(f"region {name}: its arena of {memory.arena_bytes:,} B exceeds its {capacity:,} B")
        arenas.append(RegionArena(name, None if last else capacity, tuple(blocks), memory))
    return arenas


def regions_phrase(arenas: Sequence[RegionArena]) -> str:
    """The regions' arenas in words, fastest first: "dtcm 10,048 of 65,536 B, sram 0 B"."""
    return ", ".join(f"{arena.region} {arena.memory.arena_bytes:,}"
                     + ("" if arena.capacity_bytes is None else f" of {arena.capacity_bytes:,}") + " B"
                     for arena in arenas)
