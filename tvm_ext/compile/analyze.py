"""`tvm-ext-compile MODEL --analyze --target X|all`: look at a model before compiling it (nothing built or written).

First the model check (`refuse_unsupported=False`): every operator with whether our compiler supports it, before
the import and the passes; a model with an unsupported operator stops there, listed. Then, per profile: the
fit that needs no compile (the check's weight bytes against the flash, inputs, outputs and state against the
SRAM); then the passes, the code generation and the memory planning as a compile runs them (no reference, no
packaging, no build), giving per kernel call the MACs, weight and activation bytes and an estimated time
(`emulator.instruction_model` x `emulator.cycle_model`, at the profile's clock), and the totals: arena, total
RAM (arena, I/O outside it, state and the profile's stack bound: target.RamUse), flash (the weights stored; the
code needs a build) and whether it fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from emulator.cycle_model import cycle_estimate
from memory_planner.plan import OperatorSupport
from target.profile import Profile
from target.resources import FlashSource, FlashUse, StackBound
from tvm_ext.compile import CompileError, stage_logger

if TYPE_CHECKING:
    from tvm_ext.compile.patches import PatchRequest


@dataclass(frozen=True)
class LayerFigures:
    """One kernel call in execution order: the model operators it implements, its MACs, the weight bytes it
    reads, the activation bytes it reads and writes, and its estimated time (None: no estimate for the core)."""

    step: int
    operators: str
    macs: int
    weight_bytes: int
    activation_bytes: int
    estimated_microseconds: float | None


@dataclass(frozen=True)
class ProfileAnalysis:
    """The model for one profile: `problem` is why it cannot be compiled for it (one line: it does not fit, or a
    layer is refused), with the figures known by then; bytes are bytes, None where not known."""

    profile: Profile
    layers: tuple[LayerFigures, ...] = ()
    macs: int | None = None
    weight_bytes: int | None = None
    activation_bytes: int | None = None
    arena_bytes: int | None = None
    total_ram_bytes: int | None = None
    estimated_microseconds: float | None = None
    problem: str | None = None
    patches: str | None = None  # the patch plan analysed (PatchFacts.line), None: layer by layer
    stack: StackBound | None = None  # the stack counted in total_ram_bytes (device_ram.planned_stack)

    @property
    def fits(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Analysis:
    """The model's operators and, when every one is supported, its analysis per profile asked for."""

    model: str
    operators: tuple[OperatorSupport, ...]
    profiles: tuple[ProfileAnalysis, ...]

    @property
    def supported(self) -> bool:
        return all(row.refusal is None for row in self.operators)


def profiles_named(spec: str) -> list[Profile]:
    """The profiles `--target` names: every built-in one for "all", else the one profile (CompileError when it
    cannot be read: `target.ProfileError`'s line)."""
    import target

    names = target.profile_names() if spec == "all" else (spec,)
    try:
        return [target.resolve_profile(name) for name in names]
    except target.ProfileError as err:
        raise CompileError(f"{err}") from err


def analyze(path: Path, profiles: list[Profile], log: Callable[[str], None] = lambda line: None,
            jobs: int = 1, patches: "PatchRequest" = "off") -> Analysis:
    """The analysis of the model file `path` for `profiles`; `log` receives the stages' lines and, first, one line
    per operator kind. `patches` as a compile takes it (tvm_ext.compile.patches): a grid's plan is analysed, and
    `auto`'s first plan whose planned RAM fits where layer by layer does not (no build: its flash is the
    weights). CompileError (one line) for a file the model check refuses on other grounds than its operators, or
    a grid the model has no chain for."""
    from tvm_ext.compile.patches import patch_plan_for_grid
    from tvm_ext.compile.pipeline import check

    stage = stage_logger(log)
    checked = stage("check", lambda: check(path, refuse_unsupported=False),
                    lambda c: f"{path.name}: {len(c.facts.operators)} operators, "
                              f"{len(c.facts.unsupported)} unsupported")
    operators = checked.facts.operator_support()
    for row in operators:
        log(f"operator   {row.op:<28} x{row.count:<4} "
            f"{'supported' if row.refusal is None else 'UNSUPPORTED: ' + row.refusal}")
    if checked.facts.unsupported:
        return Analysis(path.name, operators, ())
    imported = None
    results = []
    for profile in profiles:
        problem = _problem_before_compile(checked, profile)
        if problem is not None:
            results.append(ProfileAnalysis(profile, weight_bytes=checked.facts.weight_bytes, problem=problem))
            continue
        if imported is None:
            imported = stage("import", lambda: _imported(checked), lambda i: f"{len(i.model.layers)} layers")
            # a grid the model has no chain for, refused once; each profile's plan is of its own layouts' chain
            patch_plan_for_grid(imported.model.mod["main"], patches, path.name)
        results.append(stage(f"{profile.name}",
                             lambda: _profile_analysis(imported, profile, jobs, patches),
                             _describe_profile))
    return Analysis(path.name, operators, tuple(results))


def weights_only(weight_bytes: int) -> FlashUse:
    """The flash --analyze counts: the weights (bytes) alone, nothing being built, and its lines say so."""
    return FlashUse.weights_only(weight_bytes, FlashSource.WEIGHTS_ONLY)


def _problem_before_compile(checked, profile: Profile) -> str | None:
    """Why the model cannot fit `profile` whatever the compile does: its weights exceed the flash, or its inputs,
    outputs and state the SRAM (None: it may fit)."""
    import target

    facts = checked.facts
    try:
        target.check_io_fits(profile, checked.path.name, sum(t.nbytes for t in facts.inputs),
                             sum(t.nbytes for t in facts.outputs), facts.state_bytes, io_in_arena=False)
        target.check_flash_fits(profile, checked.path.name, weights_only(facts.weight_bytes))
    except target.ResourceError as err:
        return str(err)
    return None


def _imported(checked):
    from tvm_ext.compile.pipeline import import_
    from tvm_ext.frontend import ModelImportError

    try:
        return import_(checked.path, checked, None)
    except ModelImportError as err:
        raise CompileError(str(err).strip()) from err


def _profile_analysis(imported, profile: Profile, jobs: int, patches: "PatchRequest") -> ProfileAnalysis:
    """The passes, code generation and memory plan of `imported` for `profile` (patch by patch by the grid or
    bands `patches` names, of the chain in this profile's layouts, or with `auto` by the first plan whose RAM fits
    where layer by layer does not; see `analyze`), and the figures they give; a layer refused for this profile, a
    grid its chain cannot take, or `auto` finding no plan that fits, is its `problem`."""
    import target
    from tvm_ext.compile import DoesNotFitError
    from tvm_ext.compile.patches import AUTO, AutoSearch, cut_of, grid_patch_facts, patch_plan_for_grid
    from tvm_ext.compile.pipeline import codegen, main_for_patches, model_refusals, passes, planning

    try:
        tvm_target = target.register_profile_with_tvm(profile)

        def planned_with(cut):
            """(no lowered module kept, generated, planned, RAM) as AutoSearch's compile_with gives them."""
            generated = codegen(passes(imported, profile, tvm_target, patches=cut), imported, profile, tvm_target,
                                jobs)
            planned = planning(generated.plan, profile)
            # Nothing is built, so the stack is counted (the profile's stack_bound_bytes + the largest kernel's
            # stack arrays: device_ram.planned_stack), as for --no-build.
            return None, generated, planned, planned.ram(profile, stack_measured_later=False)

        func = main_for_patches(imported, tvm_target)  # the function the plans' cuts are of
        grid_plan = patch_plan_for_grid(func, patches, imported.model.path.name)
        _, _, planned, ram = planned_with(None if grid_plan is None else cut_of(grid_plan))
        patched = None if grid_plan is None else grid_patch_facts(func, grid_plan, planned).line()
        if patches == AUTO and ram.total_bytes > profile.sram_bytes:
            _, _, planned, ram, facts = AutoSearch(func, profile, planned, ram, planned_with).next_fitting()
            patched = facts.line()
    except DoesNotFitError as err:
        return ProfileAnalysis(profile, problem=str(err))
    except (*model_refusals(), CompileError) as err:
        return ProfileAnalysis(profile, problem=str(err).strip().splitlines()[-1])
    return _planned_analysis(imported, profile, planned, ram, patched)


def _planned_analysis(imported, profile: Profile, planned, ram, patched: str | None) -> ProfileAnalysis:
    """The figures of `imported`'s plan `planned` for `profile` (its RAM `ram`, its patch plan's line
    `patched`), with the fit check's verdict as the `problem`."""
    import target
    from packager.report import layer_report

    timing = cycle_estimate(profile.cpu, profile.clock_hz)
    report = layer_report(planned.plan, None, None, timing=timing)
    layers = []
    for call in report.calls:
        moved = call.activation_read_bytes + call.activation_written_bytes
        layers.append(LayerFigures(
            call.step, " + ".join(op.kind for op in call.operators) or call.kernel, call.macs, call.weight_bytes, moved,
            report.microseconds_of(call)))
    try:
        target.check_fits(profile, imported.model.path.name, ram, weights_only(planned.plan.weight_bytes()))
        problem = None
    except target.ResourceError as err:
        problem = str(err)
    return ProfileAnalysis(
        profile, tuple(layers), report.total_macs, planned.plan.weight_bytes(),
        sum(buffer.nbytes for buffer in planned.buffers), planned.memory.arena_bytes, ram.total_bytes,
        None if timing is None else sum(layer.estimated_microseconds or 0.0 for layer in layers), problem, patched,
        ram.stack_bound)


def _describe_profile(result: ProfileAnalysis) -> str:
    if result.arena_bytes is None:
        return f"refused: {result.problem}"
    return f"arena {result.arena_bytes:,} B{'' if result.fits else ', does not fit'}"
