"""A join written in place (tvm_ext.transform.joins_in_place): each piece a view of the join that its own kernel
writes, no copy; the join one buffer from its first piece's write to its last read; the checker verifies the
written views."""

from __future__ import annotations

import pytest
from memory_planner_cases import make_plan, tensor

from memory_planner import Buffer, plan_memory
from memory_planner.api import View
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.from_plan import buffers_from_plan, tensor_offsets, views_from_plan
from memory_planner.order import choose_order
from memory_planner.plan import KernelCall, TensorRole

R = TensorRole


def dense_join_plan(in_place: bool):
    """x -> a (4 float32); b = k_b(a) (8 float32); c = join(a, b); y = k_out(c). In place, a and b are views of c
    at 0 and 16 bytes, which k_a and k_b write, and no call copies them; else a copy call makes c."""
    pieces = {"view_of": "c"} if in_place else {}
    tensors = [tensor("x", (4,), R.INPUT), tensor("a", (4,), **pieces),
               tensor("b", (8,), **({**pieces, "view_offset": 16} if in_place else {})), tensor("c", (12,)),
               tensor("y", (12,), R.OUTPUT)]
    copy = [] if in_place else [KernelCall("k_join", ("c",), ("a", "b"), ("c",))]
    calls = [KernelCall("k_a", ("a",), ("x",), ("a",)), KernelCall("k_b", ("b",), ("a",), ("b",)), *copy,
             KernelCall("k_out", ("y",), ("c",), ("y",))]
    return make_plan(tensors, calls)


def labelled(name: str, nbytes: int, first: int, last: int) -> Buffer:
    """A buffer labelled with its own name (the plan's tensors are their layers)."""
    return Buffer(name, nbytes, first, last, label=name)


# Before: a and b live until the copy (step 2) reads them, c from the copy to its reader: 96 bytes at step 2.
BEFORE = [labelled("a", 16, 0, 2), labelled("b", 32, 1, 2), labelled("c", 48, 2, 3)]
# Expected in place: no piece buffers, no copy; c lives from k_a's write of its first piece to k_out (step 2).
EXPECTED = [labelled("c", 48, 0, 2)]


def test_a_copied_join_gives_each_piece_a_buffer() -> None:
    assert buffers_from_plan(dense_join_plan(in_place=False)) == BEFORE


def test_a_join_in_place_is_one_buffer_from_its_first_piece_s_write() -> None:
    assert buffers_from_plan(dense_join_plan(in_place=True)) == EXPECTED


def test_in_place_the_arena_halves_and_stays_provably_minimal() -> None:
    before = plan_memory(buffers_from_plan(dense_join_plan(in_place=False)))
    plan = dense_join_plan(in_place=True)
    buffers = buffers_from_plan(plan)
    after = plan_memory(buffers)
    check_plan(buffers, after, views_from_plan(plan, buffers))
    assert (before.arena_bytes, after.arena_bytes) == (96, 48) and after.optimal
    offsets = tensor_offsets(plan, after)
    assert (offsets["a"], offsets["b"]) == (offsets["c"], offsets["c"] + 16)


def test_views_from_plan_lists_the_steps_that_write_each_piece() -> None:
    plan = dense_join_plan(in_place=True)
    assert views_from_plan(plan, buffers_from_plan(plan)) == [
        View("a", "c", 0, 16, 0, 1, (0,)), View("b", "c", 16, 32, 1, 1, (1,))]


def test_the_order_runs_every_piece_s_writer_before_the_join_s_reader() -> None:
    plan = dense_join_plan(in_place=True)
    order = choose_order(plan)
    assert order.index(2) > max(order.index(0), order.index(1))


@pytest.mark.parametrize(
    "views, message",
    [
        # b written over a's bytes, which c still holds for k_out.
        ([View("a", "c", 0, 16, 0, 1, (0,)), View("b", "c", 0, 32, 1, 1, (1,))], "share bytes"),
        # r reads b's bytes at step 0, before k_b writes them at step 1.
        ([View("r", "c", 16, 16, 0, 0), View("b", "c", 16, 32, 1, 1, (1,))], "read at step 0"),
        # b passed at step 0, then written at step 1.
        ([View("b", "c", 16, 32, 0, 1, (1,))], "not once at the first step"),
        # b written twice.
        ([View("b", "c", 16, 32, 1, 2, (1, 2))], "not once at the first step"),
    ],
)
def test_the_checker_refuses_bad_written_views(views: list[View], message: str) -> None:
    plan = dense_join_plan(in_place=True)
    buffers = buffers_from_plan(plan)
    with pytest.raises(InvalidMemoryPlanError, match=message):
        check_plan(buffers, plan_memory(buffers), views)
