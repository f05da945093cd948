"""`<model>_model.c`: the entry function that calls the kernels in order on one arena (one per RAM region where
the profile lists several, `<model>_run_with_arenas`: `packager.region_arenas`).

Every tensor argument is one of: a weight array, the caller's input or output buffer (read and written in
place, also through views), the bundle's static state (`packager.state`), or `arena + offset` from the memory plan
(inputs and outputs too when they were planned into the arena: then the run functions take no I/O arguments
and `<model>_input0()`... give their places in the static arena).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memory_planner.api import Buffer
from memory_planner.plan import DTYPE_BYTES, ExecutionPlan, KernelCall, TensorRole
from memory_planner.regions import RegionArena
from packager.c_types import c_type_of
from packager.c_text import comment, macro_prefix
from packager.header import io_accessor_signature, run_signature, run_with_arenas_signature
from packager.internal_header import weight_symbol
from packager.io_names import IoTensor, io_in_arena
from packager.region_arenas import (arena_symbol, faster_arena_definitions, main_arena_prefix, region_bases,
                                    region_offsets)
from packager.state import state_definitions, state_symbol
from packager.template_files import template_text
from packager.weights_block import base_lines, member_pointer


def _at(root: str, offsets: Mapping[str, int], bases: Mapping[str, str], skipped: int = 0) -> str:
    """The place of arena storage `root`, `skipped` bytes into it (a view's): `arena + <offset>u`, or in its
    region's array (`bases`: a profile of several RAM regions, packager.region_arenas)."""
    return f"{bases.get(root, 'arena')} + {offsets[root] + skipped}u"


def _argument(plan: ExecutionPlan, name: str, offsets: Mapping[str, int], io_pointer: dict[str, str],
              stored_as: Mapping[str, str] | None = None, bases: Mapping[str, str] | None = None,
              block: bool = False) -> str:
    """The C argument passing tensor `name` (`block`: the weights are members of one struct, addressed from the
    run function's base pointer, packager.weights_block)."""
    tensor = plan.tensors[name]
    root = plan.storage_of(name)
    role = plan.tensors[root].role
    skipped = plan.storage_offset(name)  # a view's bytes into its root
    if role is TensorRole.CONSTANT:
        pointer = member_pointer(root) if block else weight_symbol(plan, root, stored_as)
    elif role in (TensorRole.INPUT, TensorRole.OUTPUT) and root in io_pointer:
        pointer = io_pointer[root]
    elif role is TensorRole.STATE:
        pointer = state_symbol(plan, root)
    else:
        return f"({c_type_of(tensor.dtype)}*)({_at(root, offsets, bases or {}, skipped)})"
    element_bytes = DTYPE_BYTES[plan.tensors[root].dtype]
    return pointer if skipped == 0 else f"({pointer} + {skipped // element_bytes})"  # a view: the root's own type


def arena_gaps(buffers: list[Buffer], offsets: dict[str, int], arena_bytes: int, step: int) -> list[tuple[int, int]]:
    """The [begin, end) byte ranges of the arena that no buffer live at `step` occupies."""
    taken = sorted((offsets[b.name], offsets[b.name] + b.nbytes) for b in buffers if b.first_step <= step <= b.last_step)
    gaps, cursor = [], 0
    for begin, end in taken:
        if begin > cursor:
            gaps.append((cursor, begin))
        cursor = max(cursor, end)
    if cursor < arena_bytes:
        gaps.append((cursor, arena_bytes))
    return gaps


def _accessor_definitions(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor]) -> list[str]:
    """`<model>_input0()`...: each input's and output's place in the static arena (all have arena offsets)."""
    lines = []
    for io, is_input in [*((io, True) for io in inputs), *((io, False) for io in outputs)]:
        const = "" if is_input else "const "
        lines += ["", io_accessor_signature(plan, io, is_input), "{",
                  f"  return ({const}{io.c_type}*)({plan.model}_arena + {io.arena_offset}u);", "}"]
    return lines


def _poison_lines(M: str, gaps: list[tuple[str, int, int]]) -> list[str]:
    """The test build's poison() calls for `gaps` ((array, begin, end): bytes no live buffer holds)."""
    if not gaps:
        return []
    calls = [f"  poison({array}, {begin}u, {end}u);" for array, begin, end in gaps]
    return [f"#ifdef {M}_POISON_ARENA", *calls, "#endif"]


def _poison_definition(M: str) -> list[str]:
    """The test build's poison() (defined only where a call uses it: -Wunused-function).

    Its calls go through a volatile function pointer, which no compiler can inline: inlined, gcc -O2 compiled the
    loop once per call (thousands in a bundle of streamed bands: 10 CPU-seconds of one model.c under the
    sanitizers, 0.5 s this way). The shipped library is the same: the block is the test build's only."""
    return [
        f"#ifdef {M}_POISON_ARENA",
        "/* Fills arena[begin, end) with a pattern no model computes by chance (a test build only). */",
        "static void poison_bytes(uint8_t* arena, size_t begin, size_t end)",
        "{",
        "  size_t i;",
        "  for (i = begin; i < end; ++i) {",
        "    arena[i] = 0xA5u;",
        "  }",
        "}",
        "/* Called through a volatile pointer: never inlined, one loop to compile instead of one per call. */",
        "static void (*volatile poison)(uint8_t* arena, size_t begin, size_t end) = poison_bytes;",
        "#endif",
        "",
    ]


@dataclass(frozen=True)
class SharedArena:
    """A model's place in a bundle of several (packager.several): the bundle's `name` (its static arena is
    `<name>_arena`, of `<NAME>_ARENA_BYTES`, declared in `header`), and `stored_as`, the array another model
    stores each of this model's constants in that it does not store itself (tensor name -> C symbol)."""

    name: str
    header: str
    stored_as: Mapping[str, str]


_ROWS_HELPERS = ("#include <string.h>", "", template_text("packager", "lp_rows.h").rstrip("\n"))
"""A row-wise input's band helpers (tvm_ext.plan.row_input), static in the entry function's file."""

_PROFILE_INCLUDES = ('#include "lp_icount.h"', '#include "lp_call_profile.h"')


def _call_lines(step: int, kernel_call: str, failure: str | None, profile_calls: bool) -> list[str]:
    """The statements of one kernel call `kernel_call` (`kernel(args)`, no `;`): with `failure` (a status macro)
    the call returns int32_t and the run returns `failure` when it is nonzero (a kernel that checks indices:
    <MODEL>_ERROR_INDEX_OUT_OF_RANGE). With `profile_calls` the call sits between a start and a reading of the
    instruction counter, the count printed for `step`."""
    if not profile_calls:
        if failure is None:
            return [f"  {kernel_call};"]
        return [f"  if ({kernel_call} != 0) {{", f"    return {failure};", "  }"]
    counted = f"const int32_t status = {kernel_call};" if failure is not None else f"{kernel_call};"
    lines = ["  {", "    const uint32_t lp_start = lp_icount_start();", f"    {counted}",
             f"    lp_profile_call({step}u, lp_icount_elapsed(lp_start));"]
    if failure is not None:
        lines += ["    if (status != 0) {", f"      return {failure};", "    }"]
    return lines + ["  }"]


def _kernel_call(plan: ExecutionPlan, M: str, call: KernelCall, offsets: Mapping[str, int],
                 io_pointer: dict[str, str], stored_as: Mapping[str, str] | None = None,
                 bases: Mapping[str, str] | None = None, block: bool = False) -> tuple[str, str | None]:
    """The C call of `call` (no `;`) and the status the run returns when it returns nonzero (None: it returns
    nothing): a generated kernel's (`stored_as`: the weights another model stores, packager.several), or a
    row-wise input's band helper's (packager/templates/lp_rows.h). `bases`: the region array of each buffer
    not in `arena` (packager.region_arenas). `block`: the weights are one struct's members (packager.weights_block)."""
    bases = bases or {}
    rows = plan.row_input
    fetch = None if rows is None else rows.fetch_of(call)
    if fetch is not None:
        halo_bytes = (fetch.pulled_from - fetch.first_row) * rows.row_bytes
        halo = "NULL" if fetch.halo is None else _at(plan.storage_of(fetch.halo), offsets, bases)
        return (f"lp_rows_fetch(read_row, context, {halo}, {halo_bytes}u, {fetch.pulled_from}u, {fetch.stop_row}u, "
                f"{rows.row_bytes}u, {_at(plan.storage_of(fetch.band), offsets, bases)})", f"{M}_ERROR_INPUT_ROW")
    keep = None if rows is None else rows.keep_of(call)
    if keep is not None:
        band = plan.storage_of(keep.band)
        return (f"lp_rows_keep({bases.get(band, 'arena')} + {offsets[band] + keep.offset}u, "
                f"{plan.tensors[keep.halo].nbytes}u, {_at(plan.storage_of(keep.halo), offsets, bases)})", None)
    args = ", ".join(_argument(plan, a, offsets, io_pointer, stored_as, bases, block) for a in call.args)
    return f"{call.kernel}({args})", f"{M}_ERROR_INDEX_OUT_OF_RANGE" if call.checks_indices else None


def _arena_checks(M: str, regions: Sequence[RegionArena], arena_bytes: int) -> list[str]:
    """The run's checks of its arena (`arena`, `arena_bytes`) or, with `regions`, of each region's (`arenas[k]`,
    `arena_bytes[k]`): aligned to `<M>_ARENA_ALIGNMENT`, and of the plan's bytes at least (no test of a size
    against 0 bytes: -Wtype-limits)."""
    if not regions:
        aligned, sizes = ["arena"], [("arena_bytes", f"{M}_ARENA_BYTES")] if arena_bytes > 0 else []
    else:
        aligned = [f"arenas[{index}]" for index in range(len(regions))]
        sizes = [(f"arena_bytes[{index}]", f"{M}_ARENA_{arena.region.upper()}_BYTES")
                 for index, arena in enumerate(regions) if arena.memory.arena_bytes > 0]
    lines = [f"  if ({' || '.join(f'((uintptr_t){pointer} % {M}_ARENA_ALIGNMENT) != 0u' for pointer in aligned)}) {{",
             f"    return {M}_ERROR_MISALIGNED_ARENA;", "  }"]
    if sizes:
        return [*lines, f"  if ({' || '.join(f'{given} < {needed}' for given, needed in sizes)}) {{",
                f"    return {M}_ERROR_ARENA_TOO_SMALL;", "  }"]
    return [*lines, "  (void)arena_bytes; /* this model needs no arena */"]


def _static_faster_call(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor],
                        regions: Sequence[RegionArena], owner: str, call_args: str) -> list[str]:
    """With `regions`: `<model>_run_with_arena`, which runs `<model>_run_with_arenas` on the caller's arena for
    the last region and on the static arrays of `owner` (the model, or the bundle of several models that shares
    them) for the faster ones; nothing for one region."""
    if not regions:
        return []
    m, O = plan.model, macro_prefix(owner)
    faster = [(arena_symbol(owner, regions, index), f"{O}_ARENA_{arena.region.upper()}_BYTES")
              for index, arena in enumerate(regions[:-1])]
    return [
        "",
        run_signature(plan, inputs, outputs, with_arena=True),
        "{",
        f"  uint8_t* const arenas[{macro_prefix(m)}_REGION_COUNT] = {{{', '.join(s for s, _ in faster)}, arena}};",
        f"  const size_t sizes[{macro_prefix(m)}_REGION_COUNT] = {{{', '.join(b for _, b in faster)}, arena_bytes}};",
        f"  return {m}_run_with_arenas(arenas, sizes{call_args});",
        "}",
    ]


def write_model_c(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor], offsets: dict[str, int],
                  buffers: list[Buffer], arena_bytes: int, alignment: int, profile_calls: bool = False,
                  shared: SharedArena | None = None, regions: Sequence[RegionArena] = (),
                  weights_block: bool = False) -> str:
    """The entry function. Built with -D<MODEL>_POISON_ARENA, it fills every arena byte that no live buffer
    holds with 0xA5 before each call: a plan that let a kernel read bytes it does not own fails its self-test.

    With `profile_calls` it is an emulated board's profiling build's run function (never the shipped one): each
    kernel call sits between the board's instruction counter's start and reading (lp_icount.h), and
    lp_call_profile.h prints each call's count (the runner's support files, e.g. OUT/cortex_m/).

    With `shared` (a bundle of several models, packager.several) the weights stored by another model are passed
    under their arrays' names and `<model>_run` runs on the bundle's one static arena instead of its own.

    With `regions` (every RAM region's arena, fastest first, when the profile lists several: `offsets`,
    `buffers` and `arena_bytes` are then the last region's) the entry function is `<model>_run_with_arenas`, on
    one arena per region (`arenas[k]`; the test build poisons each), and `<model>_run_with_arena` passes it the
    caller's arena for the last region and the static arrays for the others (the model's, or with `shared` the
    bundle's), all under `<MODEL>_NO_STATIC_ARENA` (packager.region_arenas).

    With `weights_block` (never with `shared`) the weights are the members of one struct, each passed as the run
    function's one base pointer plus its member's offset (packager.weights_block)."""
    m, M = plan.model, macro_prefix(plan.model)
    in_arena = io_in_arena(inputs, outputs)
    single = len(inputs) == 1 and len(outputs) == 1
    io_pointer = {}
    for io in [] if in_arena else inputs:
        io_pointer[plan.storage_of(io.tensor.name)] = "input" if single else f"inputs->{io.field}"
    for io in [] if in_arena else outputs:
        io_pointer[plan.storage_of(io.tensor.name)] = "output" if single else f"outputs->{io.field}"
    null_checks = ["arena == NULL"] if not regions else [
        "arenas == NULL", "arena_bytes == NULL", *(f"arenas[{index}] == NULL" for index in range(len(regions)))]
    if plan.row_input is not None:
        null_checks += ["read_row == NULL", "output == NULL"]
    elif single and not in_arena:
        null_checks += ["input == NULL", "output == NULL"]
    elif not in_arena:
        null_checks += ["inputs == NULL", "outputs == NULL"]
        null_checks += [f"inputs->{io.field} == NULL" for io in inputs]
        null_checks += [f"outputs->{io.field} == NULL" for io in outputs]

    bases = region_bases(regions)
    offsets = {**region_offsets(regions), **offsets}
    arrays = ([(f"arenas[{index}]", list(arena.buffers), arena.memory.arena_bytes)
               for index, arena in enumerate(regions)] if regions else [("arena", buffers, arena_bytes)])
    gaps = [[(array, begin, end) for array, held, size in arrays for begin, end in arena_gaps(held, offsets, size, step)]
            for step in range(len(plan.calls))]
    lines = [
        f"/* {m}_model.c: runs {comment(plan.source)} as {len(plan.calls)} kernel calls on one arena.",
        " * Generated by tvm_ext; the offsets come from the memory plan in manifest.json. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        *([] if shared is None else [f'#include "{shared.header}"']),
        f'#include "{m}.h"',
        f'#include "{m}_internal.h"',
        *(_PROFILE_INCLUDES if profile_calls else ()),
        *(_ROWS_HELPERS if plan.row_input is not None else ()),
        "",
        *(_poison_definition(M) if any(gaps) else ()),
        *state_definitions(plan),
        run_with_arenas_signature(plan, inputs, outputs) if regions else run_signature(plan, inputs, outputs, True),
        "{",
        f"  if ({' || '.join(null_checks)}) {{",
        f"    return {M}_ERROR_NULL_ARGUMENT;",
        "  }",
        *_arena_checks(M, regions, arena_bytes),
        *(base_lines(plan) if weights_block else ()),
    ]
    if profile_calls:
        lines.append("  lp_profile_empty_region(); /* what the counter counts of itself, for each call's count */")
    for step, call in enumerate(plan.calls):
        layers = "; ".join(call.layers) or "(no layer name)"
        kernel_call, failure = _kernel_call(plan, M, call, offsets, io_pointer, shared and shared.stored_as, bases,
                                            weights_block)
        lines += [f"  /* {step}: {comment(layers)} */", *_poison_lines(M, gaps[step]),
                  *_call_lines(step, kernel_call, failure, profile_calls)]
    call_args = "" if in_arena else ", input, output" if single else ", inputs, outputs"
    if plan.row_input is not None:
        call_args = ", read_row, context, output"
    static_arena = ([*faster_arena_definitions(m, regions, alignment),
                     f"{main_arena_prefix(m, regions)}{M}_ALIGNED({alignment}) static uint8_t "
                     f"{m}_arena[{max(arena_bytes, 1)}];"] if shared is None
                    else [f"/* The bundle's {'static arenas' if regions else 'one static arena'}, shared with its "
                          f"other models ({shared.header}). */"])
    arena_call = (f"{m}_arena, sizeof({m}_arena)" if shared is None
                  else f"{shared.name}_arena, {macro_prefix(shared.name)}_ARENA_BYTES")
    lines += [
        f"  return {M}_OK;",
        "}",
        "",
        f"#ifndef {M}_NO_STATIC_ARENA",
        *static_arena,
        *_static_faster_call(plan, inputs, outputs, regions, shared.name if shared is not None else m, call_args),
        "",
        run_signature(plan, inputs, outputs, with_arena=False),
        "{",
        f"  return {m}_run_with_arena({arena_call}{call_args});",
        "}",
        *(_accessor_definitions(plan, inputs, outputs) if in_arena else []),
        "#endif",
        "",
    ]
    return "\n".join(lines)
