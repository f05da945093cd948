"""Region assignment (memory_planner/regions.py) on the hand-made residual block: the most accessed buffers per
byte go to the fastest region that holds them, each region an arena checked on its own, and one region is the
one-arena plan itself."""

from __future__ import annotations

import dataclasses

from memory_planner_cases import residual_block_plan

from memory_planner import Buffer, plan_memory
from memory_planner.check import check_plan
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import ExecutionPlan
from memory_planner.regions import assign_regions, first_fit_offset, plan_regions, regions_phrase, traffic_per_byte

CONV_MACS = 8 * 8 * 16 * 16 * 9  # a 3x3 convolution of 16 to 16 channels over 8 x 8 pixels


def with_macs() -> ExecutionPlan:
    """The residual block with its convolutions' MACs (the 1x1 skip: a ninth of a 3x3's)."""
    plan = residual_block_plan()
    macs = {"k_conv0": 8 * 8 * 4 * 16 * 9, "k_skip": CONV_MACS // 9, "k_conv1": CONV_MACS, "k_conv2": CONV_MACS}
    return dataclasses.replace(plan, calls=[dataclasses.replace(c, macs=macs.get(c.kernel, 0)) for c in plan.calls])


def test_traffic_counts_a_mac_kernels_inputs_once_per_mac_and_other_accesses_once() -> None:
    plan = with_macs()
    rank = traffic_per_byte(plan, buffers_from_plan(plan))
    # conv0: written by conv0 (4,096 B once), read by the skip and conv1 per MAC (4 B each).
    assert rank["conv0"] == (4096 + 4 * (CONV_MACS // 9) + 4 * CONV_MACS) / 4096
    assert rank["pad"] == 4 * CONV_MACS / 6400  # conv1's scratch: per MAC
    assert rank["add"] == 2.0  # written by the add, read by the fc (no MACs counted): once each
    assert rank["fc"] == 2.0


def test_one_region_is_the_one_arena_plan() -> None:
    plan = with_macs()
    buffers = buffers_from_plan(plan)
    [arena] = plan_regions(plan, buffers, [("sram", 1 << 20)])
    assert list(arena.buffers) == buffers and arena.memory == plan_memory(buffers) and arena.capacity_bytes is None


def test_the_hottest_buffers_fill_the_fast_region_and_the_rest_go_to_the_last() -> None:
    plan = with_macs()
    buffers = buffers_from_plan(plan)
    fast, slow = plan_regions(plan, buffers, [("dtcm", 8192), ("sram", 1 << 20)])
    assert fast.memory.arena_bytes <= 8192 and fast.capacity_bytes == 8192
    assert sorted(b.name for b in fast.buffers + slow.buffers) == sorted(b.name for b in buffers)
    rank = traffic_per_byte(plan, buffers)
    hottest = max(buffers, key=lambda b: rank[b.name])
    assert hottest.name in {b.name for b in fast.buffers}
    for arena in (fast, slow):
        check_plan(list(arena.buffers), arena.memory)
    # The add's in-place hand-over survives only where conv2 lies in the same region.
    add = next(b for b in fast.buffers + slow.buffers if b.name == "add")
    same = {"add", "conv2"} <= {b.name for b in fast.buffers} or {"add", "conv2"} <= {b.name for b in slow.buffers}
    assert (add.inplace_of == "conv2") == same
    assert regions_phrase((fast, slow)) == (f"dtcm {fast.memory.arena_bytes:,} of 8,192 B, "
                                            f"sram {slow.memory.arena_bytes:,} B")


def test_a_region_too_small_for_every_buffer_stays_empty_and_io_stays_in_the_last() -> None:
    plan = with_macs()
    buffers = buffers_from_plan(plan, io_in_arena=True)
    tiny, fast, slow = plan_regions(plan, buffers, [("tiny", 16), ("dtcm", 1 << 20), ("sram", 1 << 20)])
    assert tiny.buffers == () and tiny.memory.arena_bytes == 0
    assert {"x", "y"} <= {b.name for b in slow.buffers}
    assert {b.name for b in fast.buffers} == {b.name for b in buffers} - {"x", "y"}


def test_assignment_keeps_the_buffers_order_and_never_places_what_is_not_movable() -> None:
    buffers = buffers_from_plan(with_macs())
    rank = {b.name: 1.0 for b in buffers}
    fast, slow = assign_regions(buffers, rank, [1 << 20, 1 << 20], movable=lambda b: b.name != "pad")
    assert list(slow) == ["pad"] and list(fast) == [b.name for b in buffers if b.name != "pad"]


def test_first_fit_takes_the_lowest_aligned_gap_free_at_every_step_the_buffer_lives() -> None:
    a, b, c = Buffer("a", 100, 0, 1), Buffer("b", 50, 1, 2), Buffer("c", 64, 3, 4)
    placed = [(0, a), (128, b), (0, c)]
    assert first_fit_offset(Buffer("x", 16, 1, 1, alignment=16), placed) == 112  # the 16 B between a and b
    assert first_fit_offset(Buffer("y", 20, 1, 1, alignment=16), placed) == 192  # past b: that gap is too small
    assert first_fit_offset(Buffer("z", 40, 2, 2, alignment=16), placed) == 0  # only b lives at step 2
    assert first_fit_offset(Buffer("w", 8, 5, 5), placed) == 0


def test_first_fit_takes_its_in_place_sources_offset_when_nothing_else_is_in_the_way() -> None:
    source, other, later = Buffer("src", 100, 0, 1), Buffer("o", 16, 0, 2), Buffer("l", 16, 2, 2)
    taker = Buffer("t", 100, 1, 2, inplace_of="src")
    assert first_fit_offset(taker, [(0, source), (112, other)]) == 0
    assert first_fit_offset(taker, [(0, source), (112, other), (32, later)]) == 128  # l is in the way
    assert first_fit_offset(dataclasses.replace(taker, nbytes=101), [(0, source), (112, other)]) == 128  # larger


def test_the_rank_is_computed_once_and_each_arena_keeps_its_buffers_rank(monkeypatch) -> None:
    """plan_regions ranks the buffers once (traffic_per_byte) and each RegionArena keeps the rank of its buffers,
    which the manifest then reports (packager.region_arenas.manifest_entry) instead of ranking again."""
    import memory_planner.regions as regions
    from packager.region_arenas import manifest_entry

    plan = with_macs()
    buffers = buffers_from_plan(plan)
    calls = []
    ranked = regions.traffic_per_byte

    def counted(*args):
        calls.append(args)
        return ranked(*args)

    monkeypatch.setattr(regions, "traffic_per_byte", counted)
    arenas = plan_regions(plan, buffers, [("dtcm", 8192), ("sram", 1 << 20)])
    assert len(calls) == 1
    rank = ranked(plan, buffers)
    for arena in arenas:
        assert dict(arena.traffic_per_byte) == {b.name: rank[b.name] for b in arena.buffers}
    marked = [dataclasses.replace(arena, traffic_per_byte={b.name: 0.5 + i for i, b in enumerate(arena.buffers)})
              for arena in arenas]
    entry = manifest_entry(plan, marked)
    assert [[b["traffic_per_byte"] for b in region["buffers"]] for region in entry] == [
        [0.5 + i for i in range(len(arena.buffers))] for arena in arenas]


def test_every_regions_arena_is_a_lane_of_one_drawing_on_one_step_axis() -> None:
    """regions_plan_svg: one lane per region, fastest first, each its region's buffers once, a buffer's x the
    same function of its first step in every lane (the steps of all the regions' buffers)."""
    import xml.etree.ElementTree as ET

    from memory_planner.picture import MARGIN_LEFT, PLOT_WIDTH, regions_plan_svg

    plan = with_macs()
    buffers = buffers_from_plan(plan)
    arenas = plan_regions(plan, buffers, [("dtcm", 8192), ("sram", 1 << 20)])
    assert all(arena.buffers for arena in arenas)
    svg = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(regions_plan_svg(arenas))
    lanes = [lane for lane in root if lane.tag == f"{svg}svg" and lane.get("class") == "region"]
    assert [lane.get("aria-label") for lane in lanes] == ["region dtcm", "region sram"]
    assert float(lanes[1].get("y")) == float(lanes[0].get("height"))  # stacked, top to bottom
    steps = max(b.last_step for b in buffers) + 1
    for lane, arena in zip(lanes, arenas):
        drawn = {g.find(f"{svg}title").text.split(":")[0]: g.find(f"{svg}rect")
                 for g in lane.iter(f"{svg}g") if g.get("class") == "buffer"}
        assert set(drawn) == {b.name for b in arena.buffers}
        for b in arena.buffers:
            assert float(drawn[b.name].get("x")) == round(MARGIN_LEFT + b.first_step * PLOT_WIDTH / steps, 1)


def test_a_trial_unchecked_gives_the_checked_arenas_without_running_the_checker(monkeypatch) -> None:
    """`checked=False` (the compile's trial plannings, whose arena only informs a choice) leaves out the
    independent checker alone: the same arenas, one region or several."""
    import memory_planner.regions as regions

    plan = with_macs()
    buffers = buffers_from_plan(plan)
    for layout in ([("sram", 1 << 20)], [("dtcm", 8192), ("sram", 1 << 20)]):
        checked = plan_regions(plan, buffers, layout)
        monkeypatch.setattr(regions, "check_plan", lambda *args: (_ for _ in ()).throw(AssertionError("checked")))
        assert plan_regions(plan, buffers, layout, checked=False) == checked
        monkeypatch.undo()
