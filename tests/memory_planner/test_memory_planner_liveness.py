"""Liveness on literal cases: live ranges from steps, bytes per step, the two lower bounds."""

from __future__ import annotations

from memory_planner import Buffer
from memory_planner.liveness import aligned_lower_bound, bytes_live_per_step, live_ranges, lower_bound
from memory_planner_cases import RESNET8_BUFFERS, RESNET8_LOWER_BOUND


def test_live_ranges_span_first_to_last_touch() -> None:
    steps = [{"x", "a"}, {"a", "b"}, {"b", "c", "a"}, {"c"}]
    assert live_ranges(steps) == {"x": (0, 0), "a": (0, 2), "b": (1, 2), "c": (2, 3)}


def test_bytes_per_step_on_resnet8() -> None:
    kb = 1024
    expected = [64, 128, 192, 192, 96, 128, 128, 96, 48, 64, 64, 48]
    assert bytes_live_per_step(RESNET8_BUFFERS)[:12] == [n * kb for n in expected]
    assert bytes_live_per_step(RESNET8_BUFFERS)[12:] == [16 * kb + 256, 256 + 40, 40]
    assert lower_bound(RESNET8_BUFFERS) == RESNET8_LOWER_BOUND


def test_an_inplace_handover_counts_once_and_only_when_legal() -> None:
    conv = Buffer("conv", 100, 0, 1)
    assert bytes_live_per_step([conv, Buffer("relu", 100, 1, 2, inplace_of="conv")]) == [100, 100, 100]
    assert bytes_live_per_step([conv, Buffer("wide", 101, 1, 2, inplace_of="conv")]) == [100, 201, 101]
    assert bytes_live_per_step([conv, Buffer("early", 100, 0, 2, inplace_of="conv")]) == [200, 200, 100]
    assert bytes_live_per_step([conv, Buffer("orphan", 100, 1, 2, inplace_of="gone")]) == [100, 200, 100]


def test_the_aligned_bound_counts_padding_below_the_top_buffer() -> None:
    # 20 + 20 + 40 bytes live together on a 16-byte grid: two of them round up to 32, the third sits on top
    buffers = [Buffer("a", 20, 0, 0), Buffer("b", 20, 0, 0), Buffer("c", 40, 0, 0)]
    assert lower_bound(buffers) == 80
    assert aligned_lower_bound(buffers) == 32 + 32 + 48 - 12
    assert aligned_lower_bound([Buffer("a", 20, 0, 0, alignment=4), *buffers[1:]]) == 80
