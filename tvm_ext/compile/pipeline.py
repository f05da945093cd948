"""The compiler's stages in order, from a model file to a built and self-tested bundle folder.

Each stage is a function from earlier stages' results (small frozen records: Checked, Imported, Lowered,
Generated, Planned, Referenced, Packaged, Built, Tested) to its own; `compile_to_folder` runs each through
the one `stage(name, work, describe)` wrapper, which times it and logs one line, and only chains them.
The model file is read once, by the check; TVM is imported only after the check passed.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import shutil
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from backends import backend_of
from emulator.cycle_model import cycle_estimate
from memory_planner.regions import RegionArena, faster_arena_bytes, plan_regions, regions_phrase
from memory_planner.api import Buffer, MemoryPlan
from memory_planner.check import InvalidMemoryPlanError
from memory_planner.from_plan import buffers_from_plan
from memory_planner.order import choose_order
from memory_planner.plan import DTYPE_BYTES, ExecutionPlan, OperatorSupport
from packager import BundleFacts, BundleInputs, TestCase, TestVectors, finish_bundle, write_bundle
from packager.build import BuildError, build_bundle, library_variables, selftest_bundle
from packager.build_files import BuildConfig, write_makefile
from packager.bundle import library_sources, weights_block
from packager.selftest_verdict import SelftestResult
from packager.unit_libraries import UnitBuild
from target.profile import Profile
from target.resolve import TargetSpec
from target.resources import FlashUse, RamUse
from tvm_ext.processes.command_process import interrupts_held_back
from tvm_ext.compile import (BundleBuildError, CompileError, DoesNotFitError, SelftestMismatchError, early_objects,
                             tvm_ext_version)
from tvm_ext.compile.device_ram import (check_ram_for_io, planned_flash, planned_ram, refuse_unless_fits,
                                        with_measured_flash, with_measured_stack)
from tvm_ext.compile.early_objects import EarlyObjects
from tvm_ext.compile.patches import (AUTO, AutoSearch, PatchFacts, cut_of, grid_patch_facts,
                                     patch_plan_for_grid, refuse_unless_weights_fit, rows_request, takes_rows,
                                     with_rows)
from tvm_ext.plan.row_input import fetch_order_kept
from tvm_ext.stages import Stage

if TYPE_CHECKING:
    import tvm
    from tvm import tirx

    from tvm_ext.codegen.codegen_c import KernelSource
    from tvm_ext.codegen.subgraph_codegen import SubgraphSources
    from tvm_ext.frontend import ImportedModel, IoQuantization, TensorSpec
    from tvm_ext.model_check import ModelFacts, ParsedModel
    from tvm_ext.compile.patches import PatchRequest
    from tvm_ext.compile.scratch_forms import ScratchChoice
    from tvm_ext.patch_geometry import PatchCut
    from tvm_ext.transform.layout_per_subgraph import LayoutChoice
    from tvm_ext.plan.unit_assignment import UnitChoice
    from tvm_ext.reference.outputs import RunningReference

# The layout `--patches auto` searches its plans in too when the layouts chosen per subgraph give none that fits
# (tvm_ext.transform.layout_per_subgraph.LAYOUTS: a window chain is of NHWC stages).
NHWC = "NHWC"


@dataclass(frozen=True)
class FolderResult:
    """A compiled bundle folder: `library` and `selftest` are None when it was not built (`BundleOptions.build`)."""

    plan: ExecutionPlan
    memory: MemoryPlan
    ram: RamUse  # everything one inference holds in SRAM, as the fit check counted it
    flash: FlashUse  # what the bundle puts in flash, as the fit check counted it
    library: Path | None
    archive: Path
    selftest: SelftestResult | None
    build: BuildConfig  # how the bundle is compiled (its flags, its emulated board if any)
    bundle: BundleInputs | None = None  # what the packager wrote it from (a bundle of several models reuses it)
    operators: tuple[OperatorSupport, ...] = ()  # the model file's operators as its check found them


@dataclass(frozen=True)
class Checked:
    """A model file that passed the model check: the file parsed (its only read and only parse, which the
    import converts) and the check's facts."""

    path: Path
    parsed: ParsedModel
    facts: ModelFacts


@dataclass(frozen=True)
class Imported:
    """The model in Relax, and the self-test's input cases (each one array per model input; case 0 first, at
    most as many as `packager.selftest.case_count` allows for the model's I/O bytes)."""

    model: ImportedModel
    cases: list[list[np.ndarray]]


@dataclass(frozen=True)
class Referenced:
    """The reference runtime's outputs for each of the self-test's input cases, and the runtime's name and
    version."""

    expected: list[list[np.ndarray]]
    runtime: str


@dataclass(frozen=True)
class Lowered:
    """The module after our passes, its kernels by C name, each PrimFunc's C name, and the data layout the
    passes chose for each subgraph of the imported model (tvm_ext.transform.layout_per_subgraph)."""

    mod: tvm.IRModule
    kernels: dict[str, tirx.PrimFunc]
    c_name_of: dict[str, str]
    layouts: tuple[LayoutChoice, ...] = ()


@dataclass(frozen=True)
class Generated:
    """The kernels' C, and the execution plan (calls in the module's order) with the weights it names."""

    source: KernelSource
    plan: ExecutionPlan
    constants: dict[str, np.ndarray]


@dataclass(frozen=True)
class Planned:
    """The plan with its calls in the chosen order, the arena's buffers and their checked offsets;
    `io_in_arena`: the model's inputs and outputs are among the buffers (`buffers_from_plan`). With a profile of
    several RAM regions, `regions` holds every region's arena, fastest first (memory_planner.regions), and
    `buffers` and `memory` are the last region's (the arena the run functions take); () with one region."""

    plan: ExecutionPlan
    buffers: list[Buffer]
    memory: MemoryPlan
    io_in_arena: bool = False
    regions: tuple[RegionArena, ...] = ()

    def ram(self, profile: Profile, stack_measured_later: bool) -> RamUse:
        """The RAM one inference holds (device_ram.planned_ram), every region's arena counted."""
        return planned_ram(self.plan, self.memory, profile, stack_measured_later,
                           faster_arena_bytes(self.regions))


@dataclass(frozen=True)
class Packaged:
    """What the packager wrote the bundle's files from, and the files."""

    bundle: BundleInputs
    files: list[Path]


@dataclass(frozen=True)
class Built:
    """The static library built with the profile's compiler."""

    library: Path


@dataclass(frozen=True)
class Tested:
    """The self-test's verdict, and the emulated board's measurements ({} on the host)."""

    result: SelftestResult
    measured: dict[str, Any]


@dataclass(frozen=True)
class BundleOptions:
    """The choices of one compile besides the model and the target.

    `name` is the bundle's C prefix (default: the model file's stem, or "model" for an IRModule); `jobs` the
    number of processes that generate the kernels' C and of compilers that build the bundle (the bundle is the
    same for any number); `quantization` the manifest's record of how a float model was quantized into the
    model compiled (tvm_ext.compile.quantized; None: it was not); `io_in_arena` plans the model's inputs and
    outputs into the arena (the bundle's header then gives their places and the run functions take no I/O
    arguments); `layout` ("NCHW" or "NHWC") puts every subgraph of a float model into that data layout, None
    lets the passes choose per subgraph (tvm_ext.transform.layout_per_subgraph); `io` the quantization and
    layout of a Relax module's inputs and outputs (tvm_ext.quantize's integer module; None: unknown); `build`
    False writes the sources, build files and manifest without building or self-testing them (nor asking for the
    profile's tools): the bundle is marked untested, for a machine with the profile's toolchain to build;
    `selftest_input` one array per model input (in the model file's types) that the self-test embeds as its first
    case instead of the seeded noise (quantized with `io` where the module's input is an integer one);
    `operators` the operator kinds of the model file a module was made from (a quantized float model's: report.html
    lists them; a model file's own check gives them otherwise); `patches` "off", "auto" or a grid (rows,
    columns): whether the first stages run patch by patch (tvm_ext.compile.patches); `input_rows` gives the
    model input row by row (tvm_ext.plan.row_input): the first stages run in bands of rows (an n x 1 grid; off
    becomes auto), and the bundle holds bands of the input in its arena, never the whole input; `keep_cross_build`
    a folder (not existing yet) the emulated self-test's cross build moves into instead of being deleted
    (packager.finish_bundle; None: deleted).
    """

    name: str | None = None
    jobs: int = 1
    quantization: dict | None = None
    io_in_arena: bool = False
    layout: str | None = None
    io: IoQuantization | None = None
    build: bool = True
    selftest_input: tuple[np.ndarray, ...] | None = None
    operators: tuple[OperatorSupport, ...] = ()
    patches: PatchRequest = "off"
    input_rows: bool = False
    keep_cross_build: Path | None = None


def compile_to_folder(model, target_spec: TargetSpec, folder: Path, stage: Stage,
                      options: BundleOptions = BundleOptions(), checked: Checked | None = None) -> FolderResult:
    """Compile `model` (a model file's Path or a Relax IRModule) into `folder` (which exists and is empty), as
    `options` say. `checked` is the model file's check when the caller made it already (quantize's auto
    keeping the float model): the file is then neither read nor parsed again.

    `target_spec` is resolved here, once, into the Profile (see `target.resolve_profile`); from then on the
    stages get that Profile object, or the TVM Target registered from it. `stage` times and logs each stage.
    A model file's reference runtime runs in a process of its own from the import on, beside the passes and
    the code generation (`tvm_ext.reference.outputs.RunningReference`).
    """
    import target

    from_file = isinstance(model, Path)
    file_name = model.name if from_file else f"{options.name or 'model'} (Relax module)"
    try:
        profile = target.resolve_profile(target_spec)
    except target.ProfileError as err:
        raise CompileError(f"{file_name}: {err}") from err
    config = build_config(profile)
    if options.build:
        check_tools_installed(config, profile, file_name)
    if from_file:
        given = checked
        checked = stage("check", lambda: check(model) if given is None else given, lambda c: (
            f"{file_name}: {len(c.facts.operators)} operators, {c.facts.format.value}"))
        facts = checked.facts
        check_ram_for_io(file_name, profile, 0 if options.input_rows else sum(t.nbytes for t in facts.inputs),
                         sum(t.nbytes for t in facts.outputs), facts.state_bytes, options.io_in_arena)

    tvm_target = target.register_profile_with_tvm(profile)
    from tvm_ext.codegen.subgraph_codegen import SubgraphSources  # imports TVM: once the target is registered

    kept = SubgraphSources()  # each subgraph's C, for a code generation of the same kernels again (planning's)
    with ExitStack() as running:
        try:
            imported = stage("import", lambda: import_(model, checked, options.name, options.io), lambda i: (
                f"{file_name}: {len(i.model.layers)} layers ({i.model.format})"))
            imported = with_selftest_input(imported, options.selftest_input, options.io)
            if checked is None:
                check_ram_for_io(file_name, profile, tensors_bytes(imported.model.inputs),
                                 tensors_bytes(imported.model.outputs), 0, options.io_in_arena)
                # Now, before any of our passes: they receive the user's own IRModule object, and a Python pass
                # that assigns `mod["main"] = ...` edits that object in place, so a reference run afterwards
                # would check our passes against themselves.
                check_lowered_module(imported, profile)
                referenced = stage("reference", lambda: reference_relax(model, imported), _runtime)
            else:
                # Its process runs beside the passes and the code generation; its result (or its
                # complaint) is taken at the "reference" stage below, in the stages' order. No interrupt
                # between its start and `running` knowing it.
                with interrupts_held_back():
                    reference = running.enter_context(start_reference_file(checked, imported))
            func = main_for_patches(imported, tvm_target, options.layout)  # the function a cut is of
            io_counts = (len(imported.model.inputs), len(imported.model.outputs))
            request = rows_request(func, options.patches, file_name, io_counts, options.io_in_arena) \
                if options.input_rows else options.patches
            grid_plan = patch_plan_for_grid(func, request, file_name)
            if options.input_rows and grid_plan is not None and not takes_rows(func, grid_plan):
                raise CompileError(f"{file_name}: --input-rows: a band of --patches {grid_plan.grid[0]}x1 reads every "
                                   "input row; choose more bands or auto")
            lowered = stage("passes", lambda: passes(imported, profile, tvm_target, options.layout,
                                                     None if grid_plan is None else cut_of(grid_plan)),
                            _describe_kernels)
            generated = stage("codegen", lambda: codegen(lowered, imported, profile, tvm_target, options.jobs, kept),
                              lambda gen: f"{len(gen.source.c_text):,} B of C")
            if options.input_rows and grid_plan is not None:
                generated = _with_row_input(generated, func, cut_of(grid_plan), file_name)
        except model_refusals() as err:
            # Their message is the whole line (model, operator, layer): a line break in it can only come from a
            # name in the model, which CompileError shows escaped within the line.
            raise CompileError(str(err).strip()) from err
        early = EarlyStarts(folder, running, profile, config,
                            options.build and options.jobs > 1 and early_objects.eligible(config))
        early.start(generated)
        # the layer-by-layer plan may run convolutions backwards (auto, the default, too: its patch plans are tried
        # only when that plan does not fit, and compile forwards). Kernels take their forms with less scratch (more
        # instructions) only where memory is the constraint: in a plan the user asked for (--patches NxM or
        # streamN), or under auto when layer by layer does not fit (then before the patch plans, which add MACs)
        reversible = len(profile.memory_regions) <= 1
        forward, forward_lowered = generated, lowered

        def regenerate(marked: Lowered) -> Generated:
            again = codegen(marked, imported, profile, tvm_target, options.jobs, kept)
            rows = options.input_rows and grid_plan is not None
            return _with_row_input(again, func, cut_of(grid_plan), file_name) if rows else again

        lowered, generated, planned, scratch_choice = stage(
            "planning", lambda: planning_scratch_forms(lowered, generated, regenerate, profile, options.io_in_arena,
                                                       reversible, grid_plan is not None),
            lambda result: _describe_memory(result[2]) + _describe_reversed(result[0]) + result[3].phrase())
        if generated is not forward:  # the early objects are the forward kernels'
            early.restart(generated)
        stack_later = options.build and config.emulated is not None
        ram = planned.ram(profile, stack_later)
        patched: PatchFacts | None = None
        search: AutoSearch | None = None  # auto's search, while its plans are tried
        layered: tuple[Planned, RamUse] | None = None  # auto's layer-by-layer plan and RAM, its forms taken instead

        def compile_with(cut: PatchCut | None, layout: str | None = options.layout,
                         chain_func=func) -> tuple[Lowered, Generated, Planned, RamUse]:
            """The plan of `cut` (None: layer by layer) of `chain_func` (main as the patch pass sees it in `layout`),
            compiled and planned."""
            with_cut = passes(imported, profile, tvm_target, layout, cut)
            generated_cut = codegen(with_cut, imported, profile, tvm_target, options.jobs)
            if options.input_rows:
                generated_cut = _with_row_input(generated_cut, chain_func, cut, file_name)
            # a plan whose weights alone exceed the flash is refused before its planning (which places no weight)
            refuse_unless_weights_fit(profile, generated_cut.plan.model, planned_flash(generated_cut.plan, stack_later))
            planned_cut = planning(generated_cut.plan, profile, options.io_in_arena)
            return with_cut, generated_cut, planned_cut, planned_cut.ram(profile, stack_later)

        def in_nhwc() -> tuple[Any, Callable[[PatchCut | None], tuple[Lowered, Generated, Planned, RamUse]]]:
            """Main as the patch pass sees it with every layer in NHWC, and `compile_with` in that layout."""
            nhwc = main_for_patches(imported, tvm_target, NHWC)
            return nhwc, lambda cut: compile_with(cut, NHWC, nhwc)

        # auto searches NHWC too when the layouts the passes chose (no --layout) put a subgraph in another
        nhwc_search = in_nhwc if options.layout is None and any(
            choice.layout != NHWC for choice in forward_lowered.layouts) else None

        if grid_plan is not None:
            patched = stage("patches", lambda: grid_patch_facts(func, grid_plan, planned), PatchFacts.line)
        elif request == AUTO and not options.input_rows and ram.total_bytes > profile.sram_bytes:
            before = (planned, ram)
            lowered, generated, planned, ram, scratch_choice = stage(
                "scratch forms", lambda: _fitting_scratch_forms(forward_lowered, forward, (lowered, generated, planned),
                                                                regenerate, profile, options.io_in_arena, reversible,
                                                                stack_later),
                lambda result: _describe_scratch_forms(result[4], profile))
            if scratch_choice.forms:
                layered = before
                early.restart(generated)  # the early objects are the kernels' with scratch
        if grid_plan is None and request == AUTO and (ram.total_bytes > profile.sram_bytes or options.input_rows):
            early.discard()  # the plans' kernels replace these: their objects are not the bundle's
            scratch_choice = scratch_choice.none()  # the patch plans' kernels keep their scratch
            search = AutoSearch(func, profile, planned, ram, compile_with, options.input_rows, nhwc_search)
            lowered, generated, planned, ram, patched = _auto_stage(stage, search, search.next_fitting)
            early.start(generated)
        referenced_once: list[Any] = [] if checked is not None else [referenced]
        while True:
            units = subgraph_units(planned.plan, profile, file_name)
            flash = planned_flash(planned.plan, stack_later)
            try:
                refuse_unless_fits(profile, planned.plan.model, ram, flash)
                if not referenced_once:
                    referenced_once.append(stage("reference", lambda: reference_file(reference, imported),
                                                 _runtime))
                referenced = referenced_once[0]
                packaged = stage("packaging", lambda: packaging(folder, imported, generated, planned, referenced,
                                                                profile, config, units),
                                 lambda p: f"{len(p.files)} files")
                # The model file's operators as its check found them (a Relax module made from none: its calls
                # show them).
                operators = checked.facts.operator_support() if checked is not None else options.operators
                if not options.build:
                    untested = untested_reason(config)
                    facts = bundle_facts(profile, config, planned, ram, flash, None, units, options.quantization,
                                         lowered.layouts, untested, operators, patched,
                                         scratch_choice.manifest_entry())
                    log_skipped(stage, untested)
                    return FolderResult(planned.plan, planned.memory, ram, flash, None,
                                        finish_bundle(folder, packaged.bundle, facts), None, config, packaged.bundle,
                                        operators)
                built = stage("build", lambda: build(folder, planned.plan, config, file_name, options.jobs,
                                                     early.current),
                              lambda b: f"lib{planned.plan.model}.a {b.library.stat().st_size:,} B")
                tested = stage("self-test", lambda: self_test(folder, packaged.bundle), _describe_selftest)
                if not tested.result.passed:
                    raise SelftestMismatchError(f"{file_name}: {_selftest_failure(tested.result, referenced.runtime)}")
                ram = with_measured_stack(ram, tested.measured)
                flash = with_measured_flash(flash, tested.measured)
                refuse_unless_fits(profile, planned.plan.model, ram, flash)
                break
            except DoesNotFitError as err:
                if search is None and layered is not None:
                    # The forms' plan does not fit a limit counted only now (its measured stack or code): auto's
                    # patch plans, searched from layer by layer, every kernel with its scratch.
                    early.discard()
                    scratch_choice = scratch_choice.none()
                    search = AutoSearch(func, profile, *layered, compile_with, options.input_rows, nhwc_search)
                    lowered, generated, planned, ram, patched = _auto_stage(stage, search, search.next_fitting)
                    early.start(generated)
                    continue
                if search is None:
                    raise
                # The plan does not fit a limit counted only now (its measured stack or code): the search goes on
                # with the next plan.
                refused = (patched, ram, flash, err)
                early.discard()
                lowered, generated, planned, ram, patched = _auto_stage(stage, search, lambda: search.refused(*refused))
                early.start(generated)
    facts = bundle_facts(profile, config, planned, ram, flash, tested, units, options.quantization, lowered.layouts,
                         operators=operators, patches=patched, scratch_forms=scratch_choice.manifest_entry())
    tarball = finish_bundle(folder, packaged.bundle, facts, options.keep_cross_build)
    return FolderResult(planned.plan, planned.memory, ram, flash, built.library, tarball, tested.result, config,
                        packaged.bundle, operators)


def _fitting_scratch_forms(lowered: Lowered, generated: Generated, reversed_: tuple[Lowered, Generated, Planned],
                           regenerate: Callable[[Lowered], Generated], profile: Profile, io_in_arena: bool,
                           one_arena: bool, stack_later: bool) -> tuple[Lowered, Generated, Planned, RamUse,
                                                                         ScratchChoice]:
    """`auto` once the layer-by-layer plan `reversed_` does not fit `profile`'s SRAM: `with_scratch_forms` of it,
    taken only when the forms make its RAM fit (no extra MACs, so before the patch plans); else `reversed_` with
    no form taken. With the plan's RAM (`Planned.ram`, `stack_later` as there) and the choice."""
    from tvm_ext.compile.scratch_forms import ScratchChoice

    formed = with_scratch_forms(lowered, generated, reversed_, regenerate, profile, io_in_arena, one_arena)
    ram = formed[2].ram(profile, stack_later)
    if formed[3].forms and ram.total_bytes <= profile.sram_bytes:
        return (*formed[:3], ram, formed[3])
    planned = reversed_[2]
    return (*reversed_, planned.ram(profile, stack_later),
            ScratchChoice.kept(planned.memory.arena_bytes) if formed[3].forms else formed[3])


def _describe_scratch_forms(choice: ScratchChoice, profile: Profile) -> str:
    """The "scratch forms" stage's line: the forms taken (ScratchChoice.summary) or why none."""
    if choice.forms:
        return f"layer by layer fits {profile.name}'s SRAM with {choice.summary()}"
    return f"no kernel without scratch makes layer by layer fit {profile.name}'s SRAM"


def _with_row_input(generated: Generated, func, cut: PatchCut, file_name: str) -> Generated:
    """`generated` (compiled with the n x 1 `cut`) taking its input row by row (tvm_ext.compile.patches.with_rows),
    without the kernels of the input's copies the fetches replace (no call is left to them)."""
    plan = with_rows(generated.plan, func, cut, file_name)
    dropped = {call.kernel for call in generated.plan.calls} - {call.kernel for call in plan.calls}
    source = generated.source
    source = replace(source, definitions={n: d for n, d in source.definitions.items() if n not in dropped},
                     signatures={n: s for n, s in source.signatures.items() if n not in dropped})
    return Generated(source, plan, generated.constants)


def _auto_stage(stage: Stage, search: AutoSearch, find: Callable[[], tuple]) -> tuple:
    """`auto`'s next plan (`find`: `search`'s next_fitting or refused) as the "patches" stage, its line the
    plan's (AutoSearch.line); a model refusal of the passes, the code generation or the planning as a
    CompileError."""
    try:
        return stage("patches", find, lambda found: search.line(found[4]))
    except model_refusals() as err:
        raise CompileError(str(err).strip()) from err


@dataclass
class EarlyStarts:
    """The early objects (tvm_ext.compile.early_objects) of the kernels the compile currently takes, across the
    forms and plans it tries into the staging `folder`: `enabled` when the compile makes them at all (a build with
    --jobs 2 or more on an eligible profile); their makes end with `running` at the latest."""

    folder: Path
    running: ExitStack
    profile: Profile
    config: BuildConfig
    enabled: bool
    current: EarlyObjects | None = None  # the makes of the kernels taken now, for the build to settle

    def start(self, generated: Generated) -> None:
        """Write `generated`'s order-free files into the folder (empty: at the start, or after `discard`) and
        start their makes, when `enabled`; else nothing."""
        if self.enabled:
            with interrupts_held_back():  # the makes started are ended with `running`
                self.current = self.running.enter_context(early_objects.compiling_early(
                    self.folder, early_sources(generated, self.profile, self.config),
                    library_variables(self.config)))

    def discard(self) -> None:
        """Drop what the compile wrote for kernels it no longer takes. Afterwards no early make runs (those
        still running were ended and every one waited for), `current` is None (the build settles no object
        of other kernels), and the folder is empty (it stays): the early sources and objects and whatever a
        refused plan's packaging and build wrote are deleted. Safe when nothing was started. The caller calls
        `start` with the kernels it takes instead, once it has them."""
        if self.current is not None:
            self.current.stop()
            self.current = None
        _empty_folder(self.folder)

    def restart(self, generated: Generated) -> None:
        """`discard`, then `start` for `generated`: the compile took other kernels than those started."""
        self.discard()
        self.start(generated)


def _empty_folder(folder: Path) -> None:
    """Remove what a refused plan's packaging and build wrote into `folder` (which stays, empty)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def model_refusals() -> tuple[type[Exception], ...]:
    """The errors by which the import, the passes, the code generation and the planning refuse a model (each
    message the line naming the model, operator or layer): the compile raises each as a CompileError."""
    from tvm_ext.frontend import ModelImportError
    from tvm_ext.plan.extract_plan import PlanError
    from tvm_ext.transform import (DataDependentLoopError, IndexOutOfRangeError, OversizedTensorError,
                                   UnsupportedOperatorError)

    return (ModelImportError, PlanError, UnsupportedOperatorError, OversizedTensorError, IndexOutOfRangeError,
            DataDependentLoopError)


def untested_reason(config: BuildConfig) -> str:
    """Why a bundle compiled with `BundleOptions.build` False is untested, and what to run: one line of ours."""
    command, _ = config.selftest_make
    return (f"compiled with --no-build: neither built nor self-tested here; build and self-test it with "
            f"`{command}` where {config.cc} is installed")


def log_skipped(stage: Stage, untested: str) -> None:
    """The build's and the self-test's lines of a compile with `BundleOptions.build` False."""
    stage("build", lambda: None, lambda _: "skipped (--no-build)")
    stage("self-test", lambda: None, lambda _: f"skipped: {untested}")


def check_tools_installed(config: BuildConfig, profile: Profile, file_name: str) -> None:
    """CompileError unless every program the build runs (`BuildConfig.commands`) is installed here: checked
    before any make runs, the early one included, so that no make is started for a build that cannot work."""
    for role, command in config.commands().items():
        if shutil.which(command) is None:
            raise CompileError(f"{file_name}: the {profile.name} profile's {role} {command} is not installed here")


def check(path: Path, refuse_unsupported: bool = True) -> Checked:
    """Read and parse the model file once and check it (no TVM); CompileError with the check's one line. With
    `refuse_unsupported` False, unsupported operators are in the facts instead (`check_model`)."""
    from tvm_ext.model_check import ModelError, check_parsed, parse_model, read_model_file

    try:
        parsed = parse_model(path, read_model_file(path))
        return Checked(path, parsed, check_parsed(parsed, refuse_unsupported))
    except ModelError as err:
        raise CompileError(str(err)) from err


def tensors_bytes(specs: list[TensorSpec]) -> int:
    """Bytes of the data of the tensors `specs` together."""
    return sum(math.prod(spec.shape) * DTYPE_BYTES[spec.dtype] for spec in specs)


def import_(model, checked: Checked | None, name: str | None, io: IoQuantization | None = None) -> Imported:
    """The checked file's bytes in the format the check found (or the user's Relax module, its inputs' and
    outputs' quantization and layout `io`) as Relax, and the
    self-test's input. A Relax module, which no model check sees, is held to the check's size limits here
    (each tensor's, and the inputs' and outputs' bytes the self-test embeds), before its reference run would
    compute a tensor that fits no target on the host."""
    from tvm_ext.frontend import from_relax, import_parsed
    from tvm_ext.model_check.limits import io_problem
    from packager.selftest import case_count
    from tvm_ext.reference.input_grids import quantized_input_grids
    from tvm_ext.reference.outputs import DIVIDING_OPERATORS, selftest_cases
    from tvm_ext.transform import RefuseOversizedTensors
    from tvm_ext.transform.index_guards import index_input_limits

    if checked is None:
        imported = from_relax(model, name or "model", io)
        RefuseOversizedTensors(imported.path.name)(imported.mod)
        problem = io_problem(tensors_bytes(imported.inputs) + tensors_bytes(imported.outputs))
        if problem is not None:
            raise CompileError(f"{imported.path.name}: {problem}")
        divides = False
    else:
        imported = import_parsed(checked.parsed, name)
        divides = any(operator.op in DIVIDING_OPERATORS for operator in checked.facts.operators)
    limits = index_input_limits(imported.mod["main"])  # index inputs drawn inside their axes
    grids = quantized_input_grids(imported.mod["main"])  # float inputs drawn over their quantization too
    count = case_count(tensors_bytes(imported.inputs) + tensors_bytes(imported.outputs))
    return Imported(imported, selftest_cases(imported.inputs, count, nonzero_integers=divides, index_limits=limits,
                                             grids=grids))


def with_selftest_input(imported: Imported, sample: tuple[np.ndarray, ...] | None,
                        io: IoQuantization | None) -> Imported:
    """`imported` with the user's `sample` as the self-test's first case (None: unchanged): each array in its
    input's shape and type, a float array quantized with `io`'s parameters where the input is an integer one."""
    from tvm_ext.validate import quantize

    if sample is None:
        return imported
    case = []
    for k, (array, spec) in enumerate(zip(sample, imported.model.inputs, strict=True)):
        quant = None if io is None else io.inputs[k]
        if array.dtype.kind == "f" and np.dtype(spec.dtype).kind in "iu" and quant is not None:
            array = quantize(array, quant, spec.dtype)
        case.append(np.ascontiguousarray(array.reshape(spec.shape).astype(spec.dtype)))
    return replace(imported, cases=[case, *imported.cases[1:]])


def check_lowered_module(imported: Imported, profile: Profile) -> None:
    """CompileError, before any work, for a module that went through `tvm_ext.pipeline` and cannot be compiled
    as it is: lowered for another profile, or with kernels calling a backend's C helpers, which the self-test's
    host reference (TVM's Relax VM) cannot run. A module not lowered yet passes."""
    from tvm_ext.lower import lowered_for
    from tvm_ext.tir.helper_calls import helper_calls_in

    mod, name = imported.model.mod, imported.model.path.name
    profile_name = lowered_for(mod)
    if profile_name is None:
        return
    if profile_name != profile.name:
        raise CompileError(f"{name}: the module went through tvm_ext.pipeline for profile {profile_name}, "
                           f"not for {profile.name}")
    helpers = helper_calls_in(mod)
    if helpers:
        raise CompileError(f"{name}: the module went through tvm_ext.pipeline for {profile_name} and its kernels "
                           f"call the backend's C helpers ({', '.join(helpers)}), which the self-test's host "
                           "reference (TVM's Relax VM) cannot run: give tvm_ext.compile the module from before "
                           "tvm_ext.pipeline (the bundle is the same)")


def reference_relax(mod: tvm.IRModule, imported: Imported) -> Referenced:
    """The user's Relax module run by TVM's Relax VM on the host: the reference for a module from no file."""
    from tvm_ext.reference.outputs import run_relax_vm

    return Referenced(*run_relax_vm(mod, imported.cases))


def start_reference_file(checked: Checked, imported: Imported) -> RunningReference:
    """The model file's reference runtime started on the self-test's input cases, in a process of its own (which
    reads the file by its path): awaited by `reference_file`, stopped when the caller's `with` block ends."""
    from tvm_ext.model_check.dilated_convolutions import with_run_time_batches
    from tvm_ext.model_check.facts import ModelFormat
    from tvm_ext.reference.outputs import ReferenceCopy, runs_on_tflite_micro, start_reference

    model = imported.model
    parsed = checked.parsed
    edited = with_run_time_batches(parsed.data, parsed.root) if parsed.format is ModelFormat.TFLITE else None
    copy = None if edited is None else ReferenceCopy(edited, "the model with its SPACE_TO_BATCH_ND batches written in")
    return start_reference(checked.path, checked.facts.format.value, imported.cases, model.inputs,
                           len(model.outputs), runs_on_tflite_micro(checked.facts), copy)


def reference_file(running: RunningReference, imported: Imported) -> Referenced:
    """The reference runtime's outputs per case, once its process ended, 0 where TFLite Micro leaves an output
    unwritten (`ImportedModel.first_run_unwritten`: its values there are whatever its arena held, the bundle
    writes 0; every case is a first run, from a fresh interpreter and after the bundle's reset); CompileError
    with its one line."""
    from tvm_ext.reference.outputs import ReferenceRuntimeError

    try:
        expected, runtime = running.result()
    except ReferenceRuntimeError as err:
        raise CompileError(str(err)) from err
    unwritten = imported.model.first_run_unwritten
    return Referenced([[np.where(unwritten[k].reshape(e.shape), np.zeros((), e.dtype), e) if k in unwritten else e
                        for k, e in enumerate(outputs)] for outputs in expected], runtime)


def main_for_patches(imported: Imported, tvm_target: tvm.target.Target, layout: str | None = None):
    """The imported model's main as `passes` (same `layout`) hands it to the patch pass
    (tvm_ext.lower.main_for_patches): the function whose window chain the patch plans are of; a layout refusal
    as CompileError."""
    from tvm_ext.lower import main_for_patches as lowered_main
    from tvm_ext.transform.layout_per_subgraph import LayoutError

    try:
        return lowered_main(imported.model.mod, tvm_target, imported.model.path.name, layout)
    except LayoutError as err:
        raise CompileError(str(err)) from err


def passes(imported: Imported, profile: Profile, tvm_target: tvm.target.Target, layout: str | None = None,
           patches: PatchCut | None = None) -> Lowered:
    """Our passes (tvm_ext.lower.pipeline, unless the module was given already through them for this profile):
    the model in the data layout chosen per subgraph (`layout` forces one), its first stages patch by patch
    (`patches`; None: layer by layer), as fused, scheduled kernels, each once under its C name, and main's
    bindings split into the profile's subgraphs."""
    from tvm_ext.plan.extract_plan import add_output_copies, unique_kernels
    from tvm_ext.lower import layout_choices, lowered_for, pipeline
    from tvm_ext.transform import PartitionSubgraphs
    from tvm_ext.transform.layout_per_subgraph import LayoutError
    from tvm_ext.transform.share_constant_variants import share_constant_variants
    from backends.schedules import kernel_schedules_of

    model = imported.model
    lowered = model.mod
    if lowered_for(lowered) is None:
        try:
            lowered = pipeline(tvm_target, model.path.name, layout, patches)(lowered)
        except LayoutError as err:
            raise CompileError(str(err)) from err
    choices = layout_choices(lowered)
    lowered = share_constant_variants(PartitionSubgraphs(profile)(add_output_copies(lowered, model)),
                                      kernel_schedules_of(profile).kernel_code)
    kernels, c_name_of = unique_kernels(lowered, model.name)
    return Lowered(lowered, kernels, c_name_of, choices)


def codegen(lowered: Lowered, imported: Imported, profile: Profile, tvm_target: tvm.target.Target,
            jobs: int, kept: SubgraphSources | None = None) -> Generated:
    """The kernels' C from TVM's C code generator, per subgraph on `jobs` worker processes (those `kept` has
    from an earlier code generation of the compile taken from it), and the execution plan of the lowered
    module."""
    from tvm_ext.plan.extract_plan import extract_plan
    from tvm_ext.codegen.index_checks import UncheckedIndexError
    from tvm_ext.codegen.subgraph_codegen import generate_kernels, subgraph_kernels

    subgraphs = subgraph_kernels(lowered.mod, lowered.kernels, lowered.c_name_of)
    try:
        source = generate_kernels(subgraphs, tvm_target, imported.model.name, jobs, kept)
    except UncheckedIndexError as err:
        raise CompileError(f"{imported.model.path.name}: {_operators_of(lowered, err.kernel)} is refused: "
                           f"{err.problems[0]}") from err
    backend = backend_of(profile)
    source = replace(source, helper_libraries=backend.bundle_helper_libraries(profile, source.helper_libraries),
                     requantize_roundings=backend.bundle_roundings(source.requantize_roundings))
    plan, constants = extract_plan(lowered.mod, imported.model, profile, lowered.c_name_of, source.signatures)
    return Generated(source, plan, constants)


def _operators_of(lowered: Lowered, kernel: str) -> str:
    """"operator <kind> at layer <labels>" for the model operators the calls of `kernel` (a C name) implement."""
    import tvm
    from tvm import relax

    from tvm_ext.layers import Layers, bindings_of, operator_phrase

    main = lowered.mod["main"]
    layers, records = Layers.of(main), []
    for position, binding in enumerate(bindings_of(main)):
        value = binding.value
        if (isinstance(value, relax.Call) and isinstance(value.args[0], tvm.ir.GlobalVar)
                and lowered.c_name_of.get(value.args[0].name_hint) == kernel):
            records += [r for r in layers.of_binding(position) if r not in records]
    return operator_phrase(records) if records else f"the kernel {kernel}"


def planning(plan: ExecutionPlan, profile: Profile, io_in_arena: bool = False, checked: bool = True) -> Planned:
    """The call order with the lowest peak, as a new plan, and its arena placement (one arena per RAM region of
    the profile: `memory_planner.regions.plan_regions`), checked independently unless not `checked` (a trial,
    `trial_memory`); with `io_in_arena` the model's inputs and outputs are placed in the arena too."""
    order = choose_order(plan)
    ordered = replace(plan, calls=[plan.calls[i] for i in order])
    if not fetch_order_kept(ordered):
        raise RuntimeError("the call order fetches the row-wise input's bands out of their order")
    buffers = buffers_from_plan(ordered, alignment=profile.alignment_bytes, io_in_arena=io_in_arena)
    try:
        arenas = plan_regions(ordered, buffers, [(region.name, region.bytes) for region in profile.memory_regions],
                              checked)
    except InvalidMemoryPlanError as err:
        raise RuntimeError(f"the memory planner produced an invalid plan: {err}") from err
    main = arenas[-1]
    return Planned(ordered, list(main.buffers), main.memory, io_in_arena, tuple(arenas) if len(arenas) > 1 else ())


def trial_memory(plan: ExecutionPlan, profile: Profile, io_in_arena: bool = False) -> MemoryPlan:
    """`planning`'s memory plan of `plan` without the independent checker: for the trials whose arena only
    informs a choice (which convolutions run backwards, which kernels take their forms without scratch); the
    plan the compile takes is planned again, and checked, by `planning`."""
    return planning(plan, profile, io_in_arena, checked=False).memory


def planning_reversed(lowered: Lowered, generated: Generated, regenerate: Callable[[Lowered], Generated],
                      profile: Profile, io_in_arena: bool, reversible: bool) -> tuple[Lowered, Generated, Planned]:
    """`planning` of `generated`, and, when `reversible` and its arena is above its liveness bound, of the same
    model with the convolutions `tvm_ext.compile.reversed_loops` chooses run backwards (their kernels marked
    in `lowered` and generated again by `regenerate`); that one only when its planned arena is smaller. When it
    is not, the choice is made again without the kernels chosen (`reversed_loops.ESTIMATE_RETRIES` times)."""
    from tvm_ext.codegen.reverse_outer_loop import marked_reversed
    from tvm_ext.compile.reversed_loops import ESTIMATE_RETRIES, kernels_to_reverse

    planned = planning(generated.plan, profile, io_in_arena)
    if not reversible:
        return lowered, generated, planned
    refused: frozenset[str] = frozenset()
    for _ in range(1 + ESTIMATE_RETRIES):
        chosen = kernels_to_reverse(generated.plan, planned.memory,
                                    lambda plan: trial_memory(plan, profile, io_in_arena).arena_bytes, refused)
        if not chosen:
            break
        marked = replace(lowered, kernels={name: marked_reversed(func) if name in chosen else func
                                           for name, func in lowered.kernels.items()})
        backwards = regenerate(marked)
        planned_backwards = planning(backwards.plan, profile, io_in_arena)
        if planned_backwards.memory.arena_bytes < planned.memory.arena_bytes:
            return marked, backwards, planned_backwards
        refused |= chosen
    return lowered, generated, planned


def planning_scratch_forms(lowered: Lowered, generated: Generated, regenerate: Callable[[Lowered], Generated],
                           profile: Profile, io_in_arena: bool, one_arena: bool,
                           take_forms: bool) -> tuple[Lowered, Generated, Planned, ScratchChoice]:
    """`planning_reversed` of `generated` (the forward kernels of `lowered`), with `with_scratch_forms` when
    `take_forms` (memory is the constraint: a memory-first plan the user asked for), else with no form taken."""
    from tvm_ext.compile.scratch_forms import ScratchChoice

    reversed_ = planning_reversed(lowered, generated, regenerate, profile, io_in_arena, one_arena)
    if take_forms:
        return with_scratch_forms(lowered, generated, reversed_, regenerate, profile, io_in_arena, one_arena)
    return (*reversed_, ScratchChoice.kept(reversed_[2].memory.arena_bytes))


def with_scratch_forms(lowered: Lowered, generated: Generated, reversed_: tuple[Lowered, Generated, Planned],
                       regenerate: Callable[[Lowered], Generated], profile: Profile, io_in_arena: bool,
                       one_arena: bool) -> tuple[Lowered, Generated, Planned, ScratchChoice]:
    """`reversed_` (`planning_reversed` of `generated`, the forward kernels of `lowered`), or, when `one_arena`
    and a kernel's scratch makes its arena larger, `planning_reversed` of the same model with the kernels
    `tvm_ext.compile.scratch_forms` chooses in their forms with less scratch (the profile's
    `KernelSchedules.scratch_free_form`; generated again by `regenerate`, which convolutions run backwards chosen
    again for them): that one only when its planned arena is smaller; with the choice (its kernels and arenas,
    for the planning line). The forms cost instructions: the compile takes them only where memory is the
    constraint (a memory-first `--patches` request, or auto when layer by layer does not fit)."""
    from backends.schedules import kernel_schedules_of
    from tvm_ext.compile.reversed_loops import kernels_to_reverse, with_reversed_streams
    from tvm_ext.compile.scratch_forms import ScratchChoice, fewest_forms, forms_to_take

    planned = reversed_[2]
    unchanged = (*reversed_, ScratchChoice.kept(planned.memory.arena_bytes))
    form_of = kernel_schedules_of(profile).scratch_free_form
    if form_of is None or not one_arena:
        return unchanged
    forms = {name: form for name, form in ((name, form_of(func)) for name, func in lowered.kernels.items())
             if form is not None}
    chosen = forms_to_take(planned.plan, planned.buffers, planned.memory, forms,
                           lambda plan: trial_memory(plan, profile, io_in_arena)) if forms else {}
    if not chosen:
        return unchanged

    def arena_reversed(plan: ExecutionPlan) -> int:
        """The arena of the forward `plan` with the convolutions `kernels_to_reverse` chooses run backwards."""
        memory = trial_memory(plan, profile, io_in_arena)
        flipped = kernels_to_reverse(plan, memory, lambda p: trial_memory(p, profile, io_in_arena).arena_bytes)
        return trial_memory(with_reversed_streams(plan, flipped), profile, io_in_arena).arena_bytes \
            if flipped else memory.arena_bytes

    chosen = fewest_forms(generated.plan, chosen, arena_reversed)
    changed = replace(lowered, kernels={name: chosen[name].func if name in chosen else func
                                        for name, func in lowered.kernels.items()})
    again = planning_reversed(changed, regenerate(changed), regenerate, profile, io_in_arena, one_arena)
    if again[2].memory.arena_bytes >= planned.memory.arena_bytes:
        return unchanged
    return (*again, ScratchChoice.of(generated.plan, chosen, planned.memory.arena_bytes, again[2].memory.arena_bytes))


def packaging(folder: Path, imported: Imported, generated: Generated, planned: Planned, referenced: Referenced,
              profile: Profile, config: BuildConfig, units: list[UnitChoice]) -> Packaged:
    """The bundle's source and build files, written into `folder` (the manifest comes with finish_bundle);
    one kernels file per compute unit when the profile lists units."""
    from tvm_ext.plan.unit_assignment import kernels_by_unit

    by_unit = kernels_by_unit(planned.plan, units, profile.units) if profile.units else {}
    bundle = BundleInputs(
        plan=planned.plan, memory=planned.memory, buffers=planned.buffers, kernels_c=generated.source.c_text,
        kernel_signatures=tuple(generated.source.signatures.values()),
        requantize_roundings=generated.source.requantize_roundings,
        helper_libraries=generated.source.helper_libraries,
        signal_helpers=generated.source.signal_helpers,
        constants=generated.constants,
        vectors=selftest_vectors(imported, referenced, planned.plan, config, profile),
        config=config, input_names=[s.name for s in imported.model.inputs],
        output_names=[s.name for s in imported.model.outputs], alignment=profile.alignment_bytes,
        kernels_c_by_unit={unit: generated.source.c_text_of(names) for unit, names in by_unit.items()},
        io_in_arena=planned.io_in_arena, regions=planned.regions,
    )
    return Packaged(bundle, write_bundle(folder, bundle))


def selftest_vectors(imported: Imported, referenced: Referenced, plan: ExecutionPlan,
                     config: BuildConfig, profile: Profile) -> TestVectors:
    """The cases the self-test embeds: the first `case_count` of those referenced, now that the plan's
    multiply-accumulates are known (fewer cases for a model whose runs would take long where the self-test runs:
    the host when `config` builds it there, BuildConfig.selftest_on_host, else a device or an emulated board, where
    a float MAC on `profile`'s core without an FPU counts as many: packager.selftest.budgeted_macs), but
    for a later case on which
    the reference's float outputs are not finite (`_finite_floats`)."""
    from packager.selftest import CASES_BUDGET_MACS, HOST_CASES_BUDGET_MACS, budgeted_macs, case_count

    io_bytes = tensors_bytes(imported.model.inputs) + tensors_bytes(imported.model.outputs)
    on_host = config.selftest_on_host
    count = case_count(io_bytes, budgeted_macs(plan, soft_float=not on_host and not profile.hardware_float),
                       HOST_CASES_BUDGET_MACS if on_host else CASES_BUDGET_MACS)
    return TestVectors(tuple(TestCase(inputs, expected) for index, (inputs, expected)
                             in enumerate(zip(imported.cases[:count], referenced.expected[:count], strict=True))
                             if index == 0 or _finite_floats(expected)),
                       referenced.runtime)


def _finite_floats(outputs: list[np.ndarray]) -> bool:
    """Whether every float output value is finite. A model that overflows on a case's inputs (a weight of 1e38
    times the extremes case's 1.0) gives inf, -inf, NaN or a finite value by the order of its float sums' terms
    and by fused multiply-adds, not by whether the bundle is right: such a case is not embedded. The first case
    always is, compared as before (the same non-finite class where the reference's is not finite)."""
    return all(o.dtype.kind != "f" or bool(np.isfinite(o).all()) for o in outputs)


def early_sources(generated: Generated, profile: Profile, config: BuildConfig) -> dict[str, str]:
    """The bundle's files that the memory plan does not change (tvm_ext.compile.early_objects), as `packaging`
    writes them for a profile without compute units: the library's sources, the Makefile and, for an emulated
    board, the self-test ELF's build rules (`EmulatedRunner.build_rule_files`, e.g. cortex_m/qemu-test.mk)."""
    model = generated.plan.model
    source = generated.source
    files = {**library_sources(generated.plan, {f"{model}_kernels.c": source.c_text},
                               tuple(source.signatures.values()), source.requantize_roundings, source.helper_libraries,
                               generated.constants, profile.alignment_bytes, source.signal_helpers,
                               sections=len(profile.memory_regions) > 1,
                               block=weights_block(config, len(profile.memory_regions) > 1)),
             "Makefile": write_makefile(model, config)}
    if config.emulated is not None:  # the self-test ELF's rules: the Makefile includes them
        files.update(config.emulated.build_rule_files(model, config))
    return files


def build(folder: Path, plan: ExecutionPlan, config: BuildConfig, file_name: str, jobs: int,
          early: EarlyObjects | None = None) -> Built:
    """lib<model>.a and the self-test program, `jobs` compilers at once, keeping the `early` objects that are
    the build's (EarlyObjects.settle); BundleBuildError (our bug) with the compiler's first error."""
    if early is not None:
        early.settle()
    try:
        build_bundle(folder, config, jobs)
    except BuildError as err:
        raise BundleBuildError(f"{file_name}: the generated bundle does not build: {err}") from err
    return Built(folder / f"lib{plan.model}.a")


def self_test(folder: Path, bundle: BundleInputs) -> Tested:
    """Run the self-test where the profile says (host or emulated board), judged against the reference
    (packager.selftest_verdict); whether a failure stops the compile is the caller's to decide."""
    return Tested(*selftest_bundle(folder, bundle))


def subgraph_units(plan: ExecutionPlan, profile: Profile, file_name: str) -> list[UnitChoice]:
    """Each subgraph's compute unit among the profile's (tvm_ext.plan.unit_assignment); CompileError when none
    runs a subgraph's operators."""
    from tvm_ext.plan.unit_assignment import NoUnitError, assign_units

    if profile.units and backend_of(profile).emulated_runner(profile) is not None:
        raise CompileError(f"{file_name}: the {profile.name} profile lists compute units, which are built for the "
                           "host only so far; give a profile without qemu_board")
    try:
        return assign_units(plan, profile.compute_units)
    except NoUnitError as err:
        raise CompileError(f"{file_name}: the {profile.name} profile's compute units: {err}") from err


def bundle_facts(profile: Profile, config: BuildConfig, planned: Planned, ram: RamUse, flash: FlashUse,
                 tested: Tested | None, units: list[UnitChoice], quantization: dict | None,
                 layouts: tuple[LayoutChoice, ...] = (), untested: str | None = None,
                 operators: tuple[OperatorSupport, ...] = (), patches: PatchFacts | None = None,
                 scratch_forms: dict | None = None) -> BundleFacts:
    """What the manifest records beyond the plans: tool versions, the profile, its headroom (every part of the
    RAM `ram`, and the flash `flash`, which says whether the code was counted), the self-test
    (None: not built, `untested` says why), each subgraph's compute unit and data layout, and how a float model
    was quantized (None: it was not), the model file's operators (`operators`; empty for a Relax module), and the
    patch plan the bundle runs (None: layer by layer)."""
    import target
    import tvm

    return BundleFacts(
        tools={
            "tvm_ext": tvm_ext_version(),
            "apache-tvm": tvm.__version__,
            "python": platform.python_version(),
            "cc": _compiler_version(config.cc),
        },
        profile={"name": profile.name, "source": profile.source, "cpu": profile.cpu, "fpu": profile.fpu,
                 "simd": profile.simd, "int8_rounding": profile.int8_rounding,
                 "subgraph_bytes": profile.subgraph_bytes, "clock_hz": profile.clock_hz,
                 "units": [unit.name for unit in profile.compute_units]},
        headroom=target.Headroom(profile, ram, flash),
        selftest=None if tested is None else tested.result,
        measured={} if tested is None else tested.measured,
        subgraph_units=tuple(dataclasses.asdict(choice) for choice in units),
        quantization=quantization,
        subgraph_layouts=tuple(choice.facts() for choice in layouts),
        untested=untested,
        timing=cycle_estimate(profile.cpu, profile.clock_hz),
        kind_targets=backend_of(profile).kind_targets(profile),
        operators=operators,
        patches=None if patches is None else patches.manifest_entry(),
        scratch_forms=scratch_forms,
    )


def _describe_kernels(lowered: Lowered) -> str:
    from tvm_ext.transform.partition_subgraphs import binding_subgraphs

    return f"{len(lowered.kernels)} kernels, {len(set(binding_subgraphs(lowered.mod['main'])))} subgraphs"


def _runtime(referenced: Referenced) -> str:
    return referenced.runtime


def _describe_memory(planned: Planned) -> str:
    memory = planned.memory
    regions = f"; RAM regions {regions_phrase(planned.regions)}" if planned.regions else ""
    return (f"arena {memory.arena_bytes:,} B, lower bound {memory.lower_bound:,} B, "
            f"{memory.strategy}{', optimal' if memory.optimal else ''}{regions}")


def _describe_reversed(lowered: Lowered) -> str:
    """", N convolution kernels run backwards" when the planning reversed any (planning_reversed), else ""."""
    from tvm_ext.codegen.reverse_outer_loop import REVERSED_ATTR

    count = sum(1 for func in lowered.kernels.values() if func.attrs is not None and REVERSED_ATTR in func.attrs)
    return f", {count} convolution kernel{'s' if count > 1 else ''} run backwards" if count else ""


def _describe_selftest(tested: Tested) -> str:
    result = tested.result
    cases = f"{result.cases} case" + ("" if result.cases == 1 else "s")
    return f"{'PASS' if result.passed else 'FAIL'} on {result.where}, {cases}" + (
        f", {result.instructions:,} instructions per inference (QEMU -icount, not cycles)"
        if result.instructions else "")


def _compiler_version(cc: str) -> str:
    try:
        proc = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return proc.stdout.splitlines()[0] if proc.stdout else cc
    except OSError:
        return f"{cc} (not found)"


def _selftest_failure(result: SelftestResult, reference: str) -> str:
    """A failed self-test in one line: the first mismatch with the reference, or what it did not show."""
    if result.mismatches:
        more = len(result.mismatches) - 1
        return (f"the bundle disagrees with the reference {reference} on {result.where}: "
                + result.mismatches[0].describe() + (f" (and {more} more findings)" if more else ""))
    return f"the bundle's self-test on {result.where} {result.problem}"


def build_config(profile) -> BuildConfig:
    """The bundle's compiler and flags, from the target profile."""
    return BuildConfig(
        cc=profile.c_compiler, ar=profile.tool("ar"), cflags=profile.cflags, ldflags=profile.ldflags,
        runs_on_host=profile.qemu_board is None,
        emulated=backend_of(profile).emulated_runner(profile),
        units=tuple(UnitBuild(unit.name, unit.c_compiler, unit.cflags) for unit in profile.units),
        weights_block=backend_of(profile).weights_block,
    )

