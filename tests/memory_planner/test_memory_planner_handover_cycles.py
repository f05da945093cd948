"""Hand-overs that form a cycle (a takes b's bytes and b takes a's, or a longer ring) describe no execution:
the planner refuses them (HandoverCycleError, a ValueError: through tvm_ext.compile an internal error, since
only our own buffers could hold one) and the independent checker refuses a plan that relies on them. Only
one-step buffers all filled before the run at one step can form such a ring."""

from __future__ import annotations

import pytest

from memory_planner import Buffer, MemoryPlan, plan_memory
from memory_planner.api import StreamOrder
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.liveness import HandoverCycleError

HALVES = StreamOrder(((0, 8), (8, 16)), ((0, 8), (8, 16)))  # two passes of 8 bytes: the source 8 bytes above


def _at_step_0(takes: dict[str, str | None], stream: StreamOrder | None = None) -> list[Buffer]:
    """16-byte buffers live at step 0 only, all filled by the caller before it; `takes[name]` the buffer
    whose bytes `name` takes (None: none)."""
    return [Buffer(name, 16, 0, 0, inplace_of=source, stream=stream if source else None, filled_before=True)
            for name, source in takes.items()]


TWO_CYCLE = {"a": "b", "b": "a"}
THREE_CYCLE = {"a": "c", "b": "a", "c": "b"}


@pytest.mark.parametrize("takes, ring", [(TWO_CYCLE, "'a' -> 'b' -> 'a'"), (THREE_CYCLE, "'a' -> 'c' -> 'b' -> 'a'")])
@pytest.mark.parametrize("stream", [None, HALVES], ids=["same-offset", "stream"])
def test_the_planner_refuses_a_cycle_of_hand_overs(takes: dict[str, str], ring: str,
                                                   stream: StreamOrder | None) -> None:
    with pytest.raises(HandoverCycleError, match=f"hand-overs {ring} form a cycle"):
        plan_memory(_at_step_0(takes, stream))


@pytest.mark.parametrize("takes, ring", [(TWO_CYCLE, "'a' -> 'b' -> 'a'"), (THREE_CYCLE, "'a' -> 'c' -> 'b' -> 'a'")])
def test_the_checker_refuses_a_plan_with_a_cycle_of_hand_overs(takes: dict[str, str], ring: str) -> None:
    # Everything at offset 0 in 16 bytes: each pair would be a legal same-offset hand-over on its own, and the
    # ring's savings cancel all its bytes (the sweep counts 0 live), so only the cycle rule can refuse it.
    buffers = _at_step_0(takes)
    memory_plan = MemoryPlan({b.name: 0 for b in buffers}, 16, 0, "hand", optimal=False)
    with pytest.raises(InvalidMemoryPlanError, match=f"hand-overs {ring} form a cycle"):
        check_plan(buffers, memory_plan)


def test_a_filled_buffer_still_hands_its_bytes_over_at_its_only_step() -> None:
    buffers = [Buffer("a", 16, 0, 0, filled_before=True), Buffer("b", 16, 0, 1, inplace_of="a")]
    memory_plan = plan_memory(buffers)
    check_plan(buffers, memory_plan)
    assert set(memory_plan.offsets.values()) == {0} and memory_plan.arena_bytes == 16
