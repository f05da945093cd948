"""The C, manifest and report parts of a bundle whose profile lists several RAM regions (memory_planner.regions).

Each region gets an arena of its own, a static array the user's linker script places through a section macro:
the faster regions' arrays are `<model>_arena_<region>`, the last region's `<model>_arena`. The entry function
`<model>_run_with_arenas` takes one arena per region (arrays indexed by `<MODEL>_ARENA_<REGION>_INDEX`, each of
`<MODEL>_ARENA_<REGION>_BYTES` at least); `<model>_run_with_arena` passes it the caller's arena for the last
region and the static arrays for the faster ones, `<model>_run` every static array. `<MODEL>_NO_STATIC_ARENA`
leaves out every static array and both functions that use them, as it leaves out a one-region bundle's arena.
The header defines, per region, `<MODEL>_ARENA_<REGION>_BYTES`, `_INDEX` and `<MODEL>_ARENA_<REGION>_SECTION`
(empty unless defined before: e.g.
`-D'<MODEL>_ARENA_DTCM_SECTION=__attribute__((section(".dtcm_arena")))'`), and the weights file
`<MODEL>_WEIGHTS_SECTION`, written before every weight array. A bundle of one region has none of this: its
files are those of a bundle before regions existed. Region names are lowercase C identifiers (the profile's
grammar, target.field_grammar.region_name): they reach C only as the end of an identifier or macro name.
In a bundle of several models (packager.several) the static arrays are the bundle's, `<name>_arena_<region>`,
each of the largest of its models' arenas in that region.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_planner.plan import ExecutionPlan
from memory_planner.regions import RegionArena
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


def header_lines(model: str, arenas: Sequence[RegionArena], sections: bool = True) -> list[str]:
    """The public header's lines for `arenas` (every region's, fastest first): the regions' count, each region's
    arena bytes, its index in `<model>_run_with_arenas`' arrays and (`sections`) its section macro; nothing for
    one region."""
    if len(arenas) < 2:
        return []
    M = macro_prefix(model)
    last = arenas[-1].region
    lines = [
        f"/* RAM regions, fastest first, one arena each (the most accessed buffers per byte in the fastest). The",
        f" * last region's ({last}) is the arena {model}_run_with_arena takes ({M}_ARENA_BYTES); the bundle's static",
        f" * arrays hold the others, unless {M}_NO_STATIC_ARENA is defined: then pass every region's arena to",
        f" * {model}_run_with_arenas, arenas[{M}_ARENA_<REGION>_INDEX] of {M}_ARENA_<REGION>_BYTES bytes at least.",
    ]
    placing = _placing(M, arenas[0].region) if sections else [
        " * The static arenas are the bundle's, shared by its models (the bundle's header). */"]
    return [*lines, *placing, *_region_macros(M, arenas, sections)]


def shared_header_lines(name: str, arenas: Sequence[RegionArena]) -> list[str]:
    """The lines of the header of a bundle of several models (packager.several) for its shared arenas `arenas`
    (one per RAM region, fastest first): each one's bytes, index and section macro; nothing for one region."""
    if len(arenas) < 2:
        return []
    N = macro_prefix(name)
    return [f"/* RAM regions, fastest first: the models share one static arena per region, of the largest of their",
            f" * arenas in it ({', '.join(arena_symbol(name, arenas, index) for index in range(len(arenas)))}).",
            *_placing(N, arenas[0].region), *_region_macros(N, arenas, True)]


def _placing(M: str, region: str) -> list[str]:
    """The end of a header's comment on the regions: how to place the static arenas (`region`'s the example)."""
    return [" * Place each static arena with your linker script by defining its section macro (and",
            f" * {weights_section_macro(M)} for the weights) before this header is read, e.g.",
            f" * -D'{section_macro(M, region)}=__attribute__((section(\".{region}_arena\")))'; empty by default. */"]


def _region_macros(M: str, arenas: Sequence[RegionArena], sections: bool) -> list[str]:
    """`<M>_REGION_COUNT`, and per region its arena's bytes, its index and (`sections`) its section macro."""
    lines = [f"#define {M}_REGION_COUNT {len(arenas)}u"]
    for index, arena in enumerate(arenas):
        lines += [f"#define {M}_ARENA_{arena.region.upper()}_BYTES {arena.memory.arena_bytes}u",
                  f"#define {M}_ARENA_{arena.region.upper()}_INDEX {index}u",
                  *(_default_empty(section_macro(M, arena.region)) if sections else ())]
    return lines


def weights_lines(model: str) -> list[str]:
    """The weights file's default `<MODEL>_WEIGHTS_SECTION` (empty unless defined before)."""
    return _default_empty(weights_section_macro(macro_prefix(model)))


def faster_arena_definitions(model: str, arenas: Sequence[RegionArena], alignment: int,
                             storage: str = "static ") -> list[str]:
    """The static arrays of every region but the last (`storage`: "static " in a model's entry function's file,
    "" in the shared arena file of a bundle of several models, where `model` is the bundle's name)."""
    if len(arenas) < 2:
        return []
    M = macro_prefix(model)
    lines = ["/* The arenas of the faster RAM regions (placed by their section macros, see the header). */"]
    for index, arena in enumerate(arenas[:-1]):
        lines.append(f"{section_macro(M, arena.region)} {M}_ALIGNED({alignment}) {storage}uint8_t "
                     f"{arena_symbol(model, arenas, index)}[{array_bytes(arena)}];")
    return lines


def array_bytes(arena: RegionArena) -> int:
    """The length of a region arena's C array: its bytes, at least 1 (ISO C has no array of none)."""
    return max(arena.memory.arena_bytes, 1)


def main_arena_prefix(model: str, arenas: Sequence[RegionArena]) -> str:
    """What the static arena of the last region starts with: its section macro and a space ("" for one region)."""
    return "" if len(arenas) < 2 else f"{section_macro(macro_prefix(model), arenas[-1].region)} "


def region_bases(arenas: Sequence[RegionArena]) -> dict[str, str]:
    """The C expression of the region arena each buffer lies in, by buffer name: `arenas[<index>]`, the
    parameter of `<model>_run_with_arenas` (packager.aot_entry)."""
    return {buffer.name: f"arenas[{index}]" for index, arena in enumerate(arenas) for buffer in arena.buffers}


def region_offsets(arenas: Sequence[RegionArena]) -> dict[str, int]:
    """Every region's buffers' offsets (bytes from their region arena's start), by buffer name."""
    return {name: offset for arena in arenas for name, offset in arena.memory.offsets.items()}


def readme_rows(model: str, arenas: Sequence[RegionArena], what: str = "arena") -> list[str]:
    """The bundle README's memory-table rows of the faster regions' arenas (none for one region); `model` the
    arrays' owner (a model, or a bundle of several whose `what` is its "shared arena")."""
    return [f"| {what} of the faster RAM region {arena.region} (`{arena_symbol(model, arenas, index)}`) | "
            f"{arena.memory.arena_bytes:,} |" for index, arena in enumerate(arenas[:-1])]


def last_region_phrase(model: str, arenas: Sequence[RegionArena]) -> str:
    """What the README's arena row adds of the last RAM region: ", last RAM region sram (`kws_arena`)" ("" for
    one region)."""
    return "" if len(arenas) < 2 else f", last RAM region {arenas[-1].region} (`{model}_arena`)"


def manifest_entry(plan: ExecutionPlan, arenas: Sequence[RegionArena]) -> list[dict[str, Any]]:
    """The manifest's `memory_regions`: per region (fastest first) its name, bytes (None: the last takes the
    rest), arena bytes and lower bound, C array, and its buffers with their estimated traffic per byte
    (the rank that placed them: RegionArena.traffic_per_byte)."""
    model = plan.model
    return [{"region": arena.region, "capacity_bytes": arena.capacity_bytes,
             "arena_bytes": arena.memory.arena_bytes, "lower_bound_bytes": arena.memory.lower_bound,
             "symbol": arena_symbol(model, arenas, index),
             "section_macro": section_macro(macro_prefix(model), arena.region),
             "buffers": [{"name": b.name, "bytes": b.nbytes,
                          "traffic_per_byte": round(arena.traffic_per_byte[b.name], 3)}
                         for b in arena.buffers]}
            for index, arena in enumerate(arenas)]


def report_markdown(model: str, arenas: Sequence[RegionArena], files: str = "") -> str:
    """report.md's section on the regions ("" for one region); `model` owns the C arrays (a model, or a bundle of
    several models whose arenas its models share), `files` starts the names of the bundle's files on the model
    (a bundle of several: `<model>_`)."""
    if len(arenas) < 2:
        return ""
    rows = [f"| {markdown_text(arena.region)} | "
            f"{'the rest' if arena.capacity_bytes is None else f'{arena.capacity_bytes:,}'} | "
            f"{arena.memory.arena_bytes:,} | {len(arena.buffers)} | `{arena_symbol(model, arenas, index)}` |"
            for index, arena in enumerate(arenas)]
    return ("\n## RAM regions\n\nOne arena per region, fastest first; the buffers most accessed per byte (estimated "
            "bytes loaded and stored per inference over their size) go to the fastest region that holds them. "
            f"{files}memory_plan.svg and {files}report.html draw each region's arena in a lane of its own, and "
            "manifest.json's `memory_regions` lists each region's buffers.\n\n"
            "| region | region bytes | arena bytes | buffers | C array |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
