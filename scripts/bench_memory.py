"""Benchmark the memory planner on every shared model against TFLite Micro's arena (not a test).

    python scripts/bench_memory.py [--models ../shared/models] [--target lowpower] [--only vww_96_int8 ...]
        [--max-extra-macs 0.15] [--candidates 3] [--no-patches] [--no-m0plus]

For each .tflite model under `--models` (mlperf_tiny, tflm and zoo), in one run: compile it with `tvm_ext.compile`
(which orders the calls and plans the arena with `memory_planner`), without and with `--io-in-arena`, and
print, in bytes,

- the liveness bound of the call order (no arena can be smaller) and our arena, with the model's inputs and
  outputs in the caller's buffers (the default bundle);
- total RAM with the I/O outside: everything one inference holds on the device, as the fit check counts it
  (`target.RamUse`): our arena + the input and output bytes + the state + the run call's stack (measured on
  the emulated board for a Cortex-M target, else counted: the profile's `stack_bound_bytes` + the largest kernel's
  stack arrays, `target.StackBound`);
- total RAM with `--io-in-arena` (the inputs and outputs among the arena's buffers: the arena, state and
  stack are all of it), and that plan's liveness bound;
- TFLite Micro's arena (`TFLM_ARENA_BYTES`), which holds the inputs and outputs too (not the stack), and
  whether our arena with `--io-in-arena` (which holds them too) is below it;
- both bundles' self-tests (bit-identical with the reference; on the emulated board for a Cortex-M target);
- whether the model fits cortex-m0plus (32 KB SRAM, 256 KB flash), all of its RAM counted with the
  stack measured on the emulated board, and its flash with the code measured there (weights + code + data):
  "yes (total RAM[, the patch grid])" or the refusal's excess; compiled for that profile with `--patches auto`
  (the compiler's own choice: patches only when layer by layer does not fit) and, when that is refused and
  the model takes it, again with `--input-rows` too ("yes with --input-rows"); the column is left out with
  `--no-m0plus`;
- patch-based execution (issue 31, MCUNetV2; tvm_ext.compile.patches), from real compiles of `--target`
  (`--no-build`: the planned arena is all these columns need): among the grids whose plan (the cut
  `--patches NxM` takes for the grid) adds at most `--max-extra-macs` of the model's MACs, the
  `--candidates` of smallest estimated arena (tvm_ext.patch_geometry's cost model) are compiled with
  `--patches NxM`, and the one of smallest planned arena is shown: its arena, grid, cut layer and extra MACs
  in percent, its arena over TFLM's (which holds the I/O too, ours not), and its arena + I/O + state (the
  stack is measured only by a build, so left out); streamed bands (`--patches streamN`, no extra MACs) are among
  the candidates: the `--candidates` band counts of smallest estimate; these memory-first compiles take the kernels
  whose scratch sets the arena in their forms without it (tvm_ext.compile.scratch_forms), the default bundle not;
- the same with `--input-rows` for a model of one image input and one output (grids of one column whose bands
  do not read every input row): the input is not held, only its bands, in the arena; "saves" is how much less
  arena + I/O + state that is than the patch-based plan above.

`--only NAME [NAME ...]` selects models by file stem (names apart or joined by commas, as in bench_speed.py:
scripts/model_selection.py). A model that does not compile gets its one-line error instead of numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# TFLite Micro's arena_used_bytes() (bytes, 32-bit pointers: planned tensors, inputs and outputs included,
# plus its persistent bookkeeping) measured on the emulated Cortex-M4 (mps2-an386, arm-none-eabi-gcc 12.2).
# Source: /work/shared/docs/cortex-m-under-qemu.md, "TFLite Micro measured on this emulated core", column
# "arena (B)", and for the zoo /work/shared/docs/zoo-under-qemu.md, column "arena_used bytes". A model missing
# here has no published figure (kws_ref_model_float32: TFLM refuses hybrid models; keyword_scrambled,
# simple_add_model: not measured).
TFLM_ARENA_BYTES: dict[str, int] = {
    "hello_world_int8": 676,
    "ad01_int8": 2_260,
    "kws_ref_model": 22_772,
    "str_ww_ref_model": 15_252,
    "pretrainedResnet_quant": 54_340,
    "vww_96_int8": 100_660,
    "person_detect": 82_292,
    "micro_speech_quantized": 6_788,
    "keyword_scrambled_8bit": 8_052,
    "hello_world_float": 736,
    "ad01_fp32": 4_528,
    "pretrainedResnet": 201_760,
    "vww_96_float": 321_808,
    # The speed zoo's (/work/shared/docs/zoo-under-qemu.md, column "arena_used bytes": the same
    # arena_used_bytes() on the same emulated Cortex-M4, TFLM with its CMSIS-NN kernels).
    "efficientnet_lite_w030_112_int8": 248_484,
    "kws_gru_40x16_int8": 154_452,
    "kws_lstm_40x16_int8": 10_484,
    "mobilenet_v2_050_64_int8": 149_908,
    "mobilenet_v3s_min_050_80_int8": 86_548,
    "tcn_kws_100x32_int8": 39_780,
    "vit_tiny_16_int8": 46_836,
    "yolo_tiny_80_int8": 163_236,
}
COLUMNS = ("model", "liveness bound", "our arena", "total RAM, I/O outside", "liveness bound, I/O in arena",
           "total RAM, --io-in-arena", "TFLM arena", "--io-in-arena below TFLM", "self-tests (default, in arena)")
PATCH_COLUMNS = ("arena patch-based (plan, extra MACs)", "patch-based / TFLM arena",
                 "arena + I/O + state, patch-based", "arena --input-rows (plan, extra MACs)",
                 "arena + I/O + state, --input-rows (saves)")
M0PLUS_COLUMN = "fits cortex-m0plus"


@dataclass(frozen=True)
class Compiled:
    """A patch plan as compiled and planned: its grid, cut layer, planned arena and arena + I/O + state
    (bytes; the stack left out: not measured without a build), extra MACs and the model's MACs layer by layer."""

    grid: tuple[int, int]
    cut_layer: str
    arena_bytes: int
    ram_bytes: int
    extra_macs: int
    model_macs: int
    streamed: bool = False

    @property
    def extra_fraction(self) -> float:
        return self.extra_macs / self.model_macs if self.model_macs else 0.0

    def cell(self) -> str:
        plan = f"{self.grid[0]} streamed bands" if self.streamed else f"{self.grid[0]}x{self.grid[1]}"
        return (f"{self.arena_bytes:,} ({plan} up to {self.cut_layer}, "
                f"+{100 * self.extra_fraction:.1f} %)")


def smallest_within(compiled: list[Compiled], max_extra: float) -> Compiled | None:
    """The plan of smallest planned arena (then fewest extra MACs) among `compiled` whose extra MACs are at
    most `max_extra` of the model's; None when none is."""
    within = [c for c in compiled if c.extra_fraction <= max_extra]
    return min(within, key=lambda c: (c.arena_bytes, c.extra_macs), default=None)


def candidate_grids(func, model_macs: int, max_extra: float, count: int, rows: bool) -> list[tuple[int, int]]:
    """The grids to compile: for each grid up to MAX_GRID x MAX_GRID, the plan `--patches NxM` takes
    (tvm_ext.compile.patches.plan_for_grid: its cut of smallest estimated arena), kept when its extra MACs are at
    most `max_extra` of `model_macs` (and, with `rows`, when a row-wise input takes it: one column, no band
    reading every input row); the `count` of smallest estimated arena (then fewest extra MACs)."""
    from tvm_ext.compile.patches import MAX_GRID, plan_for_grid, takes_rows

    plans = []
    for grid in ((r, c) for r in range(1, MAX_GRID + 1) for c in range(1, (1 if rows else MAX_GRID) + 1)):
        plan = None if grid == (1, 1) else plan_for_grid(func, grid)
        if plan is not None and plan.extra_macs <= max_extra * model_macs and (not rows or takes_rows(func, plan)):
            plans.append(plan)
    return [p.grid for p in sorted(plans, key=lambda p: (p.arena_bytes, p.extra_macs))[:count]]


def candidate_streams(plans: list, count: int) -> list:
    """The streamed plans to compile (`--patches streamN`) among a model's `plans` (tvm_ext.compile.patches.plans_of,
    smallest estimated arena first): the `count` band counts whose best plan has the smallest estimated arena."""
    from tvm_ext.compile.patches import StreamRequest

    bands: list[int] = []
    for plan in plans:
        if plan.streamed and plan.grid[0] not in bands:
            bands.append(plan.grid[0])
    return [StreamRequest(n) for n in bands[:count]]


def manifest_patches(bundle) -> dict | None:
    """The manifest's "patches" entry of a compiled bundle (None: layer by layer)."""
    return json.loads((bundle.out_dir / "manifest.json").read_text()).get("patches")


def compile_grid(model: Path, target: str, scratch: Path, grid, rows: bool) -> Compiled:
    """`model` compiled (not built) with `--patches NxM` (a grid) or `streamN` (a StreamRequest) (and
    `--input-rows`), as a Compiled."""
    from tvm_ext.compile import compile

    suffix = ("_" + (f"{grid[0]}x{grid[1]}" if isinstance(grid, tuple) else str(grid))) + ("_rows" if rows else "")
    bundle = compile(model, target, scratch / f"{model.stem}{suffix}", force=True, build=False, patches=grid,
                     input_rows=rows)
    entry = manifest_patches(bundle)
    ram = bundle.ram
    extra = entry["extra_macs"]
    return Compiled(tuple(entry["grid"]), entry["cut_layer"], bundle.arena_bytes, ram.total_bytes - ram.stack_bytes,
                    extra, bundle.plan.total_macs() - extra, "streamed_bands" in entry)


def patch_cells(model: Path, target: str, scratch: Path, layer_by_layer: tuple[int, int], tflm: int | None,
                max_extra: float, count: int) -> tuple[str, ...]:
    """The PATCH_COLUMNS cells of `model` (see the module's docstring); `layer_by_layer` its (arena bytes, MACs)
    layer by layer: an arena not below it is marked so."""
    arena, model_macs = layer_by_layer
    from tvm_ext.compile import CompileError
    from tvm_ext.compile.patches import plans_of
    from tvm_ext.frontend import import_model

    imported = import_model(model)
    func = imported.mod["main"]
    plans = plans_of(func)
    if not plans:
        return ("- (no chain of windowed NHWC stages from an input)", "-", "-", "-", "-")
    best: dict[bool, Compiled | None] = {}
    errors: dict[bool, str] = {}
    for rows in (False, True):
        if rows and (len(imported.inputs), len(imported.outputs)) != (1, 1):  # what --input-rows takes
            errors[rows] = "- (not one input and one output)"
            continue
        compiled = []
        streams = [] if rows else candidate_streams(plans, count)
        for grid in candidate_grids(func, model_macs, max_extra, count, rows) + streams:
            try:
                compiled.append(compile_grid(model, target, scratch, grid, rows))
            except CompileError as err:
                errors[rows] = f"error: {err}"
        best[rows] = smallest_within(compiled, max_extra)
        if best[rows] is None and rows not in errors:
            errors[rows] = f"- (no plan within +{max_extra:.0%} MACs)"
    plain, banded = best.get(False), best.get(True)
    cells = (plain.cell() + (" not below layer by layer" if plain.arena_bytes >= arena else ""),
             "-" if tflm is None else f"{plain.arena_bytes / tflm:.3f}x",
             f"{plain.ram_bytes:,}") if plain else (errors[False], "-", "-")
    if banded is None:
        return cells + (errors[True], "-")
    saved = "" if plain is None else f" ({saving(plain.ram_bytes - banded.ram_bytes)})"
    return cells + (banded.cell(), f"{banded.ram_bytes:,}{saved}")


def saving(delta: int) -> str:
    """`delta` bytes fewer as "saves N", a negative one as "costs N"."""
    return f"saves {delta:,}" if delta >= 0 else f"costs {-delta:,}"


def fits_m0plus(model: Path, scratch: Path) -> str:
    """"yes (<total RAM> B[, patch plan])" when the model compiles with `--patches auto` and passes its
    self-test on cortex-m0plus (all of its RAM counted, the stack measured on the emulated board); when refused,
    the same with `--input-rows` ("yes with --input-rows ..."); else "no: " and each excess the last refusal
    names (SRAM, flash), or the error line."""
    from tvm_ext.compile import CompileError, DoesNotFitError, compile

    verdict = ""
    for rows in (False, True):
        try:
            bundle = compile(model, "cortex-m0plus", scratch / f"{model.stem}_m0plus", force=True, patches="auto",
                             input_rows=rows)
        except DoesNotFitError as err:
            verdict = "no: " + ", ".join(f"{o.memory} {o.excess_bytes:,} B over" for o in err.overruns)
            continue
        except CompileError as err:
            return verdict or f"error: {err}"
        entry = manifest_patches(bundle)
        plan = "" if entry is None else f", {entry['grid'][0]}x{entry['grid'][1]} patches"
        return f"yes{' with --input-rows' if rows else ''} ({bundle.total_ram_bytes:,} B{plan})"
    return verdict


def bench(model: Path, target: str, scratch: Path, m0plus: bool, patches: tuple[float, int] | None) -> str:
    """One table row for `model`; `patches` (max extra MACs, candidates) adds the PATCH_COLUMNS."""
    from tvm_ext.compile import CompileError, compile

    try:
        # layer by layer (the compiler's default, auto, would patch a model that does not fit)
        default = compile(model, target, scratch / model.stem, force=True, patches="off")
        inside = compile(model, target, scratch / f"{model.stem}_io_in_arena", force=True, io_in_arena=True,
                         patches="off")
    except CompileError as err:
        return f"| {model.stem} | error: {err} |"
    tflm = TFLM_ARENA_BYTES.get(model.stem)
    verdict = "no TFLM figure" if tflm is None else ("yes" if inside.arena_bytes < tflm else "NO")
    selftests = ", ".join(f"{'PASS' if b.selftest.passed else 'FAIL'} ({b.selftest.where})" for b in (default, inside))
    cells: tuple = (model.stem, default.memory.lower_bound, default.memory.arena_bytes, default.total_ram_bytes,
                    inside.memory.lower_bound, inside.total_ram_bytes, "-" if tflm is None else tflm, verdict,
                    selftests)
    if patches is not None:
        cells += patch_cells(model, target, scratch, (default.arena_bytes, default.plan.total_macs()), tflm,
                             *patches)
    if m0plus:
        cells += (fits_m0plus(model, scratch),)
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_models = Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models"))
    parser.add_argument("--models", type=Path, default=default_models)
    from model_selection import add_only_option, selected_models

    add_only_option(parser)
    parser.add_argument("--target", default="lowpower")
    parser.add_argument("--max-extra-macs", type=float, default=0.15,
                        help="extra MACs a patch plan may add, a fraction of the model's (default 0.15)")
    parser.add_argument("--candidates", type=int, default=3,
                        help="patch plans compiled per model and input mode, smallest estimates first (default 3)")
    parser.add_argument("--no-patches", action="store_true", help="leave out the patch-based columns")
    parser.add_argument("--no-m0plus", action="store_true", help=f"leave out the column {M0PLUS_COLUMN!r}")
    args = parser.parse_args()
    try:
        models = selected_models(args.models, args.only)
    except ValueError as err:
        print(err)
        return 2
    if not 0 <= args.max_extra_macs or args.candidates < 1:
        print("--max-extra-macs takes a fraction from 0, --candidates a count from 1")
        return 2
    columns = (*COLUMNS, *(() if args.no_patches else PATCH_COLUMNS), *(() if args.no_m0plus else (M0PLUS_COLUMN,)))
    print(f"target {args.target}; bytes; TFLM arena: /work/shared/docs/cortex-m-under-qemu.md and zoo-under-qemu.md; "
          f"patch plans: at most +{args.max_extra_macs:.0%} MACs, {args.candidates} compiled per model and input mode")
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    patches = None if args.no_patches else (args.max_extra_macs, args.candidates)
    with tempfile.TemporaryDirectory() as scratch:
        for model in models:
            print(bench(model, args.target, Path(scratch), not args.no_m0plus, patches), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
