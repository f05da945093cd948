"""`manifest.json`: what the bundle is, for tools and people: model, target, memory plan, sizes, versions."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.from_plan import total_ram_bytes
from memory_planner.plan import ExecutionPlan
from memory_planner.regions import RegionArena
from printable import printable

MANIFEST_VERSION = 1
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, a surrogate is always alone


def manifest(plan: ExecutionPlan, memory: MemoryPlan, buffers: list[Buffer], facts: dict[str, Any],
             io_in_arena: bool = False, regions: Sequence[RegionArena] = ()) -> dict:
    """The manifest as a JSON-ready dict. `facts` adds entries such as tool versions and build results;
    with `io_in_arena` (the inputs and outputs planned into the arena) the arena entry says so and gives the
    total RAM in bytes (then the arena's size; a default manifest has neither key). With `regions` (every RAM
    region's arena when the profile lists several: `memory` and `buffers` are the last region's) each arena
    tensor's entry names its region, its offset being from that region's arena, and the arena entry its region."""
    io_entries = {"io_in_arena": True, "total_ram_bytes": total_ram_bytes(plan, memory)} if io_in_arena else {}
    live = {b.name: b for b in buffers}
    offsets, region_of = dict(memory.offsets), {}
    for arena in regions:
        live.update({b.name: b for b in arena.buffers})
        offsets.update(arena.memory.offsets)
        region_of.update({b.name: arena.region for b in arena.buffers})
    if regions:
        io_entries = {"region": regions[-1].region, **io_entries}
    tensors = []
    for tensor in plan.tensors.values():
        root = plan.storage_of(tensor.name)
        entry = {
            "name": tensor.name,
            "layer": tensor.layer,
            "role": tensor.role.value,
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "bytes": tensor.nbytes,
        }
        if tensor.layout:
            entry["layout"] = tensor.layout
        if tensor.quant is not None:  # a model input's or output's: real = scale * (q - zero_point)
            entry["quantization"] = tensor.quant.facts()
        if tensor.view_of is not None:
            entry["view_of"] = tensor.view_of
            if tensor.view_offset:
                entry["view_offset"] = tensor.view_offset  # bytes into `view_of`
        if root in live:
            if root in region_of:
                entry["region"] = region_of[root]
            entry["offset"] = offsets[root] + plan.storage_offset(tensor.name)  # a view's: its first byte's
            entry["live_steps"] = [live[root].first_step, live[root].last_step]
            if live[root].inplace_of is not None:
                entry["inplace_of"] = live[root].inplace_of
        tensors.append(entry)
    return {
        "manifest_version": MANIFEST_VERSION,
        "model": plan.model,
        "source": plan.source,
        "target": plan.target,
        "arena": {
            "bytes": memory.arena_bytes,
            "lower_bound_bytes": memory.lower_bound,
            "strategy": memory.strategy,
            "optimal": memory.optimal,
            **io_entries,
        },
        "weight_bytes": plan.weight_bytes(),
        "inputs": plan.inputs,
        "outputs": plan.outputs,
        "kernels": sorted({call.kernel for call in plan.calls}),
        "calls": [
            {"step": step, "kernel": c.kernel, "layers": list(c.layers), "args": list(c.args), "subgraph": c.subgraph}
            for step, c in enumerate(plan.calls)
        ],
        "tensors": tensors,
        **_row_input_entry(plan),
        **facts,
    }


def _row_input_entry(plan: ExecutionPlan) -> dict:
    """{"row_input": ...} for a plan whose input comes row by row (tvm_ext.plan.row_input): the input, its rows and
    row bytes, each band's rows (kept from the band before, then asked for) and tensor; {} otherwise."""
    rows = plan.row_input
    if rows is None:
        return {}
    return {"row_input": {
        "input": rows.input, "rows": rows.rows, "row_bytes": rows.row_bytes,
        "bands": [{"tensor": f.band, "rows": [f.first_row, f.stop_row], "kept_rows": [f.first_row, f.pulled_from],
                   "halo": f.halo} for f in rows.fetches]}}


def manifest_json(data: dict) -> str:
    """`data` as JSON text that every JSON parser reads: a lone surrogate in a string (a byte of a file path
    that was not UTF-8, as Python hands it over) is written as its `printable` escape, `\\xNN`, not as a
    `\\udcNN` escape RFC 8259 leaves undefined."""
    return json.dumps(_unicode_scalars(data), indent=2) + "\n"


def _unicode_scalars(value: Any) -> Any:
    """`value` (JSON-ready data) with every string's lone surrogates replaced by their `printable` escapes."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(lambda found: printable(found.group()), value)
    if isinstance(value, dict):
        return {_unicode_scalars(key): _unicode_scalars(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unicode_scalars(item) for item in value]
    return value
