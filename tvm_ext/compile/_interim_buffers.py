"""Arena buffers of a plan (interim: memory_planner.from_plan replaces this)."""

from __future__ import annotations

from memory_planner.api import Buffer
from tvm_ext.plan import ExecutionPlan, TensorRole


def arena_buffers(plan: ExecutionPlan, alignment: int) -> list[Buffer]:
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for step, call in enumerate(plan.calls):
        for name in call.args:
            root = plan.storage_of(name)
            if plan.tensors[root].role in (TensorRole.INTERMEDIATE, TensorRole.SCRATCH):
                first.setdefault(root, step)
                last[root] = step
    return [
        Buffer(root, plan.tensors[root].nbytes, first[root], last[root], alignment, plan.tensors[root].layer)
        for root in first
    ]
