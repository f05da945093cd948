"""plan_memory computes the plan of the same buffers and strategy once per process (memory_planner.planner): the
plan asked for again is the one computed, in a copy of its own, and any other input is planned anew."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory_planner import Buffer, plan_memory
from memory_planner.api import StreamOrder
from memory_planner.planner import _planned

BUFFERS = [Buffer("a", 96, 0, 1), Buffer("b", 64, 1, 2), Buffer("c", 80, 2, 3, inplace_of="b"),
           Buffer("d", 48, 0, 3, alignment=32)]


def test_the_same_buffers_are_planned_once_and_each_caller_gets_its_own_offsets() -> None:
    first = plan_memory(list(BUFFERS))
    before = _planned.cache_info()
    again = plan_memory(list(BUFFERS))
    assert _planned.cache_info().hits == before.hits + 1 and _planned.cache_info().misses == before.misses
    assert again == first and again.offsets is not first.offsets
    again.offsets["a"] = 10_000
    assert plan_memory(list(BUFFERS)) == first


@pytest.mark.parametrize("change", [
    lambda buffers: [replace(buffers[0], nbytes=97), *buffers[1:]],
    lambda buffers: [*buffers[:3], replace(buffers[3], alignment=16)],
    lambda buffers: [*buffers[:2], replace(buffers[2], inplace_of=None), buffers[3]],
    lambda buffers: [*buffers[:2], replace(buffers[2], stream=StreamOrder(((0, 64),), ((0, 80),))), buffers[3]],
    lambda buffers: [buffers[1], buffers[0], *buffers[2:]],
], ids=["size", "alignment", "in-place", "stream order", "order"])
def test_other_buffers_are_planned_anew(change) -> None:
    plan_memory(list(BUFFERS))
    misses = _planned.cache_info().misses
    changed = change(list(BUFFERS))
    assert plan_memory(changed).offsets.keys() == {b.name for b in changed}
    assert _planned.cache_info().misses == misses + 1


def test_another_strategy_is_planned_anew_and_a_bad_input_raises_every_time() -> None:
    plan_memory(list(BUFFERS))
    misses = _planned.cache_info().misses
    plan_memory(list(BUFFERS), strategy="greedy_by_size")
    assert _planned.cache_info().misses == misses + 1
    for _ in range(2):
        with pytest.raises(ValueError, match="name used twice"):
            plan_memory([Buffer("a", 8, 0, 0), Buffer("a", 8, 1, 1)])
