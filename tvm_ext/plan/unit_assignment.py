"""Each subgraph of an execution plan assigned to the compute unit where it costs least (no TVM).

A subgraph's score on a unit that runs all its operator kinds is

    sum over its calls of MACs x the unit's instructions per MAC for the call's kind
    + the bytes of the activations it reads that a subgraph on another unit wrote

(the kind of a call is its first operator's: the MAC-carrying one of a fused call; a byte moved across the unit
boundary counts as one instruction). Subgraphs are assigned in order, each to the supported unit with the
lowest score given where the subgraphs before it went; a tie goes to the unit listed first. Model inputs,
weights and state are in memory every unit reads, so they move nothing. The assignment is a pure function
of the plan and the units.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_planner.plan import ExecutionPlan, KernelCall, TensorRole
from target.compute_unit import ComputeUnit


class NoUnitError(ValueError):
    """No compute unit runs every operator kind of a subgraph; the message names the subgraph and the kinds."""


@dataclass(frozen=True)
class UnitChoice:
    """Subgraph `subgraph` runs on the unit named `unit`, at `score` (instructions, see the module docstring)."""

    subgraph: int
    unit: str
    score: float


def call_kind(call: KernelCall) -> str:
    """The operator kind a call is costed as: its first operator's ("" for a call with no operator records)."""
    return call.operators[0].kind if call.operators else ""


def assign_units(plan: ExecutionPlan, units: tuple[ComputeUnit, ...]) -> list[UnitChoice]:
    """One UnitChoice per subgraph of `plan`, in subgraph order (see the module docstring); NoUnitError when
    no unit runs a subgraph's operator kinds."""
    subgraphs: dict[int, list[KernelCall]] = {}
    for call in plan.calls:
        subgraphs.setdefault(call.subgraph, []).append(call)
    unit_of_writer: dict[str, str] = {}  # activation tensor -> the unit of the subgraph that wrote it
    choices = []
    for subgraph in sorted(subgraphs):
        calls = subgraphs[subgraph]
        kinds = {kind for call in calls for kind in (op.kind for op in call.operators)}
        supported = [unit for unit in units if all(unit.runs(kind) for kind in kinds)]
        if not supported:
            raise NoUnitError(f"subgraph {subgraph}: no compute unit runs all of {', '.join(sorted(kinds))}")
        read = _activations_read(plan, calls)
        scores = [(_score(plan, calls, read, unit, unit_of_writer), unit) for unit in supported]
        score, unit = min(scores, key=lambda pair: pair[0])  # min keeps the first of equal scores
        for call in calls:
            for name in call.outputs:
                unit_of_writer[plan.storage_of(name)] = unit.name
        choices.append(UnitChoice(subgraph, unit.name, score))
    return choices


def _activations_read(plan: ExecutionPlan, calls: list[KernelCall]) -> set[str]:
    """The storage tensors (views resolved) that `calls` read and did not write themselves."""
    written = {plan.storage_of(name) for call in calls for name in call.outputs}
    return {plan.storage_of(name) for call in calls for name in call.inputs} - written


def _score(plan: ExecutionPlan, calls: list[KernelCall], read: set[str], unit: ComputeUnit,
           unit_of_writer: dict[str, str]) -> float:
    compute = sum(call.macs * unit.cost(call_kind(call)) for call in calls)
    moved = sum(plan.tensor(name).nbytes for name in read
                if plan.tensor(name).role is TensorRole.INTERMEDIATE
                and unit_of_writer.get(name, unit.name) != unit.name)
    return compute + moved


def kernels_by_unit(plan: ExecutionPlan, choices: list[UnitChoice], units: tuple[ComputeUnit, ...]
                    ) -> dict[str, list[str]]:
    """Each unit's kernels (C names, in order of first call), every unit of `units` listed: a kernel belongs to
    the unit of the first subgraph (in subgraph order) that calls it."""
    unit_of_subgraph = {choice.subgraph: choice.unit for choice in choices}
    grouped: dict[str, list[str]] = {unit.name: [] for unit in units}
    placed: set[str] = set()
    for call in sorted(plan.calls, key=lambda call: call.subgraph):
        if call.kernel not in placed:
            placed.add(call.kernel)
            grouped[unit_of_subgraph[call.subgraph]].append(call.kernel)
    return grouped
