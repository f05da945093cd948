"""Read an ExecutionPlan's arena buffers: one per storage, live from its writer to its last reader.

Which tensors are arena buffers: a tensor and all its views (reshape, flatten: `Tensor.view_of`) share
one storage, the root of the chain, so a root gives one buffer and a reshape costs nothing. A root whose
role is INTERMEDIATE lives from the step that writes it to the last step that reads it or any of its
views; a SCRATCH root lives at the step(s) of the calls that use it. INPUT and OUTPUT tensors live in the
caller's buffers and CONSTANTs in flash, so they are not in the arena; with `io_in_arena` INPUT and OUTPUT
roots are arena buffers too, an input from step 0 (the caller fills it before the run) to its last reader,
an output from its writer to the last step (the caller reads it after the run), so other buffers may reuse
an input's bytes once it is read and an output's bytes until it is written.

Views (`Tensor.view_of`, at `Tensor.view_offset`): `views_from_plan` lists, for the checker, each view of an arena
buffer that a call passes, with the steps that pass it and those that write it (a piece of a join written in place:
a root no call writes whole lives from its first piece's write); its bytes are its root's, so the root lives while
it does.

In-place facts: `KernelCall.access.inplace_outputs` (`InplaceOutput`). The output's buffer gets
`inplace_of = <input's storage>` (and the fact's stream order) when that call is the input storage's last
use, the call writes the output there first, and both are arena INTERMEDIATEs; without a stream order the
output must not be larger (writing a larger output element k would overwrite input bytes past element k
that the kernel has not read yet); with one, the input storage must be passed to the call only once (its
order covers the reads through one parameter). With `io_in_arena` the input may be the model's input and
the output the model's output (a model input is `Buffer.filled_before`: the caller fills it before the
run, so it gives its bytes away even at step 0, where it is born).

Steps are positions in `order` (indices into `plan.calls`; default: the plan's own order).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_planner.api import Buffer, MemoryPlan, StreamOrder, View
from memory_planner.liveness import live_ranges
from memory_planner.plan import ExecutionPlan, KernelCall, TensorRole

ARENA_ROLES = (TensorRole.INTERMEDIATE, TensorRole.SCRATCH)
IO_ROLES = (TensorRole.INPUT, TensorRole.OUTPUT)


def _storages(plan: ExecutionPlan, call: KernelCall, names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in plan.tensors]
    if unknown:
        raise ValueError(f"model {plan.model}: kernel {call.kernel} names unknown tensor {unknown[0]!r}")
    return [plan.storage_of(n) for n in names]


def _checked_order(plan: ExecutionPlan, order: Sequence[int] | None) -> list[int]:
    if order is None:
        return list(range(len(plan.calls)))
    if sorted(order) != list(range(len(plan.calls))):
        raise ValueError(f"model {plan.model}: order {list(order)} is not a permutation of its {len(plan.calls)} calls")
    return list(order)


def buffers_from_plan(
    plan: ExecutionPlan, order: Sequence[int] | None = None, alignment: int = 16, io_in_arena: bool = False
) -> list[Buffer]:
    """The arena buffers of `plan` run in `order`, named after their root tensor, `alignment` in bytes,
    labelled with the layer that produces them; listed by first step, then by first mention. `io_in_arena`:
    the model's inputs and outputs are arena buffers too (module docstring)."""
    calls = [plan.calls[i] for i in _checked_order(plan, order)]
    written = [set(_storages(plan, c, c.outputs + c.scratch)) for c in calls]
    touched = [_storages(plan, c, c.args) for c in calls]
    roles = ARENA_ROLES + IO_ROLES if io_in_arena else ARENA_ROLES
    ranges = {
        root: _held(plan.tensors[root].role, steps, len(calls))
        for root, steps in live_ranges(touched).items()
        if plan.tensors[root].role in roles
    }
    for root, (first, _) in ranges.items():
        if plan.tensors[root].role is not TensorRole.INPUT and root not in written[first]:
            raise ValueError(
                f"model {plan.model}: tensor {root!r} is read by kernel {calls[first].kernel} (step {first}) "
                "before any call writes it"
            )
    taken_from = _inplace_sources(plan, calls, ranges)
    buffers = []
    for root, (first, last) in sorted(ranges.items(), key=lambda item: item[1][0]):  # stable: then by mention
        tensor = plan.tensors[root]
        label = tensor.layer or "/".join(calls[first].layers)
        if tensor.role is TensorRole.SCRATCH:
            label += " (scratch)"
        source, stream = taken_from.get(root, (None, None))
        buffers.append(Buffer(root, tensor.nbytes, first, last, alignment, label, source, stream,
                              filled_before=tensor.role is TensorRole.INPUT))
    return buffers


def _held(role: TensorRole, touched: tuple[int, int], steps: int) -> tuple[int, int]:
    """The steps (first, last) a storage holds its bytes: those that touch it, an input's from step 0 and an
    output's to the last of the `steps` steps."""
    first, last = touched
    return (0 if role is TensorRole.INPUT else first, steps - 1 if role is TensorRole.OUTPUT else last)


def _inplace_sources(
    plan: ExecutionPlan, calls: Sequence[KernelCall], ranges: dict[str, tuple[int, int]]
) -> dict[str, tuple[str, StreamOrder | None]]:
    """Map output storage -> (input storage, stream order) for each legal in-place fact (module docstring);
    each input storage is given to at most one output, the first the plan lists."""
    sources: dict[str, tuple[str, StreamOrder | None]] = {}
    for step, call in enumerate(calls):
        passed = _storages(plan, call, call.args)
        for fact in call.access.inplace_outputs:
            out, src = _storages(plan, call, (fact.output, fact.input))
            fits = plan.tensors[out].nbytes <= plan.tensors[src].nbytes if fact.stream is None \
                else passed.count(src) == 1
            # The facts' offsets are relative to each storage's first byte: no argument may read the source from
            # further on, and the output is its storage's first byte.
            from_start = plan.storage_offset(fact.output) == 0 and all(
                plan.storage_offset(a) == 0 for a in call.args if plan.storage_of(a) == src)
            legal = (
                out != src
                and plan.tensors[out].role in (TensorRole.INTERMEDIATE, TensorRole.OUTPUT)
                and plan.tensors[src].role in (TensorRole.INTERMEDIATE, TensorRole.INPUT)
                and out in ranges
                and src in ranges
                and ranges[out][0] == step
                and ranges[src][1] == step
                and fits
                and from_start
                and out not in sources
                and src not in (taken for taken, _ in sources.values())
            )
            if legal:
                sources[out] = (src, fact.stream)
    return sources


def tensor_offsets(plan: ExecutionPlan, memory_plan: MemoryPlan) -> dict[str, int]:
    """The arena offset (bytes) of every tensor whose storage is in the arena, views included (their root's
    offset plus their bytes into it)."""
    roots = {name: plan.storage_of(name) for name in plan.tensors}
    return {name: memory_plan.offsets[root] + plan.storage_offset(name) for name, root in roots.items()
            if root in memory_plan.offsets}


def views_from_plan(plan: ExecutionPlan, buffers: Sequence[Buffer]) -> list[View]:
    """The views of `buffers` (by root name) that `plan`'s calls pass, each with the steps (positions in
    `plan.calls`) that pass it and those whose call writes it: what `check.check_plan` checks of views."""
    placed = {b.name for b in buffers}
    steps: dict[str, list[int]] = {}
    written: dict[str, list[int]] = {}
    for step, call in enumerate(plan.calls):
        for name in call.args:
            if plan.tensors[name].view_of is not None and plan.storage_of(name) in placed:
                steps.setdefault(name, []).append(step)
        for name in call.outputs + call.scratch:
            if name in steps:
                written.setdefault(name, []).append(step)
    return [View(name, plan.storage_of(name), plan.storage_offset(name), plan.tensors[name].nbytes, min(at), max(at),
                 tuple(written.get(name, ())))
            for name, at in steps.items()]


def io_bytes_outside(plan: ExecutionPlan, memory_plan: MemoryPlan) -> tuple[int, int]:
    """Bytes of the model's inputs, and of its outputs, that are the caller's buffers outside the arena (0 and 0
    when they were planned into the arena: `io_in_arena`); a storage both reads and writes is counted once, as
    an input. A row-wise input (`ExecutionPlan.row_input`) is no buffer: its rows go into arena bands."""
    placed = set(memory_plan.offsets)
    if plan.row_input is not None:
        placed.add(plan.storage_of(plan.row_input.input))
    inputs = {plan.storage_of(n) for n in plan.inputs} - placed
    outputs = {plan.storage_of(n) for n in plan.outputs} - placed - inputs
    return sum(plan.tensors[r].nbytes for r in inputs), sum(plan.tensors[r].nbytes for r in outputs)


def total_ram_bytes(plan: ExecutionPlan, memory_plan: MemoryPlan) -> int:
    """The RAM of one inference's buffers, in bytes: the arena plus the model's inputs and outputs that are the
    caller's buffers outside it (io_bytes_outside). The state and the stack come on top (target.RamUse)."""
    return memory_plan.arena_bytes + sum(io_bytes_outside(plan, memory_plan))
