"""The SVG picture: one labelled rectangle per buffer where the plan puts it, and the lower-bound line."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

from memory_planner import plan_memory
from memory_planner.picture import MARGIN_LEFT, MARGIN_TOP, PLOT_HEIGHT, PLOT_WIDTH, memory_plan_svg
from memory_planner.from_plan import buffers_from_plan
from memory_planner_cases import GREEDY_TRAP, RESNET8_BUFFERS, residual_block_plan

SVG = "{http://www.w3.org/2000/svg}"


def test_every_buffer_is_a_labelled_rectangle_at_its_place() -> None:
    buffers = RESNET8_BUFFERS
    plan = plan_memory(buffers)
    root = ET.fromstring(memory_plan_svg(buffers, plan))
    groups = {g.find(f"{SVG}title").text.split(":")[0]: g for g in root.iter(f"{SVG}g")}
    assert set(groups) == {b.name for b in buffers}
    step_px, byte_px = PLOT_WIDTH / 15, PLOT_HEIGHT / plan.arena_bytes
    for b in buffers:
        rect = groups[b.name].find(f"{SVG}rect")
        assert float(rect.get("x")) == round(MARGIN_LEFT + b.first_step * step_px, 1)
        assert float(rect.get("width")) == round((b.last_step - b.first_step + 1) * step_px, 1)
        top = MARGIN_TOP + PLOT_HEIGHT - (plan.offsets[b.name] + b.nbytes) * byte_px
        assert abs(float(rect.get("y")) - top) < 0.06
        assert abs(float(rect.get("height")) - b.nbytes * byte_px) < 0.11
        assert "".join(groups[b.name].itertext()).endswith(b.label)


def test_lower_bound_line_below_a_loose_arena_and_escaped_labels() -> None:
    buffers = [dataclasses.replace(b, label=f"{b.name} <a&b>") for b in GREEDY_TRAP]
    plan = plan_memory(buffers, "greedy_by_size")
    assert (plan.lower_bound, plan.arena_bytes) == (96, 112)
    root = ET.fromstring(memory_plan_svg(buffers, plan))  # parses: labels are escaped
    dashed = [line for line in root.iter(f"{SVG}line") if line.get("stroke-dasharray")]
    assert len(dashed) == 1
    assert float(dashed[0].get("y1")) == round(MARGIN_TOP + PLOT_HEIGHT - 96 * PLOT_HEIGHT / 112, 1)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "lower bound 96" in texts and "arena 112" in texts
    assert {f"{b.name} <a&b>" for b in buffers} <= set(texts)


def test_an_inplace_buffer_says_whose_bytes_it_takes() -> None:
    buffers = buffers_from_plan(residual_block_plan())
    root = ET.fromstring(memory_plan_svg(buffers, plan_memory(buffers)))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "add (in place of conv2)" in texts and "conv2" in texts
