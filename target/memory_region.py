"""The RAM regions of a device: memories of different speed that one inference's arena may be split over.

A profile may list several (`ram_regions` in its file, fastest first: a Cortex-M7's 64 KiB DTCM before its
SRAM, a Cortex-M55's DTCM before its system SRAM); a profile that lists none has one region, its whole SRAM
(`Profile.memory_regions`), and gets one arena as before. The memory planner puts the buffers accessed most
per byte into the fastest region that holds them (`memory_planner.regions`), each region an arena of its own
whose C array the user's linker script places through the bundle's section macros (`packager.region_arenas`).
The last (slowest) region holds the rest: the arena the run functions take, the inputs, outputs, state and stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from target import field_grammar as grammar
from target.field_grammar import BadValue, shown

MAX_REGIONS = 8
"""A profile lists at most this many RAM regions."""

_REGION_FIELDS = ("name", "bytes")


@dataclass(frozen=True)
class RamRegion:
    """One RAM region: `name` a lowercase C identifier (it names the region's arena array `<model>_arena_<name>`
    and its macros `<MODEL>_ARENA_<NAME>_BYTES`, `<MODEL>_ARENA_<NAME>_SECTION`); `bytes` its size in bytes."""

    name: str
    bytes: int


def regions_from_tables(tables: Any) -> tuple[RamRegion, ...]:
    """The `ram_regions` field of a profile file (a list of 1 to MAX_REGIONS tables with `name` and `bytes`,
    fastest first, names unique) as RamRegions; BadValue whose text names the region and field at fault."""
    if (not isinstance(tables, list) or not 0 < len(tables) <= MAX_REGIONS
            or not all(isinstance(table, dict) for table in tables)):
        raise BadValue(f"must be a list of 1 to {MAX_REGIONS} tables with 'name' and 'bytes', fastest first "
                       f"(got {shown(tables)})", names_the_value=True)
    regions = tuple(_region(index, table) for index, table in enumerate(tables))
    names = [region.name for region in regions]
    if len(set(names)) != len(names):
        raise BadValue(f"names the same region twice ({', '.join(names)})", names_the_value=True)
    return regions


def _region(index: int, table: dict[str, Any]) -> RamRegion:
    """One region's table, each field held to its grammar (target.field_grammar)."""
    where = f"region {shown(table.get('name', index))}"
    unknown = sorted(set(table) - set(_REGION_FIELDS))
    if unknown:
        raise BadValue(f"{where}: unknown field {shown(unknown[0])} (a region has {', '.join(_REGION_FIELDS)})",
                       names_the_value=True)
    for required in _REGION_FIELDS:
        if required not in table:
            raise BadValue(f"{where}: missing field {required!r}", names_the_value=True)
    checks = {"name": grammar.region_name, "bytes": grammar.byte_count}
    values = {}
    for key, check in checks.items():
        try:
            values[key] = check(table[key])
        except BadValue as bad:
            raise BadValue(f"{where}: field {key!r} {bad} (got {shown(table[key])})", names_the_value=True) from None
    return RamRegion(values["name"], values["bytes"])
