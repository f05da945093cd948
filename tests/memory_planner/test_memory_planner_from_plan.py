"""The ExecutionPlan adapter on hand-made plans: views, scratch, in-place facts, roles, bad plans."""

from __future__ import annotations

import dataclasses

import pytest
from memory_planner_cases import make_plan, residual_block_plan, tensor

from memory_planner import Buffer, plan_memory
from memory_planner.check import check_plan
from memory_planner.from_plan import buffers_from_plan, tensor_offsets
from memory_planner.plan import InplaceOutput, KernelAccess, KernelCall, TensorRole

# residual_block_plan's calls: 0 conv0, 1 skip, 2 conv1 (+pad), 3 conv2, 4 add (in place over conv2),
# 5 fc reading the flatten view of add, 6 softmax writing the output.
EXPECTED = [
    Buffer("conv0", 4096, 0, 2, label="conv0"),
    Buffer("skip", 4096, 1, 4, label="skip"),
    Buffer("conv1", 4096, 2, 3, label="conv1"),
    Buffer("pad", 6400, 2, 2, label="pad (scratch)"),
    Buffer("conv2", 4096, 3, 4, label="conv2"),
    Buffer("add", 4096, 4, 5, label="add", inplace_of="conv2"),
    Buffer("fc", 40, 5, 6, label="fc"),
]


def test_buffers_of_a_residual_block() -> None:
    assert buffers_from_plan(residual_block_plan()) == EXPECTED


def test_another_order_moves_the_live_ranges() -> None:
    buffers = {b.name: b for b in buffers_from_plan(residual_block_plan(), order=[0, 2, 3, 1, 4, 5, 6])}
    assert (buffers["skip"].first_step, buffers["skip"].last_step) == (3, 4)
    assert (buffers["conv1"].first_step, buffers["conv1"].last_step) == (1, 2)


def test_alignment_is_passed_to_every_buffer() -> None:
    assert {b.alignment for b in buffers_from_plan(residual_block_plan(), alignment=8)} == {8}


def test_inplace_is_dropped_when_the_input_is_read_later() -> None:
    plan = residual_block_plan()
    calls = list(plan.calls)
    calls[4] = dataclasses.replace(calls[4], access=KernelAccess((InplaceOutput("add", "conv2"), InplaceOutput("add", "skip"))))
    plan.calls = calls
    plan.calls[5] = dataclasses.replace(plan.calls[5], inputs=("flat", "conv2"))  # conv2 now read at step 5
    taken = {b.name: b.inplace_of for b in buffers_from_plan(plan)}
    assert taken["add"] == "skip"  # skip's last use is the add; conv2's is not any more


def test_inplace_is_dropped_when_the_output_is_larger() -> None:
    r = TensorRole
    plan = make_plan(
        [tensor("x", (4,), r.INPUT), tensor("small", (4,)), tensor("wide", (8,)), tensor("y", (8,), r.OUTPUT)],
        [
            KernelCall("k0", ("small",), ("x",), ("small",)),
            KernelCall("k1", ("wide",), ("small",), ("wide",), access=KernelAccess((InplaceOutput("wide", "small"),))),
            KernelCall("k2", ("y",), ("wide",), ("y",)),
        ],
    )
    assert [b.inplace_of for b in buffers_from_plan(plan)] == [None, None]


def test_planned_block_passes_the_checker_and_maps_views() -> None:
    plan = residual_block_plan()
    buffers = buffers_from_plan(plan)
    memory = plan_memory(buffers)
    check_plan(buffers, memory)
    offsets = tensor_offsets(plan, memory)
    assert offsets["flat"] == offsets["add"] == offsets["conv2"]
    assert set(offsets) == {"conv0", "skip", "conv1", "pad", "conv2", "add", "flat", "fc"}
    # step 2 holds conv0, skip, conv1 and the pad scratch; the add over conv2 costs nothing extra
    assert memory.lower_bound == memory.arena_bytes == 3 * 4096 + 6400


def test_read_before_write_is_one_clear_error() -> None:
    plan = residual_block_plan()
    with pytest.raises(ValueError, match=r"model net: tensor 'conv1' is read by kernel k_conv2 \(step 1\) before any"):
        buffers_from_plan(plan, order=[0, 3, 1, 2, 4, 5, 6])


def test_unknown_tensor_and_bad_order_are_errors() -> None:
    plan = residual_block_plan()
    plan.calls[0] = dataclasses.replace(plan.calls[0], inputs=("nope",))
    with pytest.raises(ValueError, match="model net: kernel k_conv0 names unknown tensor 'nope'"):
        buffers_from_plan(plan)
    with pytest.raises(ValueError, match="is not a permutation of its 7 calls"):
        buffers_from_plan(residual_block_plan(), order=[0, 1])
