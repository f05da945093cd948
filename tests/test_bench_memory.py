"""scripts/bench_memory.py's choice of the patch plan within the extra-MACs budget (no compile)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_memory.py"


@pytest.fixture(scope="module")
def bench_memory():
    spec = importlib.util.spec_from_file_location("bench_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def plan(bench_memory, grid, arena, extra, macs=1_000):
    return bench_memory.Compiled(grid, "conv", arena, arena + 100, extra, macs)


def test_smallest_arena_within_the_budget(bench_memory):
    # 2x2 has the smallest arena but 20 % extra MACs; of those within 15 %, 1x3 has the smaller arena
    plans = [plan(bench_memory, (2, 2), 9_000, 200), plan(bench_memory, (1, 3), 12_000, 150),
             plan(bench_memory, (2, 1), 14_000, 10)]
    assert bench_memory.smallest_within(plans, 0.15).grid == (1, 3)
    assert bench_memory.smallest_within(plans, 0.20).grid == (2, 2)


def test_equal_arenas_take_fewer_extra_macs(bench_memory):
    plans = [plan(bench_memory, (2, 2), 9_000, 80), plan(bench_memory, (3, 1), 9_000, 40)]
    assert bench_memory.smallest_within(plans, 0.15).grid == (3, 1)


def test_nothing_within_the_budget(bench_memory):
    assert bench_memory.smallest_within([plan(bench_memory, (2, 2), 9_000, 200)], 0.15) is None
    assert bench_memory.smallest_within([], 0.15) is None


def test_cell_names_plan_and_percent(bench_memory):
    assert plan(bench_memory, (2, 3), 14_816, 53).cell() == "14,816 (2x3 up to conv, +5.3 %)"


def test_saving_says_which_way(bench_memory):
    assert bench_memory.saving(16_952) == "saves 16,952"
    assert bench_memory.saving(-150) == "costs 150"
