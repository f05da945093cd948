"""The C, manifest and report parts of a bundle whose profile lists several RAM regions (memory_planner.regions).

Each region gets an arena of its own, a static array the user's linker script places through a section macro:
the faster regions' arrays `<model>_arena_<region>` are always the bundle's (the run functions use them by
name), the last region's is the arena the run functions take (`<model>_arena` when static, or the caller's,
`<MODEL>_ARENA_BYTES`). The header defines, per region, `<MODEL>_ARENA_<REGION>_BYTES` and
`<MODEL>_ARENA_<REGION>_SECTION` (empty unless defined before: e.g.
`-D'<MODEL>_ARENA_DTCM_SECTION=__attribute__((section(".dtcm_arena")))'`), and the weights file
`<MODEL>_WEIGHTS_SECTION`, written before every weight array. A bundle of one region has none of this: its
files are those of a bundle before regions existed. Region names are lowercase C identifiers (the profile's
grammar, target.field_grammar.region_name): they reach C only as the end of an identifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_planner.plan import ExecutionPlan
from memory_planner.regions import RegionArena, traffic_per_byte
from packager.c_text import macro_prefix
from packager.markdown_text import markdown_text


def arena_symbol(model: str, arenas: Sequence[RegionArena], index: int) -> str:
    """The C array of region `index` of `arenas`: `<model>_arena_<region>`, the last region's `<model>_arena`."""
    return f"{model}_arena" if index == len(arenas) - 1 else f"{model}_arena_{arenas[index].region}"


def section_macro(M: str, region: str) -> str:
    """`<MODEL>_ARENA_<REGION>_SECTION`, the macro written before region `region`'s arena array."""
    return f"{M}_ARENA_{region.upper()}_SECTION"


def weights_section_macro(M: str) -> str:
    """`<MODEL>_WEIGHTS_SECTION`, the macro written before every weight array of a bundle of several regions."""
    return f"{M}_WEIGHTS_SECTION"


def _default_empty(macro: str) -> list[str]:
    return [f"#ifndef {macro}", f"#define {macro}", "#endif"]


def header_lines(model: str, arenas: Sequence[RegionArena]) -> list[str]:
    """The public header's lines for `arenas` (every region's, fastest first): each region's arena bytes and its
    section macro; nothing for one region."""
    if len(arenas) < 2:
        return []
    M = macro_prefix(model)
    last = arenas[-1].region
    lines = [
        f"/* RAM regions, fastest first, one arena each (the most accessed buffers per byte in the fastest). The",
        f" * last region's ({last}) is the arena the run functions take ({M}_ARENA_BYTES); the others are the",
        " * bundle's static arrays. Place each with your linker script by defining its section macro (and",
        f" * {weights_section_macro(M)} for the weights) before this header is read, e.g.",
        f" * -D'{section_macro(M, arenas[0].region)}=__attribute__((section(\".{arenas[0].region}_arena\")))'; "
        "empty by default. */",
    ]
    for arena in arenas:
        lines += [f"#define {M}_ARENA_{arena.region.upper()}_BYTES {arena.memory.arena_bytes}u",
                  *_default_empty(section_macro(M, arena.region))]
    return lines


def weights_lines(model: str) -> list[str]:
    """The weights file's default `<MODEL>_WEIGHTS_SECTION` (empty unless defined before)."""
    return _default_empty(weights_section_macro(macro_prefix(model)))


def faster_arena_definitions(model: str, arenas: Sequence[RegionArena], alignment: int) -> list[str]:
    """The static arrays of every region but the last (the entry function's file, before the run functions)."""
    if len(arenas) < 2:
        return []
    M = macro_prefix(model)
    lines = ["/* The arenas of the faster RAM regions (placed by their section macros, see the header). */"]
    for index, arena in enumerate(arenas[:-1]):
        lines.append(f"{section_macro(M, arena.region)} {M}_ALIGNED({alignment}) static uint8_t "
                     f"{arena_symbol(model, arenas, index)}[{max(arena.memory.arena_bytes, 1)}];")
    return [*lines, ""]


def main_arena_prefix(model: str, arenas: Sequence[RegionArena]) -> str:
    """What the static arena of the last region starts with: its section macro and a space ("" for one region)."""
    return "" if len(arenas) < 2 else f"{section_macro(macro_prefix(model), arenas[-1].region)} "


def faster_bases(model: str, arenas: Sequence[RegionArena]) -> dict[str, str]:
    """The C array each buffer of a faster region lies in, by buffer name (the last region's: the `arena`
    parameter, not listed)."""
    return {buffer.name: arena_symbol(model, arenas, index)
            for index, arena in enumerate(arenas[:-1]) for buffer in arena.buffers}


def faster_offsets(arenas: Sequence[RegionArena]) -> dict[str, int]:
    """Each faster region's buffers' offsets (bytes from their region arena's start), by buffer name."""
    return {name: offset for arena in arenas[:-1] for name, offset in arena.memory.offsets.items()}


def readme_rows(model: str, arenas: Sequence[RegionArena]) -> list[str]:
    """The bundle README's memory-table rows of the faster regions' arenas (none for one region)."""
    return [f"| arena of the faster RAM region {arena.region} (`{arena_symbol(model, arenas, index)}`) | "
            f"{arena.memory.arena_bytes:,} |" for index, arena in enumerate(arenas[:-1])]


def manifest_entry(plan: ExecutionPlan, arenas: Sequence[RegionArena]) -> list[dict[str, Any]]:
    """The manifest's `memory_regions`: per region (fastest first) its name, bytes (None: the last takes the
    rest), arena bytes and lower bound, C array, and its buffers with their estimated traffic per byte
    (memory_planner.regions.traffic_per_byte)."""
    model = plan.model
    rank = traffic_per_byte(plan, [buffer for arena in arenas for buffer in arena.buffers])
    return [{"region": arena.region, "capacity_bytes": arena.capacity_bytes,
             "arena_bytes": arena.memory.arena_bytes, "lower_bound_bytes": arena.memory.lower_bound,
             "symbol": arena_symbol(model, arenas, index),
             "section_macro": section_macro(macro_prefix(model), arena.region),
             "buffers": [{"name": b.name, "bytes": b.nbytes, "traffic_per_byte": round(rank.get(b.name, 0.0), 3)}
                         for b in arena.buffers]}
            for index, arena in enumerate(arenas)]


def report_markdown(model: str, arenas: Sequence[RegionArena]) -> str:
    """report.md's section on the regions ("" for one region)."""
    if len(arenas) < 2:
        return ""
    rows = [f"| {markdown_text(arena.region)} | "
            f"{'the rest' if arena.capacity_bytes is None else f'{arena.capacity_bytes:,}'} | "
            f"{arena.memory.arena_bytes:,} | {len(arena.buffers)} | `{arena_symbol(model, arenas, index)}` |"
            for index, arena in enumerate(arenas)]
    return ("\n## RAM regions\n\nOne arena per region, fastest first; the buffers most accessed per byte (estimated "
            "bytes loaded and stored per inference over their size) go to the fastest region that holds them.\n\n"
            "| region | region bytes | arena bytes | buffers | C array |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
