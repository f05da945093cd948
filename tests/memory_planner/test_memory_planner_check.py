"""The independent checker accepts legal plans and rejects hand-made bad ones with a clear message."""

from __future__ import annotations

import pytest

from memory_planner import Buffer, MemoryPlan
from memory_planner.check import InvalidMemoryPlanError, check_plan

A = Buffer("a", 32, 0, 1)
B = Buffer("b", 16, 1, 2)
C = Buffer("c", 32, 2, 3)  # not live with a: may share its bytes
RELU = Buffer("relu", 32, 1, 2, inplace_of="a")  # takes a's bytes at step 1


def plan(offsets: dict[str, int], arena: int, lower_bound: int = 48) -> MemoryPlan:
    return MemoryPlan(offsets, arena, lower_bound, "hand", optimal=False)


@pytest.mark.parametrize(
    "buffers, memory_plan",
    [
        ([A, B, C], plan({"a": 0, "b": 32, "c": 0}, 48)),  # a and c share bytes at different steps
        ([A, B], plan({"a": 16, "b": 0}, 48)),  # b ends where a starts
        ([A, RELU, B], plan({"a": 0, "relu": 0, "b": 32}, 48)),  # in-place hand-over at step 1
    ],
)
def test_legal_plans_pass(buffers: list[Buffer], memory_plan: MemoryPlan) -> None:
    check_plan(buffers, memory_plan)


@pytest.mark.parametrize(
    "buffers, memory_plan, message",
    [
        ([A, B], plan({"a": 0, "b": 16}, 48), r"'a' \[0, 32\) steps 0..1 and 'b' \[16, 32\) steps 1..2 overlap"),
        ([A, B], plan({"a": 0, "b": 40}, 56), "'b': offset 40 is not a non-negative multiple of 16"),
        ([A, B], plan({"a": 0, "b": -16}, 48), "'b': offset -16"),
        ([A, B], plan({"a": 0, "b": 32}, 40), "'b': ends at 48, past the arena's 40 bytes"),
        ([A, B], plan({"a": 0}, 48), r"offsets missing for \['b'\]"),
        ([A], plan({"a": 0, "zz": 0}, 48, 32), r"unknown buffers \['zz'\]"),
        ([A, B], plan({"a": 0, "b": 32}, 48, lower_bound=40), "lower bound 40 and arena 48 bytes disagree with the 48"),
        # in-place at different, overlapping offsets
        ([A, RELU], plan({"a": 0, "relu": 16}, 48, 32), "'a' .* and 'relu' .* overlap"),
        # a larger buffer cannot take a smaller one's bytes
        ([A, Buffer("big", 48, 1, 2, inplace_of="a")], plan({"a": 0, "big": 0}, 48, 80), "'a' .* and 'big' .* overlap"),
        # sharing two steps is no hand-over
        ([A, Buffer("late", 32, 0, 2, inplace_of="a")], plan({"a": 0, "late": 0}, 32, 64), "overlap while both live"),
    ],
)
def test_bad_plans_are_rejected(buffers: list[Buffer], memory_plan: MemoryPlan, message: str) -> None:
    with pytest.raises(InvalidMemoryPlanError, match=message):
        check_plan(buffers, memory_plan)


def test_a_buffer_born_and_dead_at_the_hand_over_step_gives_no_bytes() -> None:
    # b takes a's bytes at step 0, where a is also born: no kernel writes and reads a at one step
    a, b = Buffer("a", 16, 0, 0), Buffer("b", 16, 0, 1, inplace_of="a")
    with pytest.raises(InvalidMemoryPlanError, match="overlap while both live"):
        check_plan([a, b], plan({"a": 0, "b": 0}, 16, 32))
