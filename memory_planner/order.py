"""Operator order: among the valid orders of a plan's calls, pick one with a low peak of live bytes.

Valid orders keep every dependency of the plan's order on a storage (a view's bytes are its root's):
a call comes after the last earlier call that wrote a storage it touches, and a call that writes a
storage comes after the earlier calls that read it since its last write.

The search is a dynamic program over the sets of calls already run (down-sets of the dependency DAG):
the best peak from a set is the minimum over the calls ready to run of max(bytes live while that call
runs, best peak after it). Chains have one state per step; skips (ResNet) and parallel branches add a
few. When the states exceed `max_states`, a greedy order (run the ready call with the fewest live bytes)
stands in. The search counts bytes without in-place hand-overs; the returned order is the one, of the
searched order and the plan's own, with the smaller `liveness.lower_bound` (the plan's own on a tie),
so it is never worse than the plan's order. Deterministic: ties go to the lower call index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_planner.from_plan import ARENA_ROLES, buffers_from_plan
from memory_planner.liveness import lower_bound
from memory_planner.plan import ExecutionPlan

DEFAULT_MAX_STATES = 10_000  # about 0.2 s of search in CPython


class _TooManyStates(Exception):
    """The dynamic program needs more states than its budget."""


@dataclass(frozen=True)
class _CallGraph:
    """Calls as bits: which calls each call waits for, and which calls touch each arena storage.

    A storage is resident after the calls in `done` when a call in `done` and a call outside it touch
    it; every resident storage is live while the next call runs, and so are the storages that call
    touches first. So bytes live during a call = resident bytes + bytes it touches first, and both
    update per call from the storages it touches alone.
    """

    depends_on: list[int]  # depends_on[c]: bit mask of calls that must run before call c
    storages: list[tuple[int, int]]  # (bit mask of calls touching it, bytes) per arena storage
    touches: list[list[int]]  # touches[c]: indices of the storages call c touches
    dependents: list[list[int]]  # dependents[c]: the calls that wait for call c

    @classmethod
    def of(cls, plan: ExecutionPlan) -> _CallGraph:
        depends_on = [0] * len(plan.calls)
        last_writer: dict[str, int] = {}
        readers: dict[str, int] = {}
        touchers: dict[str, int] = {}
        for c, call in enumerate(plan.calls):
            writes = {plan.storage_of(n) for n in call.outputs + call.scratch}
            for root in {plan.storage_of(n) for n in call.args}:
                if root in last_writer:
                    depends_on[c] |= 1 << last_writer[root]
                if root in writes:
                    depends_on[c] |= readers.pop(root, 0)
                else:
                    readers[root] = readers.get(root, 0) | 1 << c
                touchers[root] = touchers.get(root, 0) | 1 << c
            for root in writes:
                last_writer[root] = c
        arena = [r for r in touchers if plan.tensors[r].role in ARENA_ROLES]
        storages = [(touchers[r], plan.tensors[r].nbytes) for r in arena]
        touches = [[s for s, (mask, _) in enumerate(storages) if mask >> c & 1] for c in range(len(plan.calls))]
        dependents = [[k for k, deps in enumerate(depends_on) if deps >> c & 1] for c in range(len(plan.calls))]
        return cls(depends_on, storages, touches, dependents)

    def step(self, done: int, resident: int, call: int) -> tuple[int, int]:
        """(bytes live while `call` runs after `done`, bytes resident after it), given the bytes
        `resident` after `done`."""
        during = after = resident
        for s in self.touches[call]:
            mask, nbytes = self.storages[s]
            if not mask & done:
                during += nbytes
                after += nbytes
            if not mask & ~(done | 1 << call):
                after -= nbytes
        return during, after

    def ready_after(self, ready: tuple[int, ...], done: int, call: int) -> tuple[int, ...]:
        """The calls ready once `call`, one of `ready` after `done`, has run."""
        done |= 1 << call
        unlocked = (k for k in self.dependents[call] if self.depends_on[k] & ~done == 0)
        return tuple(sorted([c for c in ready if c != call] + list(unlocked)))

    @property
    def roots(self) -> tuple[int, ...]:
        return tuple(c for c, deps in enumerate(self.depends_on) if deps == 0)


def _dynamic_program(graph: _CallGraph, max_states: int) -> list[int]:
    everything = (1 << len(graph.depends_on)) - 1
    best: dict[int, tuple[int, int]] = {everything: (0, -1)}  # done -> (peak from here, next call)

    def solve(done: int, resident: int, ready: tuple[int, ...]) -> int:
        if done not in best:
            if len(best) >= max_states:
                raise _TooManyStates
            choices = []
            for c in ready:
                during, after = graph.step(done, resident, c)
                choices.append((max(during, solve(done | 1 << c, after, graph.ready_after(ready, done, c))), c))
            best[done] = min(choices)
        return best[done][0]

    solve(0, 0, graph.roots)
    order, done = [], 0
    while done != everything:
        call = best[done][1]
        order.append(call)
        done |= 1 << call
    return order


def _greedy(graph: _CallGraph) -> list[int]:
    order, done, resident, ready = [], 0, 0, graph.roots
    for _ in graph.depends_on:
        steps = {c: graph.step(done, resident, c) for c in ready}
        call = min(steps, key=lambda c: (steps[c][0], c))
        order.append(call)
        ready = graph.ready_after(ready, done, call)
        done, resident = done | 1 << call, steps[call][1]
    return order


def _peak(plan: ExecutionPlan, order: Sequence[int]) -> int:
    return lower_bound(buffers_from_plan(plan, order))


def choose_order(plan: ExecutionPlan, max_states: int = DEFAULT_MAX_STATES) -> list[int]:
    """A valid order of `plan.calls` (indices) whose peak of live arena bytes is as low as the search
    finds, and never above the plan's own order's."""
    graph = _CallGraph.of(plan)
    try:
        searched = _dynamic_program(graph, max_states)
    except (_TooManyStates, RecursionError):
        searched = _greedy(graph)
    own = list(range(len(plan.calls)))
    return searched if _peak(plan, searched) < _peak(plan, own) else own
