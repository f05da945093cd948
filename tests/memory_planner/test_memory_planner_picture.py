"""The SVG picture: one rectangle per buffer over its lifetime where the plan puts it, its full name in its
tooltip, a byte axis with round ticks, small buffers still visible and apart, and the lower-bound line."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pytest

from memory_planner import plan_memory
from memory_planner.api import Buffer, MemoryPlan
from memory_planner.picture import MARGIN_LEFT, MIN_GAP_PX, PLOT_WIDTH, memory_plan_svg
from memory_planner.from_plan import buffers_from_plan
from memory_planner_cases import GREEDY_TRAP, RESNET8_BUFFERS, residual_block_plan

SVG = "{http://www.w3.org/2000/svg}"


def _rects(root: ET.Element) -> dict[str, tuple[ET.Element, ET.Element]]:
    """Each buffer's group and rectangle, by the buffer name its tooltip starts with."""
    return {g.find(f"{SVG}title").text.split(":")[0]: (g, g.find(f"{SVG}rect"))
            for g in root.iter(f"{SVG}g") if g.get("class") == "buffer"}


def _pixels(rect: ET.Element) -> tuple[float, float]:
    """A rectangle's bottom and top y (pixels; y grows downwards)."""
    return float(rect.get("y")) + float(rect.get("height")), float(rect.get("y"))


def test_every_buffer_is_a_rectangle_over_its_lifetime_in_byte_order() -> None:
    buffers = RESNET8_BUFFERS
    plan = plan_memory(buffers)
    rects = _rects(ET.fromstring(memory_plan_svg(buffers, plan)))
    assert set(rects) == {b.name for b in buffers}
    step_px = PLOT_WIDTH / 15
    for b in buffers:
        group, rect = rects[b.name]
        assert float(rect.get("x")) == round(MARGIN_LEFT + b.first_step * step_px, 1)
        assert float(rect.get("width")) == round((b.last_step - b.first_step + 1) * step_px, 1)
        assert group.find(f"{SVG}title").text.endswith(f"steps {b.first_step}..{b.last_step}; {b.label}")
    for a in buffers:
        for b in buffers:
            if plan.offsets[a.name] + a.nbytes <= plan.offsets[b.name]:  # a below b in bytes: below in pixels
                assert _pixels(rects[a.name][1])[1] >= _pixels(rects[b.name][1])[0] - 0.11, (a.name, b.name)


def test_a_tiny_buffer_beside_a_big_one_is_visible_and_apart() -> None:
    """On a linear scale 16 B of a 100 kB arena is 0.08 px: each small buffer gets MIN_GAP_PX at least, and
    buffers live together never overlap on the picture."""
    buffers = [Buffer("big", 100_000, 0, 2, label="big"), Buffer("tiny", 16, 0, 0, label="tiny"),
               Buffer("tiny2", 16, 1, 1, label="tiny2"), Buffer("tiny3", 32, 1, 2, label="tiny3")]
    plan = plan_memory(buffers)
    rects = _rects(ET.fromstring(memory_plan_svg(buffers, plan)))
    for b in buffers:
        assert float(rects[b.name][1].get("height")) >= MIN_GAP_PX - 0.11, b.name
    for a in buffers:
        for b in buffers:
            live_together = a.first_step <= b.last_step and b.first_step <= a.last_step
            if a is not b and live_together:
                (a_bottom, a_top), (b_bottom, b_top) = _pixels(rects[a.name][1]), _pixels(rects[b.name][1])
                assert a_top >= b_bottom - 0.11 or b_top >= a_bottom - 0.11, (a.name, b.name)


def test_the_byte_axis_has_round_ticks_between_zero_and_the_arena() -> None:
    plan = plan_memory(RESNET8_BUFFERS)
    texts = [t.text for t in ET.fromstring(memory_plan_svg(RESNET8_BUFFERS, plan)).iter(f"{SVG}text")]
    ticks = [int(text.replace(",", "")) for text in texts if text.replace(",", "").isdigit()]
    steps = set(range(16))  # the step axis' labels are digits too
    byte_ticks = sorted(set(ticks) - steps)
    assert len(byte_ticks) >= 4, texts
    assert all(tick % 10_000 == 0 for tick in byte_ticks) and max(byte_ticks) <= plan.arena_bytes, byte_ticks


def test_labels_are_the_shortest_tails_that_tell_them_apart_and_the_tooltip_has_them_whole() -> None:
    """Labels that all start `MobilenetV1/MobilenetV1/Conv2d_` (person_detect's) were all drawn as that
    prefix, clipped; each has the same last part, `Relu6`."""
    labels = [f"MobilenetV1/MobilenetV1/Conv2d_{i}/Relu6 (CONV_2D)" for i in range(4)] + ["input"]
    buffers = [Buffer(f"act{i}", 4096, i, i + 1, label=label) for i, label in enumerate(labels)]
    root = ET.fromstring(memory_plan_svg(buffers, plan_memory(buffers)))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {f"Conv2d_{i}/Relu6 (CONV_2D)" for i in range(4)} | {"input"} <= set(texts), texts
    for b in buffers:
        assert _rects(root)[b.name][0].find(f"{SVG}title").text.endswith(f"; {b.label}")


def test_lower_bound_line_below_a_loose_arena_and_escaped_labels() -> None:
    buffers = [dataclasses.replace(b, label=f"{b.name} <a&b>") for b in GREEDY_TRAP]
    plan = plan_memory(buffers, "greedy_by_size")
    assert (plan.lower_bound, plan.arena_bytes) == (96, 112)
    root = ET.fromstring(memory_plan_svg(buffers, plan))  # parses: labels are escaped
    dashed = [line for line in root.iter(f"{SVG}line") if line.get("stroke-dasharray")]
    assert len(dashed) == 1
    arena = [line for line in root.iter(f"{SVG}line") if line.get("stroke") == "#c00"]
    assert float(arena[0].get("y1")) < float(dashed[0].get("y1"))  # the arena's top above the lower bound
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "lower bound 96" in texts and "arena 112" in texts
    assert {f"{b.name} <a&b>" for b in buffers} <= set(texts)


def test_the_html_element_is_the_same_drawing_without_the_namespace() -> None:
    plan = plan_memory(GREEDY_TRAP)
    document, element = memory_plan_svg(GREEDY_TRAP, plan), memory_plan_svg(GREEDY_TRAP, plan, standalone=False)
    assert "xmlns" not in element and "http" not in element
    assert document == element.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)


def test_an_inplace_buffer_says_whose_bytes_it_takes() -> None:
    buffers = buffers_from_plan(residual_block_plan())
    root = ET.fromstring(memory_plan_svg(buffers, plan_memory(buffers)))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "add (in place of conv2)" in texts and "conv2" in texts


DIGIT_EM = 0.6
"""A digit's width in font sizes, at the least (sans-serif digits are 0.55 to 0.65 em wide)."""


@pytest.mark.parametrize("steps", [30, 161, 1_000, 12_000])
def test_the_step_axis_labels_never_overlap(steps: int) -> None:
    """Labelled every ceil(steps / 60) steps, the labels of a plan with 1,000 steps (102, 119, 136, ...) stood
    15.3 px apart and were 16 px wide: each ran into the next."""
    buffers = [Buffer(f"b{i}", 64, i, i) for i in range(steps)]  # one after another, each at offset 0
    root = ET.fromstring(memory_plan_svg(buffers, MemoryPlan({b.name: 0 for b in buffers}, 64, 64, "hand", True)))
    bottom = max(float(line.get("y1")) for line in root.iter(f"{SVG}line"))  # the step axis
    labels = [t for t in root.iter(f"{SVG}text") if float(t.get("y")) == round(bottom + 14, 1)]
    assert labels[0].text == "0" and len(labels) >= 5
    for left, right in zip(labels, labels[1:]):
        half_widths = (len(left.text) + len(right.text)) / 2 * DIGIT_EM * float(left.get("font-size"))
        assert float(right.get("x")) - float(left.get("x")) >= half_widths + 2, (left.text, right.text)
