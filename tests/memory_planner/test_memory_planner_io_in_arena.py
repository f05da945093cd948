"""Inputs and outputs in the arena (`buffers_from_plan(..., io_in_arena=True)`): their live ranges, the
bytes other buffers may reuse, and an output written over an input through a stream order."""

from __future__ import annotations

from memory_planner import plan_memory
from memory_planner.api import StreamOrder
from memory_planner.check import check_plan
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import InplaceOutput, KernelAccess, KernelCall, TensorRole
from memory_planner_cases import make_plan, residual_block_plan, tensor


def test_inputs_live_from_the_first_step_and_outputs_to_the_last() -> None:
    """residual_block_plan: x (1 KB) is read at step 0 only, y (40 B) written at the last step (6)."""
    plan = residual_block_plan()
    default = {b.name: b for b in buffers_from_plan(plan)}
    inside = {b.name: b for b in buffers_from_plan(plan, io_in_arena=True)}
    assert "x" not in default and "y" not in default
    assert (inside["x"].nbytes, inside["x"].first_step, inside["x"].last_step) == (1024, 0, 0)
    assert (inside["y"].nbytes, inside["y"].first_step, inside["y"].last_step) == (40, 6, 6)
    assert {n: b for n, b in inside.items() if n not in ("x", "y")} == default


def test_an_input_read_late_is_held_from_step_0_and_its_bytes_reused_after_its_last_read() -> None:
    """`x` (400 B) is first read at step 1, so it holds its bytes from step 0 (the caller wrote it); after
    step 1 `b` and `y` reuse them: with I/O in the arena the whole RAM is 1,200 B (x, a, m at step 1),
    against an 800-byte arena plus 440 B of I/O outside it."""
    r = TensorRole
    tensors = [tensor("x", (100,), r.INPUT), tensor("a", (100,)), tensor("m", (100,)), tensor("b", (100,)),
               tensor("y", (10,), r.OUTPUT)]
    calls = [KernelCall("k0", ("a",), (), ("a",)), KernelCall("k1", ("m",), ("x", "a"), ("m",)),
             KernelCall("k2", ("b",), ("m",), ("b",)), KernelCall("k3", ("y",), ("b", "m"), ("y",))]
    plan = make_plan(tensors, calls)
    buffers = buffers_from_plan(plan, io_in_arena=True)
    assert [(b.name, b.first_step, b.last_step) for b in buffers] == [
        ("a", 0, 1), ("x", 0, 1), ("m", 1, 3), ("b", 2, 3), ("y", 3, 3)]
    memory = plan_memory(buffers)
    check_plan(buffers, memory)
    assert memory.arena_bytes == 3 * 400 == memory.lower_bound
    assert plan_memory(buffers_from_plan(plan)).arena_bytes + 440 == 1240


def test_a_model_output_may_take_a_read_input_s_bytes_through_a_stream_order() -> None:
    r = TensorRole
    rows = StreamOrder(((0, 200), (200, 400)), ((0, 200), (200, 400)))  # lead 200 B
    tensors = [tensor("x", (100,), r.INPUT), tensor("a", (100,)), tensor("y", (100,), r.OUTPUT)]
    calls = [KernelCall("k0", ("a",), (), ("a",)),
             KernelCall("k1", ("y",), ("x", "a"), ("y",), access=KernelAccess((InplaceOutput("y", "x", rows),)))]
    buffers = {b.name: b for b in buffers_from_plan(make_plan(tensors, calls), io_in_arena=True)}
    assert (buffers["y"].inplace_of, buffers["y"].stream) == ("x", rows)
    assert buffers_from_plan(make_plan(tensors, calls))[0].inplace_of is None
