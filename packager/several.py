"""A bundle of several models: one run function per model over one shared static arena, one weights file.

Each model keeps its own prefix (its header `<model>.h`, kernels, run functions and status codes, exactly as a
bundle of that model alone names them: `packager.bundle`); the bundle adds, under its own name `<name>`:
- `<name>.h`: includes every model's header, and gives `<NAME>_ARENA_BYTES` (the largest model's arena),
  `<NAME>_WEIGHT_BYTES` (the weights stored, each constant once) and the one static arena `<name>_arena`; for a
  profile of several RAM regions, one shared arena per region (`<name>_arena_<region>`, the last region's
  `<name>_arena`), each of the largest of the models' arenas in that region, with the section macros of
  packager.region_arenas under the bundle's prefix;
- `<name>_model.c`: that arena, which every model's `<model>_run` runs on (`packager.aot_entry.SharedArena`);
- `<name>_weights.c`: every model's constants, a constant whose dtype, shape and bytes an earlier one (of any
  model) has stored once (the caller decides which: `StoredWeight`, `WeightSharing`);
- `selftest.c`: every model's cases, one model after the other (`packager.selftest.write_several_selftest`), and
  one Makefile / CMakeLists.txt building one library `lib<name>.a` (`BuildConfig.members`).
The run functions share the arena, so they are neither reentrant nor concurrent: one model runs at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from emulator.qemu import INSTRUCTIONS_LINE
from memory_planner.picture import arenas_svg
from memory_planner.plan import Tensor
from memory_planner.regions import RegionArena
from packager import region_arenas
from packager.aot_entry import SharedArena, write_model_c
from packager.build_files import BuildConfig, write_cmakelists, write_makefile
from packager.bundle import BundleInputs, bundle_io, kernel_file_text, kernel_files, write_checked_files
from packager.c_text import EXTERN_C_BEGIN, EXTERN_C_END, comment, macro_prefix
from packager.header import write_header
from packager.internal_header import alignment_macro, write_internal_header
from packager.selftest import SelftestPart, reference_checksums, write_several_selftest
from packager.selftest_verdict import SelftestResult, read_selftest
from packager.weights import weight_definition


_MISALIGNED = "each model's run then returns its _ERROR_MISALIGNED_ARENA"
"""What the alignment macro's comment says of a misaligned static arena in the bundle's own files."""


@dataclass(frozen=True)
class StoredWeight:
    """One array of `<name>_weights.c`: its C `symbol`, the constant `tensor` it was first stored for, its
    `values`, and `label`, the layers (of every model) that read it."""

    symbol: str
    tensor: Tensor
    values: np.ndarray
    label: str


@dataclass(frozen=True)
class WeightSharing:
    """The bundle's weights: the arrays stored (each content once), and per model the arrays another model
    stores of its constants (model -> tensor name -> symbol; a model absent or a tensor absent: its own)."""

    stored: tuple[StoredWeight, ...]
    stored_as: dict[str, dict[str, str]]

    @property
    def weight_bytes(self) -> int:
        """Bytes of the arrays stored."""
        return sum(weight.tensor.nbytes for weight in self.stored)


def arena_bytes(bundles: list[BundleInputs]) -> int:
    """The shared arena's bytes: the largest model's arena (of the last RAM region's, when the profile lists
    several: `shared_regions`)."""
    return max(bundle.memory.arena_bytes for bundle in bundles)


def shared_regions(bundles: list[BundleInputs]) -> tuple[RegionArena, ...]:
    """The bundle's arena per RAM region when the profile lists several (each model's `regions`, planned alone),
    fastest first: region by region the largest model's arena (its buffers and plan: the one picture and
    manifest entry that sizes it), so every model's buffers fit each region's shared arena, and one model runs at
    a time; () for one region. Each faster region's arena stays within its bytes, as every model's does."""
    if not bundles[0].regions:
        return ()
    return tuple(max((bundle.regions[index] for bundle in bundles), key=lambda arena: arena.memory.arena_bytes)
                 for index in range(len(bundles[0].regions)))


def shared_regions_entry(name: str, regions: tuple[RegionArena, ...],
                         bundles: list[BundleInputs]) -> list[dict[str, Any]]:
    """The manifest's `memory_regions` of the bundle `name`: per RAM region (fastest first) its name, bytes (None:
    the last takes the rest), the shared arena's bytes, its C array and section macro, and each model's arena in
    it (bytes, by model)."""
    return [{"region": arena.region, "capacity_bytes": arena.capacity_bytes, "arena_bytes": arena.memory.arena_bytes,
             "symbol": region_arenas.arena_symbol(name, regions, index),
             "section_macro": region_arenas.section_macro(macro_prefix(name), arena.region),
             "models": {bundle.plan.model: bundle.regions[index].memory.arena_bytes for bundle in bundles}}
            for index, arena in enumerate(regions)]


def write_several(out_dir: Path, name: str, bundles: list[BundleInputs], weights: WeightSharing,
                  config: BuildConfig) -> list[Path]:
    """Write the bundle `name` of the models `bundles` (each packaged as alone, with `config` of the same profile,
    whose `members` are the models' prefixes) into `out_dir`; return the files written (the runner's support
    files too)."""
    header = f"{name}.h"
    alignment = max(bundle.alignment for bundle in bundles)
    files: dict[str, str] = {}
    for bundle in bundles:
        plan, m = bundle.plan, bundle.plan.model
        inputs, outputs = bundle_io(bundle)
        shared = SharedArena(name, header, weights.stored_as.get(m, {}))
        files[f"{m}.h"] = write_header(plan, inputs, outputs, bundle.memory.arena_bytes, bundle.alignment,
                                       bundle.regions, sections=False)
        files[f"{m}_internal.h"] = write_internal_header(
            plan, bundle.kernel_signatures, bundle.requantize_roundings, bundle.helper_libraries,
            bundle.signal_helpers, bundle.alignment, shared.stored_as)
        files.update({source: kernel_file_text(m, source, text) for source, text in kernel_files(m, bundle).items()})
        files[f"{m}_model.c"] = write_model_c(plan, inputs, outputs, bundle.memory.offsets, bundle.buffers,
                                              bundle.memory.arena_bytes, bundle.alignment, shared=shared,
                                              regions=bundle.regions)
        files[f"{m}_memory_plan.svg"] = arenas_svg(bundle.buffers, bundle.memory, bundle.regions)
        profiled = config.emulated.profiled_model_source(m) if config.emulated is not None else None
        if profiled is not None:
            files[profiled] = write_model_c(plan, inputs, outputs, bundle.memory.offsets, bundle.buffers,
                                            bundle.memory.arena_bytes, bundle.alignment, profile_calls=True,
                                            shared=shared, regions=bundle.regions)
    regions = shared_regions(bundles)
    files[header] = _umbrella_header(name, bundles, weights, alignment, regions)
    files[f"{name}_model.c"] = _arena_source(name, header, alignment, regions)
    files[f"{name}_weights.c"] = _weights_source(name, bundles, weights, alignment, bool(regions))
    files["selftest.c"] = write_several_selftest(header, [SelftestPart(b.plan, *bundle_io(b), b.vectors)
                                                          for b in bundles])
    files["Makefile"] = write_makefile(name, config)
    files["CMakeLists.txt"] = write_cmakelists(name, config)
    return write_checked_files(out_dir, files, name, config)


def _umbrella_header(name: str, bundles: list[BundleInputs], weights: WeightSharing, alignment: int,
                     regions: tuple[RegionArena, ...] = ()) -> str:
    """`<name>.h`: every model's header, the shared arena's size and the weights' bytes; with `regions` (the
    shared arena of each RAM region, `shared_regions`) each region's bytes, section macro and static array."""
    N = macro_prefix(name)
    models = [bundle.plan.model for bundle in bundles]
    lines = [
        f"/* {name}.h: the models {', '.join(models)} in one bundle, on one statically planned arena.",
        " * Generated by tvm_ext; do not edit. Each model's API is in its own header, under its own prefix.",
        f" * Target profile: {bundles[0].plan.target}. */",
        f"#ifndef {N}_H",
        f"#define {N}_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f"/* Define {N}_NO_STATIC_ARENA to leave out the bundle's static arena, and pass yours (of {N}_ARENA_BYTES",
        " * bytes at least) to each model's _run_with_arena. */",
        f"#ifdef {N}_NO_STATIC_ARENA",
        *(f"#define {macro_prefix(m)}_NO_STATIC_ARENA" for m in models),
        "#endif",
        "",
        *(f'#include "{m}.h"' for m in models),
        "",
        *EXTERN_C_BEGIN,
        "",
        "/* Bytes of the one arena the models share: the largest model's arena. Every <model>_run runs on it, so",
        " * the run functions are neither reentrant nor concurrent: run one model at a time (from one thread, not",
        " * from an interrupt that may preempt another run). Inputs and outputs are the caller's buffers, not in",
        " * the arena: one model's output may be the next model's input. A model's state is its own, not in it. */",
        f"#define {N}_ARENA_BYTES {arena_bytes(bundles)}u",
        f"#define {N}_ARENA_ALIGNMENT {alignment}u",
        "/* Bytes of constant weights (in flash), each constant stored once however many models read it. */",
        f"#define {N}_WEIGHT_BYTES {weights.weight_bytes}u",
        f"#define {N}_MODEL_COUNT {len(models)}u",
        *region_arenas.shared_header_lines(name, regions),
        "",
        f"#ifndef {N}_NO_STATIC_ARENA",
        f"/* The shared static arena{'s' if regions else ''} ({name}_model.c). */",
        *(f"extern uint8_t {region_arenas.arena_symbol(name, regions, index)}[{region_arenas.array_bytes(arena)}];"
          for index, arena in enumerate(regions[:-1])),
        f"extern uint8_t {name}_arena[{N}_ARENA_BYTES];",
        "#endif",
        "",
        *EXTERN_C_END,
        "",
        f"#endif /* {N}_H */",
        "",
    ]
    return "\n".join(lines)


def _arena_source(name: str, header: str, alignment: int, regions: tuple[RegionArena, ...] = ()) -> str:
    """`<name>_model.c`: the one static arena every model's `<model>_run` runs on (one per RAM region, each after
    its section macro, with `regions`)."""
    N = macro_prefix(name)
    return "\n".join([
        f"/* {name}_model.c: the static arena{'s' if regions else ''} the bundle's models share. Generated by "
        "tvm_ext. */",
        f'#include "{header}"',
        "",
        *alignment_macro(N, alignment, _MISALIGNED),
        "",
        f"#ifndef {N}_NO_STATIC_ARENA",
        *region_arenas.faster_arena_definitions(name, regions, alignment, storage=""),
        f"{region_arenas.main_arena_prefix(name, regions)}{N}_ALIGNED({alignment}) uint8_t "
        f"{name}_arena[{N}_ARENA_BYTES];",
        "#else",
        f"typedef int {name}_no_static_arena; /* ISO C: a translation unit declares something */",
        "#endif",
        "",
    ])


def _weights_source(name: str, bundles: list[BundleInputs], weights: WeightSharing, alignment: int,
                    sections: bool = False) -> str:
    """`<name>_weights.c`: every array of `weights.stored`, aligned to `alignment` bytes (after the bundle's
    `<NAME>_WEIGHTS_SECTION` macro with `sections`: a profile of several RAM regions, packager.region_arenas)."""
    N = macro_prefix(name)
    sources = "; ".join(comment(bundle.plan.source) for bundle in bundles)
    lines = [
        f"/* {name}_weights.c: the weights of {sources}, each constant once. Generated by tvm_ext. */",
        "#include <math.h>",
        "#include <stdbool.h>",
        "#include <stdint.h>",
        "",
        *alignment_macro(N, alignment, _MISALIGNED),
        *(region_arenas.weights_lines(name) if sections else ()),
        "",
    ]
    section = f"{region_arenas.weights_section_macro(N)} " if sections else ""
    for weight in weights.stored:
        lines += weight_definition(N, alignment, weight.symbol, weight.tensor, weight.values, weight.label, section)
    return "\n".join(lines)


_MODEL_SECTION = re.compile(r"^selftest: (\S+) compared with ", re.MULTILINE)
"""The line each model's part of the self-test starts with (packager.selftest._cases_function)."""

def model_parts(output: str, models: list[str]) -> dict[str, str]:
    """Each model's part of the output of the self-test of several models (or of its profiling build): the text
    from its `selftest: <model> compared with` line to the next model's ("" when the program ended before it)."""
    starts = {match[1]: match.start() for match in _MODEL_SECTION.finditer(output)}
    parts = {}
    for model in models:
        begin = starts.get(model)
        later = [start for start in starts.values() if begin is not None and start > begin]
        parts[model] = "" if begin is None else output[begin:min(later, default=len(output))]
    return parts


def read_several_selftest(exit_code: int | None, ending: str, output: str, where: str,
                          bundles: list[BundleInputs]) -> dict[str, SelftestResult]:
    """Each model's self-test verdict from the one program's `output` (packager.selftest_verdict.read_selftest on
    its `model_parts` part), with the program's `exit_code` and `ending`; each model's instructions per inference
    from its part's counter line (emulated boards). A model whose part is missing (the program ended before it)
    gets an empty part, which fails."""
    parts = model_parts(output, [bundle.plan.model for bundle in bundles])
    results = {}
    for bundle in bundles:
        part = parts[bundle.plan.model]
        counted = INSTRUCTIONS_LINE.search(part)
        results[bundle.plan.model] = read_selftest(exit_code, ending, part, where,
                                                   reference_checksums(bundle.plan, bundle.vectors),
                                                   int(counted[1]) if counted else None)
    return results
