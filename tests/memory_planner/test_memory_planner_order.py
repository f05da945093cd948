"""choose_order against brute force over every valid order of small plans."""

from __future__ import annotations

import dataclasses
from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_planner_cases import make_plan, residual_block_plan, tensor

from memory_planner.from_plan import buffers_from_plan
from memory_planner.liveness import lower_bound
from memory_planner.order import choose_order
from memory_planner.plan import ExecutionPlan, KernelAccess, KernelCall, TensorRole


def valid(plan: ExecutionPlan, order: tuple[int, ...] | list[int]) -> bool:
    """Every tensor a call reads is written by no call, or by a call earlier in `order` (plans here are SSA)."""
    writer = {plan.storage_of(o): c for c, call in enumerate(plan.calls) for o in call.outputs}
    position = {c: p for p, c in enumerate(order)}
    return all(
        position[writer[plan.storage_of(i)]] < position[c]
        for c, call in enumerate(plan.calls)
        for i in call.inputs
        if plan.storage_of(i) in writer
    )


def peak(plan: ExecutionPlan, order) -> int:
    return lower_bound(buffers_from_plan(plan, order))


def best_peak(plan: ExecutionPlan) -> int:
    return min(peak(plan, o) for o in permutations(range(len(plan.calls))) if valid(plan, o))


def without_inplace(plan: ExecutionPlan) -> ExecutionPlan:
    plan.calls = [dataclasses.replace(c, access=KernelAccess()) for c in plan.calls]
    return plan


def test_skip_conv_moves_after_the_conv_with_scratch() -> None:
    plan = without_inplace(residual_block_plan())
    order = choose_order(plan)
    # ties go to the lower call index: conv0, conv1, then the skip conv before conv2
    assert order == [0, 2, 1, 3, 4, 5, 6]
    # plan order: conv0, skip, conv1 and its pad live at step 2; chosen: conv0, conv1 and pad
    assert peak(plan, range(7)) == 3 * 4096 + 6400
    assert peak(plan, order) == best_peak(plan) == 2 * 4096 + 6400


def test_a_chain_keeps_its_order() -> None:
    r = TensorRole
    tensors = [tensor("x", (4,), r.INPUT)] + [tensor(f"t{i}", (4 * (i + 1),)) for i in range(4)]
    tensors.append(tensor("y", (4,), r.OUTPUT))
    names = ["x", "t0", "t1", "t2", "t3", "y"]
    calls = [KernelCall(f"k{i}", (names[i + 1],), (names[i],), (names[i + 1],)) for i in range(5)]
    assert choose_order(make_plan(tensors, calls)) == [0, 1, 2, 3, 4]


def test_never_worse_than_the_plans_order_with_inplace_facts() -> None:
    plan = residual_block_plan()
    assert peak(plan, choose_order(plan)) <= peak(plan, range(len(plan.calls)))


@st.composite
def dag_plans(draw) -> ExecutionPlan:
    """2..6 calls; call i reads one or two earlier tensors (or the input) and writes t<i>; some have scratch."""
    r = TensorRole
    count = draw(st.integers(2, 6))
    tensors = [tensor("x", (4,), r.INPUT)]
    calls = []
    for i in range(count):
        sources = ["x"] + [f"t{j}" for j in range(i)]
        reads = tuple(sorted(set(draw(st.lists(st.sampled_from(sources), min_size=1, max_size=2)))))
        role = r.OUTPUT if i == count - 1 else r.INTERMEDIATE
        tensors.append(tensor(f"t{i}", (draw(st.integers(1, 64)),), role))
        scratch: tuple[str, ...] = ()
        if draw(st.booleans()):
            tensors.append(tensor(f"s{i}", (draw(st.integers(1, 32)),), r.SCRATCH))
            scratch = (f"s{i}",)
        calls.append(KernelCall(f"k{i}", (f"t{i}",), reads, (f"t{i}",), scratch))
    return make_plan(tensors, calls)


@settings(max_examples=60, deadline=None)
@given(dag_plans())
def test_choose_order_is_valid_and_reaches_the_best_peak(plan: ExecutionPlan) -> None:
    order = choose_order(plan)
    assert sorted(order) == list(range(len(plan.calls))) and valid(plan, order)
    assert peak(plan, order) == best_peak(plan)


@settings(max_examples=30, deadline=None)
@given(dag_plans())
def test_the_greedy_fallback_is_valid_and_no_worse_than_the_plans_order(plan: ExecutionPlan) -> None:
    order = choose_order(plan, max_states=1)
    assert sorted(order) == list(range(len(plan.calls))) and valid(plan, order)
    assert peak(plan, order) <= peak(plan, range(len(plan.calls)))
