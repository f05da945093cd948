"""scripts/bench_speed.py on manifests whose layer report's calls are not measured (a bundle no profiling build
counted): the per-kind table ranks none of them instead of failing on the missing figures; measured calls (a
Cortex-M or RISC-V profile's compile) are ranked."""

from __future__ import annotations

import importlib.util
import sys

from conftest import REPO

_spec = importlib.util.spec_from_file_location("bench_speed", REPO / "scripts" / "bench_speed.py")
bench_speed = importlib.util.module_from_spec(_spec)
sys.modules["bench_speed"] = bench_speed  # its dataclasses look their module up there
_spec.loader.exec_module(bench_speed)


def _manifest(measured: bool) -> dict:
    """A one-call layer report as packager.report writes it, with the profiling build's figures or without."""
    call = {"step": 0, "kernel": "m_fully_connected_16", "layers": [], "input_shapes": [[1, 1]],
            "output_shapes": [[1, 16]], "macs": 16,
            "kind": {"name": "fully connected", "unit": "MAC", "work": 16, "macs_counted": True}}
    if measured:
        call["instructions"] = 320
        call["instructions_per_mac"] = 20.0
        call["kind"].update({"instructions_per_unit": 20.0, "target_instructions_per_unit": 1.5,
                             "times_target": 20.0 / 1.5, "over_target": True})
    return {"layer_report": {"calls": [call], "totals": {"macs": 16}}}


def test_unmeasured_calls_are_left_out_of_the_per_kind_table() -> None:
    assert bench_speed.layers_of("m", _manifest(measured=False)) == []
    assert bench_speed.kind_rows(bench_speed.layers_of("m", _manifest(measured=False))) == []


def test_measured_calls_are_ranked_per_kind() -> None:
    rows = bench_speed.kind_rows(bench_speed.layers_of("m", _manifest(measured=True)))
    assert rows == ["| fully connected | MAC | 1.5 | 20.0 | 13.3 | m step 0 `m_fully_connected_16` (1x1 -> 1x16) "
                    "| 1 of 1 | 296 | 0 |"]
