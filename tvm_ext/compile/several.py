"""Several models in one bundle: `tvm-ext-compile a.tflite b.onnx ... -o OUT`, `tvm_ext.compile([a, b], ...)`.

Each model is compiled as alone (its own prefix, plan, memory plan and kernels: `compile_to_folder` without the
build), then `packager.several` writes the one bundle: every model's run function over one static arena of the
largest model's bytes (one per RAM region, each of the largest model's bytes in it, for a profile that lists
several: the models run one at a time, so they share each region's arena as they share the one), every
constant once (a constant of the same dtype, shape and bytes as an earlier one, of any model, is that one:
`tvm_ext.plan.constant_pool`'s content key), one library, one self-test running every model's cases, one
manifest. The fit check counts the whole bundle: the shared arena, every model's inputs,
outputs and state, the deepest run call's stack, and the flash of all the models' code and weights.

The bundle's own name (`--name`, default `models`) names what the models share (`<name>.h`, `<name>_arena`,
`<NAME>_ARENA_BYTES`, `lib<name>.a`); each model keeps its file's stem as its prefix, as a bundle of that model
alone has it. Options that choose something per model (quantization, patches, layouts, inputs) are refused.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np

from backends import backend_of
from emulator.cycle_model import cycle_estimate
from memory_planner.plan import ExecutionPlan, OperatorSupport, Tensor
from memory_planner.regions import RegionArena, faster_arena_bytes, regions_phrase
from packager.archive import archive
from packager.build import BuildError, build_bundle, run_host_program
from packager.bundle import BundleInputs, bundle_io
from packager.bundle_readme import README_FILE, ReadmeModel, several_readme
from packager.bundle_prefix import c_identifier
from packager.manifest import MANIFEST_VERSION, manifest_json
from packager.report import REPORT_FILE, layer_report
from packager.report_html import REPORT_HTML_FILE, HtmlReport, report_html
from packager.selftest_verdict import SelftestResult
from packager.region_arenas import manifest_entry as region_manifest_entry
from packager.region_arenas import report_markdown as region_report_markdown
from packager.several import (StoredWeight, WeightSharing, arena_bytes, model_parts, read_several_selftest,
                              shared_regions, shared_regions_entry, write_several)
from packager.build_files import BuildConfig
from target.resolve import TargetSpec
from target.resources import FlashSource, FlashUse, Headroom, RamUse
from tvm_ext.compile import BundleBuildError, CompileError, SelftestMismatchError, filled_folder, stage_logger
from tvm_ext.stages import Stage

T = TypeVar("T")

DEFAULT_NAME = "models"
"""The bundle's own prefix when `--name` is not given."""


@dataclass(frozen=True)
class Member:
    """One model of the bundle: its prefix, its file, its compile as alone (plan, memory plan, sources) and its
    file's operators as the model check found them."""

    name: str
    path: Path
    bundle: BundleInputs
    operators: tuple[OperatorSupport, ...]

    @property
    def plan(self) -> ExecutionPlan:
        return self.bundle.plan


@dataclass(frozen=True)
class SeveralBundle:
    """A bundle of several models on disk: its name, members, the shared arena, the weights stored (each
    constant once) and the sum of the models' own weights, the RAM and flash as the fit check counted them, each
    model's self-test verdict (None: not built), the library (None: not built) and the archive; `regions` the
    shared arena of each RAM region when the profile lists several (packager.several.shared_regions; `arena_bytes`
    is then the last region's), () for one."""

    out_dir: Path
    name: str
    members: tuple[Member, ...]
    arena_bytes: int
    weight_bytes: int
    weight_bytes_separately: int
    ram: RamUse
    flash: FlashUse
    selftests: dict[str, SelftestResult] | None
    library: Path | None
    archive: Path
    regions: tuple[RegionArena, ...] = ()


def compile_several(models: list[Path], target: TargetSpec, out: Path, *, name: str | None, force: bool,
                    log: Callable[[str], None], jobs: int, build: bool) -> SeveralBundle:
    """Compile the model files `models` for `target` into one bundle in `out` (see the module's docstring);
    CompileError (one line) for prefixes that collide or a model, or the whole bundle, that does not fit."""
    label = ", ".join(model.name for model in models)
    name = name or DEFAULT_NAME
    prefixes = member_prefixes(models, name)

    def fill(staging: Path) -> SeveralBundle:
        return _fill(staging, models, prefixes, target, name, log, jobs, build)

    out = Path(out)
    result = filled_folder(out, label, None, force, fill)
    return replace(result, out_dir=out, library=None if result.library is None else out / result.library.name,
                   archive=out / result.archive.name)


def refuse_per_model_options(label: str, options: dict[str, object]) -> None:
    """CompileError for the first of `options` (option -> value, None or False when not given) that was given: each
    chooses something for one model (its quantization, inputs, patches, layout, where it compiles), which a bundle
    of several models would have to give per model."""
    for option, value in options.items():
        if value not in (None, False):
            raise CompileError(f"{label}: --{option.replace('_', '-')} chooses for one model, and a bundle of several "
                               "models takes no option per model; compile the models with --target, --name, --jobs, "
                               "--no-build and --force only")


def member_prefixes(models: list[Path], name: str) -> list[str]:
    """Each model's C prefix (its file's stem made an identifier, as alone); CompileError when two are the same,
    or one and the bundle's `name` could share a global symbol (one starts with the other and `_`)."""
    prefixes = [c_identifier(model.stem) for model in models]
    for index, prefix in enumerate(prefixes):
        for other in range(index):
            if prefixes[other] == prefix:
                raise CompileError(f"{models[index].name}: its C prefix {prefix} is also {models[other].name}'s; "
                                   "every model of a bundle needs its own (the file's stem): copy one to a file of "
                                   "another name")
        if prefix == name or prefix.startswith(f"{name}_") or name.startswith(f"{prefix}_"):
            raise CompileError(f"{models[index].name}: its C prefix {prefix} and the bundle's name {name} could "
                               "name the same symbol; give the bundle another name with --name")
    return prefixes


def share_weights(bundles: list[BundleInputs]) -> WeightSharing:
    """The bundle's arrays: every model's constants in model order, each content (dtype, shape, bytes: the
    constant pool's key) stored once, under the symbol of the first model's constant that holds it."""
    from packager.internal_header import weight_symbol
    from tvm_ext.plan.constant_pool import ConstantPool

    pool = ConstantPool()
    first: dict[str, Tensor] = {}
    stored_as: dict[str, dict[str, str]] = {}
    for bundle in bundles:
        plan = bundle.plan
        for tensor in plan.constants():
            symbol = weight_symbol(plan, tensor.name)
            values = np.asarray(bundle.constants[tensor.name]).astype(np.dtype(tensor.dtype), copy=False)
            kept = pool.add(symbol, values, [f"{plan.model}: {tensor.layer}"])
            if kept == symbol:
                first[symbol] = tensor
            else:
                stored_as.setdefault(plan.model, {})[tensor.name] = kept
    stored = tuple(StoredWeight(symbol, tensor, pool.arrays[symbol], pool.readers_label(symbol))
                   for symbol, tensor in first.items())
    return WeightSharing(stored, stored_as)


def _fill(staging: Path, models: list[Path], prefixes: list[str], target: TargetSpec, name: str,
          log: Callable[[str], None], jobs: int, build: bool) -> SeveralBundle:
    """Compile each model as alone (not built), then write, build and self-test the bundle into `staging`."""
    import target as targets

    from tvm_ext.compile.device_ram import planned_ram, refuse_unless_fits, with_measured_flash, with_measured_stack
    from tvm_ext.compile.pipeline import (BundleOptions, build_config, check_tools_installed, compile_to_folder,
                                          untested_reason)

    label = ", ".join(model.name for model in models)
    try:
        profile = targets.resolve_profile(target)
    except targets.ProfileError as err:
        raise CompileError(f"{label}: {err}") from err
    config = replace(build_config(profile), members=tuple(prefixes))
    if profile.units:
        raise CompileError(f"{label}: the {profile.name} profile lists compute units; a bundle of several models "
                           "is built for profiles without them so far")
    if build:
        check_tools_installed(config, profile, label)
    members = []
    with tempfile.TemporaryDirectory(prefix="tvm_ext_models_") as alone:
        for model, prefix in zip(models, prefixes):
            folder = Path(alone) / prefix
            folder.mkdir()
            result = compile_to_folder(model, profile, folder, _member_stage(prefix, log),
                                       BundleOptions(name=prefix, jobs=jobs, build=False))
            members.append(Member(prefix, model, result.bundle, result.operators))
    bundles = [member.bundle for member in members]
    weights = share_weights(bundles)
    emulated = build and config.emulated is not None
    regions = shared_regions(bundles)
    ram = _shared_ram([planned_ram(b.plan, b.memory, profile, emulated, faster_arena_bytes(b.regions))
                       for b in bundles], faster_arena_bytes(regions))
    flash = FlashUse.weights_only(weights.weight_bytes, FlashSource.PENDING if emulated else FlashSource.WEIGHTS_ONLY)
    refuse_unless_fits(profile, name, ram, flash)
    write_several(staging, name, bundles, weights, config)
    selftests, measured = None, {}
    if build:
        stage = stage_logger(log)
        try:
            stage("build", lambda: build_bundle(staging, config, jobs), lambda _: f"lib{name}.a")
        except BuildError as err:
            raise BundleBuildError(f"{label}: the generated bundle does not build: {err}") from err
        selftests, measured = stage("self-test", lambda: _self_test(staging, name, config, bundles),
                                    lambda tested: _describe(tested[0]))
        failed = [(model, result) for model, result in selftests.items() if not result.passed]
        if failed:
            model, result = failed[0]
            raise SelftestMismatchError(f"{label}: {model}'s self-test failed: "
                                        + (result.mismatches[0].describe() if result.mismatches else
                                           str(result.problem)))
        ram = with_measured_stack(ram, measured)
        flash = with_measured_flash(flash, measured)
        refuse_unless_fits(profile, name, ram, flash)
    headroom = targets.Headroom(profile, ram, flash)
    untested = None if build else untested_reason(config)
    for member in members:
        result = None if selftests is None else selftests[member.name]
        report = layer_report(member.plan, None if result is None else result.call_instructions,
                              None if result is None else result.instructions, untested,
                              cycle_estimate(profile.cpu, profile.clock_hz), backend_of(profile).kind_targets(profile),
                              None if config.emulated is None else config.emulated.profiled_model_source("*"))
        (staging / f"{member.name}_{REPORT_FILE}").write_text(
            report.markdown() + region_report_markdown(name, member.bundle.regions, f"{member.name}_"))
        (staging / f"{member.name}_{REPORT_HTML_FILE}").write_text(report_html(HtmlReport(
            report, member.bundle.buffers, member.bundle.memory, headroom, member.operators,
            regions=member.bundle.regions)), encoding="utf-8")
    readme_models = [ReadmeModel(member.plan, member.bundle.memory, *bundle_io(member.bundle),
                                 None if selftests is None else selftests[member.name]) for member in members]
    (staging / README_FILE).write_text(several_readme(
        name, readme_models, config, untested, measured, arena_bytes(bundles), ram.total_bytes,
        weights.weight_bytes, regions))
    (staging / "manifest.json").write_text(manifest_json(_manifest(name, members, weights, headroom, selftests,
                                                                   measured, profile.name, untested, config,
                                                                   regions)))
    for leftover in [*staging.glob("*.o"), staging / "selftest"]:
        leftover.unlink(missing_ok=True)
    if config.emulated is not None:
        shutil.rmtree(staging / config.emulated.build_dir, ignore_errors=True)
    library = staging / f"lib{name}.a" if build else None
    return SeveralBundle(staging, name, tuple(members), arena_bytes(bundles), weights.weight_bytes,
                         sum(b.plan.weight_bytes() for b in bundles), ram, flash, selftests, library,
                         archive(staging, name, top=name), regions)


def _member_stage(prefix: str, log: Callable[[str], None]) -> Stage:
    """The stages of a model's compile as alone, each line after the model's prefix; its build and self-test are
    the bundle's (not logged here: compile_to_folder skips them)."""
    logged = stage_logger(lambda line: log(f"{prefix}: {line}"))

    def stage(name: str, work: Callable[[], T], describe: Callable[[T], str]) -> T:
        return work() if name in ("build", "self-test") else logged(name, work, describe)

    return stage


def _shared_ram(rams: list[RamUse], faster_bytes: int = 0) -> RamUse:
    """The RAM of the models whose own RAM is `rams` (device_ram.planned_ram) in one bundle: one arena of the
    largest (in the last RAM region, and `faster_bytes`, the shared arenas of the faster regions of a profile that
    lists several: packager.several.shared_regions), every model's inputs, outputs and state, the deepest stack
    (one model runs at a time)."""
    last = max(r.arena_bytes - r.faster_arena_bytes for r in rams)
    bounds = [r.stack_bound for r in rams if r.stack_bound is not None]
    return RamUse(last + faster_bytes, sum(r.input_bytes for r in rams),
                  sum(r.output_bytes for r in rams), sum(r.state_bytes for r in rams),
                  max(r.stack_bytes for r in rams), rams[0].stack_source, faster_bytes,
                  max(bounds, key=lambda bound: bound.bytes, default=None))


def _self_test(folder: Path, name: str, config: BuildConfig, bundles: list[BundleInputs]
               ) -> tuple[dict[str, SelftestResult], dict[str, Any]]:
    """Run the bundle's one self-test where the profile says, and judge each model's part of it; on an emulated
    board, once every model passed, each model's calls are counted by the profiling build (their instructions
    in `call_instructions`, for its report.md)."""
    if config.emulated is None:
        code, ending, output = run_host_program(folder)
        return read_several_selftest(code, ending, output, "host", bundles), {}
    run = config.emulated.run(folder, name, members=config.members)
    results = read_several_selftest(run.exit_status, run.ending, run.stdout, run.where, bundles)
    profile = config.emulated.call_profile_output(folder) if all(r.passed for r in results.values()) else None
    if profile is not None:  # each model's calls, from its part of the profiling build's output
        from emulator.profile import read_call_profile

        parts = model_parts(profile, list(results))
        results = {model: replace(result, call_instructions=read_call_profile(parts[model]).instructions)
                   for model, result in results.items()}
    return results, run.measurements


def _describe(results: dict[str, SelftestResult]) -> str:
    return "; ".join(f"{model} {'PASS' if result.passed else 'FAIL'} on {result.where}, {result.cases} cases"
                     + (f", {result.instructions:,} instructions per inference" if result.instructions else "")
                     for model, result in results.items())


def _manifest(name: str, members: list[Member], weights: WeightSharing, headroom: Headroom,
              selftests: dict[str, SelftestResult] | None, measured: dict[str, Any], profile: str,
              untested: str | None, config: BuildConfig, regions: tuple[RegionArena, ...] = ()) -> dict[str, Any]:
    """manifest.json of the bundle: its models (each one's arena, its lower bound, weights, state, self-test and,
    with `regions`, its `memory_regions` as alone), the shared arena (with `regions`: the shared arena of each RAM
    region, packager.several.shared_regions), the weights stored, the headroom and the emulated board's
    measurements (under its runner's `manifest_key`, as a bundle of one model has them)."""
    models = []
    for member in members:
        plan, memory = member.plan, member.bundle.memory
        entry: dict[str, Any] = {
            "model": member.name, "source": plan.source,
            "arena": {"bytes": memory.arena_bytes, "lower_bound_bytes": memory.lower_bound,
                      "strategy": memory.strategy, "optimal": memory.optimal},
            "weight_bytes": plan.weight_bytes(),
            "weights_stored_by_other_models": len(weights.stored_as.get(member.name, {})),
            "state_bytes": sum(tensor.nbytes for tensor in plan.states()),
            "inputs": plan.inputs, "outputs": plan.outputs, "calls": len(plan.calls),
            "kernels": sorted({call.kernel for call in plan.calls}),
        }
        if member.bundle.regions:
            entry["memory_regions"] = region_manifest_entry(plan, member.bundle.regions)
        if selftests is None:
            entry["selftest"] = {"passed": None, "untested": untested}
        else:
            result = selftests[member.name]
            entry["selftest"] = {"passed": result.passed, "where": result.where, "cases": result.cases,
                                 "reference": member.bundle.vectors.reference,
                                 "instructions_per_inference": result.instructions,
                                 "outputs": [report.facts() for report in result.reports]}
        models.append(entry)
    return {
        "manifest_version": MANIFEST_VERSION,
        "bundle": name,
        "target": profile,
        "models": models,
        "arena": {"bytes": max(model["arena"]["bytes"] for model in models), "shared": True,
                  **({"region": regions[-1].region} if regions else {}),
                  "note": "one static arena of the largest model's bytes; the run functions are neither "
                          "reentrant nor concurrent"},
        **({"memory_regions": shared_regions_entry(name, regions, [m.bundle for m in members])} if regions else {}),
        "weight_bytes": weights.weight_bytes,
        "weight_bytes_separately": sum(model["weight_bytes"] for model in models),
        "headroom": headroom.manifest_entry(),
        **({config.emulated.manifest_key: measured} if measured else {}),
    }


def summary_line(bundle: SeveralBundle) -> str:
    """The compile's summary line of a bundle of several models."""
    verdict = "untested (--no-build)" if bundle.selftests is None else "self-test " + (
        "PASS" if all(result.passed for result in bundle.selftests.values()) else "FAIL")
    arenas = ", ".join(f"{m.name} {m.bundle.memory.arena_bytes:,} B" for m in bundle.members)
    flash = f"flash {bundle.flash.total_bytes:,} B ({bundle.flash.parts()}), " if bundle.flash.measured else ""
    if bundle.regions:
        arenas += f"; RAM regions {regions_phrase(bundle.regions)}"
    return (f"[tvm_ext] {bundle.name}: {len(bundle.members)} models, shared arena {bundle.arena_bytes:,} B ({arenas}), "
            f"total RAM {bundle.ram.total_bytes:,} B ({bundle.ram.parts()}), weights {bundle.weight_bytes:,} B "
            f"(separately {bundle.weight_bytes_separately:,} B), {flash}{verdict} -> {bundle.out_dir}")

