"""The compiler's stages in order, from a model file to a built and self-tested bundle folder."""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from memory_planner import plan_memory
from memory_planner.api import MemoryPlan
from memory_planner.check import PlanError as PlanCheckError
from memory_planner.check import check_plan
from memory_planner.from_plan import buffers_from_plan
from memory_planner.order import choose_order
from memory_planner.plan import ExecutionPlan
from packager import BundleInputs, TestVectors, write_bundle, write_manifest
from packager.archive import archive
from packager.build import BuildError, SelftestResult, build_bundle, selftest_bundle
from packager.build_files import BuildConfig
from packager.cortex_m import BOARDS, CortexMTarget
from target.profile import Profile
from target.resolve import TargetSpec
from tvm_ext.compile import CompileError, SelftestMismatchError


@dataclass
class FolderResult:
    plan: ExecutionPlan
    memory: MemoryPlan
    library: Path
    archive: Path
    selftest: SelftestResult


def _compiler_version(cc: str) -> str:
    try:
        proc = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return proc.stdout.splitlines()[0] if proc.stdout else cc
    except OSError:
        return f"{cc} (not found)"


def compile_to_folder(model, target_spec: TargetSpec, folder: Path, stage, name: str | None = None) -> FolderResult:
    """Compile `model` (a model file's Path or a Relax IRModule) into `folder` (which exists and is empty).

    `target_spec` is resolved here, once, into the Profile (see `target.resolve_profile`); from then on the
    stages get that Profile object, or the TVM Target registered from it. `stage(name, detail)` times a stage;
    `name` is the bundle's C prefix (default: the model file's stem, or "model" for an IRModule).
    """
    import target

    from_file = isinstance(model, Path)
    file_name = model.name if from_file else f"{name or 'model'} (Relax module)"
    try:
        profile = target.resolve_profile(target_spec)
    except target.ProfileError as err:
        raise CompileError(f"{file_name}: {err}") from err
    if from_file:
        from tvm_ext.model_check import ModelError, check_model

        with stage("check", lambda: f"{file_name}: {len(facts.operators)} operators, {facts.format.value}"):
            try:
                facts = check_model(model)
            except ModelError as err:
                raise CompileError(str(err)) from err

    import tvm

    from tvm_ext.codegen_c import generate_c
    from tvm_ext.extract_plan import PlanError, add_output_copies, extract_plan, unique_kernels
    from tvm_ext.frontend import ModelImportError, from_relax, import_model
    from tvm_ext.lower import lower_to_kernels
    from tvm_ext.reference import ReferenceRuntimeError, run_reference, run_relax_vm, test_inputs
    from tvm_ext.transform import UnsupportedOperatorError

    tvm_target = target.register_profile_with_tvm(profile)
    config = build_config(profile)
    try:
        with stage("import", lambda: f"{file_name}: {len(imported.layers)} layers ({imported.format})"):
            imported = import_model(model, name) if from_file else from_relax(model, name or "model")
        inputs = test_inputs(imported.inputs)
        if not from_file:
            # Now, before any of our passes: they receive the user's own IRModule object, and a Python pass
            # that assigns `mod["main"] = ...` edits that object in place, so a reference run afterwards
            # would check our passes against themselves.
            with stage("reference", lambda: reference):
                expected, reference = run_relax_vm(model, inputs)
        with stage("passes", lambda: f"{len(kernels)} kernels"):
            lowered = lower_to_kernels(imported.mod, tvm_target, imported.path.name)
            lowered = add_output_copies(lowered, imported)
            kernels, c_name_of = unique_kernels(lowered, imported.name)
        with stage("codegen", lambda: f"{len(source.c_text):,} B of C"):
            source = generate_c(kernels, tvm_target)
            plan, constants = extract_plan(lowered, imported, profile, c_name_of, source.signatures)
    except (ModelImportError, PlanError, UnsupportedOperatorError) as err:
        raise CompileError(str(err).strip().splitlines()[-1]) from err

    with stage("planning", lambda: f"arena {memory.arena_bytes:,} B, lower bound {memory.lower_bound:,} B, "
               f"{memory.strategy}{', optimal' if memory.optimal else ''}"):
        order = choose_order(plan)
        plan.calls = [plan.calls[i] for i in order]
        buffers = buffers_from_plan(plan, alignment=profile.alignment_bytes)
        memory = plan_memory(buffers)
        try:
            check_plan(buffers, memory)
        except PlanCheckError as err:
            raise RuntimeError(f"the memory planner produced an invalid plan: {err}") from err
    try:
        target.check_fits(profile, plan.model, memory.arena_bytes, plan.weight_bytes())
    except target.ResourceError as err:
        raise CompileError(str(err)) from err

    if from_file:
        with stage("reference", lambda: reference):
            try:
                expected, reference = run_reference(
                    model, imported.format, inputs, imported.inputs, len(imported.outputs)
                )
            except ReferenceRuntimeError as err:
                raise CompileError(str(err)) from err

    facts = {
        "tools": {
            "tvm_ext": version("tvm-ext-lowpower") if _installed("tvm-ext-lowpower") else "source",
            "apache-tvm": tvm.__version__,
            "python": platform.python_version(),
            "cc": _compiler_version(config.cc),
        },
        "selftest": {"reference": reference, "rtol": 1e-5, "atol_lsb": 0},
        "profile": {"name": profile.name, "source": profile.source, "cpu": profile.cpu, "fpu": profile.fpu,
                    "simd": profile.simd, "int8_rounding": profile.int8_rounding},
        "headroom": target.headroom(profile, memory.arena_bytes, plan.weight_bytes()),
    }
    with stage("packaging", lambda: f"{len(files)} files"):
        bundle_inputs = BundleInputs(
            plan=plan, memory=memory, buffers=buffers, kernels_c=source.c_text, constants=constants,
            vectors=TestVectors(inputs, expected, reference), config=config,
            input_names=[s.name for s in imported.inputs], output_names=[s.name for s in imported.outputs],
            alignment=profile.alignment_bytes, facts=facts,
        )
        files = write_bundle(folder, bundle_inputs)
    if shutil.which(config.cc) is None:
        raise CompileError(f"{file_name}: the {profile.name} profile's C compiler {config.cc} is not installed here")
    with stage("build", lambda: f"lib{plan.model}.a {library.stat().st_size:,} B"):
        try:
            build_bundle(folder, config)
        except BuildError as err:
            raise CompileError(f"{file_name}: the generated bundle does not build: {err}") from err
        library = folder / f"lib{plan.model}.a"
    with stage("self-test", lambda: f"{'PASS' if result.passed else 'FAIL'} on {result.where}" + (
            f", {result.instructions:,} instructions per inference (QEMU -icount, not cycles)"
            if result.instructions else "")):
        result, measured = selftest_bundle(folder, plan.model, config)
    if not result.passed:
        raise SelftestMismatchError(f"{file_name}: {_selftest_failure(result, reference)}")
    facts["selftest"].update(passed=True, where=result.where, max_abs_errors=list(result.max_errors),
                             outputs=[report.facts() for report in result.outputs])
    if measured:
        facts["cortex_m"] = measured
    # bundle_inputs.facts is `facts`: the manifest now carries the build and self-test results too.
    write_manifest(folder, bundle_inputs)
    for leftover in [*folder.glob("*.o"), folder / "selftest", folder / "build-cortex-m"]:
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink(missing_ok=True)
    tarball = archive(folder, plan.model, top=plan.model)
    return FolderResult(plan, memory, library, tarball, result)


def _selftest_failure(result: SelftestResult, reference: str) -> str:
    """A failed self-test in one line: the first mismatch with the reference, or how the program ended."""
    if result.mismatches:
        more = len(result.mismatches) - 1
        return (f"the bundle disagrees with the reference {reference} on {result.where}: "
                + result.mismatches[0].describe() + (f" (and {more} more findings)" if more else ""))
    if result.exit_code == 2:
        return f"the bundle's run call returned an error status on the self-test's input on {result.where}"
    return f"the bundle's self-test on {result.where} ended with exit code {result.exit_code} before comparing"


def build_config(profile) -> BuildConfig:
    """The bundle's compiler and flags, from the target profile."""
    return BuildConfig(
        cc=profile.c_compiler, ar=profile.tool("ar"), cflags=profile.cflags, ldflags=profile.ldflags,
        runs_on_host=profile.qemu_board is None,
        emulated=emulated_target(profile),
    )


def emulated_target(profile: Profile) -> CortexMTarget | None:
    """The core and board that run the profile's self-test, compiled with the profile's own flags; None when
    none of our QEMU boards emulates the profile's core (its self-test then runs on the host)."""
    if profile.qemu_board not in BOARDS:
        return None
    return CortexMTarget(profile.name, BOARDS[profile.qemu_board], profile.hardware_float)


def _installed(dist: str) -> bool:
    try:
        version(dist)
        return True
    except Exception:  # noqa: BLE001 - PackageNotFoundError and metadata errors alike mean "not installed"
        return False
