"""A chain of streamed hand-overs next to small kernel scratch: the planner finds the staircase.

The buffers are kws_ref_model's on cortex-m4f (issue 19): eight 8,000 B activations, each written over
the one before it by a kernel whose stream order needs the taker to start 448 B (depthwise) or 128 B
(pointwise) below its source, and two small scratch buffers (256 + 512 B) at every pointwise step. The
smallest arena is the staircase: the last taker at the bottom, each source its distance above its taker,
8,000 + 4 * (448 + 128) = 10,304 B (the exact search, given ten times its work, proves no placement is
smaller). Without the hand-overs the arena is two activations, 16,000 B, which is what every default
strategy found while first fit put the chain's root at 0 and the scratch where the staircase must go.
"""

from __future__ import annotations

import pytest

from memory_planner import Buffer, plan_memory
from memory_planner.api import StreamOrder
from memory_planner.check import check_plan

ACTIVATION_BYTES = 8_000
DEPTHWISE_LEAD_BYTES = 448
POINTWISE_LEAD_BYTES = 128
STAIRCASE_BYTES = ACTIVATION_BYTES + 4 * (DEPTHWISE_LEAD_BYTES + POINTWISE_LEAD_BYTES)


def _stream(source_bytes: int, lead_bytes: int) -> StreamOrder:
    """One pass that reads the whole source and writes the taker's first `lead_bytes`: lead `lead_bytes`."""
    return StreamOrder(((0, source_bytes),), ((0, lead_bytes),))


def _kws_like_buffers() -> list[Buffer]:
    """Step 0 writes `act0` (with 256 B scratch); steps 1..8 alternate depthwise and pointwise hand-overs,
    each pointwise step with 256 + 512 B scratch; step 9 hands `act8` to a 64 B pooled output (lead 1 B)."""
    buffers = [Buffer("act0", ACTIVATION_BYTES, 0, 1), Buffer("act0_scratch", 256, 0, 0)]
    for step in range(1, 9):
        pointwise = step % 2 == 0
        lead = POINTWISE_LEAD_BYTES if pointwise else DEPTHWISE_LEAD_BYTES
        buffers.append(Buffer(f"act{step}", ACTIVATION_BYTES, step, step + 1, inplace_of=f"act{step - 1}",
                              stream=_stream(ACTIVATION_BYTES, lead)))
        if pointwise:
            buffers += [Buffer(f"act{step}_scratch0", 256, step, step), Buffer(f"act{step}_scratch1", 512, step, step)]
    buffers.append(Buffer("pooled", 64, 9, 10, inplace_of="act8", stream=_stream(ACTIVATION_BYTES, 1)))
    return buffers


def test_the_stream_leads_are_the_kws_ones() -> None:
    assert _stream(ACTIVATION_BYTES, DEPTHWISE_LEAD_BYTES).lead_bytes() == DEPTHWISE_LEAD_BYTES
    assert _stream(ACTIVATION_BYTES, POINTWISE_LEAD_BYTES).lead_bytes() == POINTWISE_LEAD_BYTES


@pytest.mark.parametrize("strategy", ["auto", "best_of_orders", "hill_climb"])
def test_a_hand_over_chain_with_scratch_at_its_steps_descends_a_staircase(strategy: str) -> None:
    buffers = _kws_like_buffers()
    plan = plan_memory(buffers, strategy)
    check_plan(buffers, plan)
    assert plan.arena_bytes == STAIRCASE_BYTES < 2 * ACTIVATION_BYTES
