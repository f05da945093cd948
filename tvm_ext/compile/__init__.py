"""`tvm_ext.compile`: a model file -> a built, self-tested bundle folder (the Python API of the CLI).

Stages, each timed and reported through `log`: import, passes, codegen, planning, reference, packaging,
build, self-test. The bundle is written into a temporary folder beside `out` and renamed into place only
when it built and its self-test passed: `out` never holds half a bundle, and nothing of the user's in `out`
is deleted without `force` (`tvm_ext.compile.output_folder`).
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

from memory_planner.api import MemoryPlan
from memory_planner.plan import ExecutionPlan
from packager.build import SelftestResult
from packager.build_files import BuildConfig
from printable import printable
from target.resolve import TargetSpec
from target.resources import FlashUse, Overrun, RamUse
from tvm_ext.processes.command_process import interrupts_held_back, outcome_decided

if TYPE_CHECKING:
    import numpy as np

    from tvm_ext.compile.pipeline import Checked, FolderResult
    from tvm_ext.validate import Samples

T = TypeVar("T")


class CompileError(Exception):
    """A failure the user can act on; `str()` is one line naming the model and what is wrong.

    The message is made `printable` here, whoever built it: names from the model, a runtime's or TVM's words
    quoting them, and paths that are not UTF-8 reach no terminal and no second line (a layer named
    "x\\nmodel.tflite: compiled" stays inside the one line about the model given)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


class DoesNotFitError(CompileError):
    """The planned bundle needs more SRAM or flash than its profile has; the line says by how many bytes, and
    `overruns` gives each limit exceeded as data (target.Overrun: SRAM before flash)."""

    def __init__(self, message: str, overruns: tuple[Overrun, ...]) -> None:
        super().__init__(message)
        self.overruns = overruns

    def __reduce__(self):
        """Pickled with its overruns (an exception pickles its `args` alone, the message here)."""
        return type(self), (str(self), self.overruns)


class InternalError(Exception):
    """A bug of tvm_ext, not of the model, found by a check of our own output (the CLI exits with 3); `str()` is
    one line naming the model and what went wrong."""


class SelftestMismatchError(InternalError):
    """The bundle built but disagrees with the reference runtime (or its run call failed) on the embedded
    input: a bug of tvm_ext, not of the model. `str()` is one line naming the model, the output, the first
    failing element, both values and by how much (`printable`, as CompileError's)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


class BundleBuildError(InternalError):
    """The generated bundle does not build with the profile's compiler: its C is ours, so the bug is ours.
    `str()` is one line naming the model and the compiler's first error."""


@dataclass
class Bundle:
    """A compiled bundle on disk and what it was made from."""

    out_dir: Path
    plan: ExecutionPlan
    memory: MemoryPlan
    ram: RamUse  # everything one inference holds in SRAM, as the fit check counted it
    flash: FlashUse  # what the bundle puts in flash, as the fit check counted it (its code only when measured)
    library: Path | None  # None: not built (`build=False`)
    archive: Path
    selftest: SelftestResult | None  # None: not built, so not self-tested (`build=False`)
    build: BuildConfig  # how the bundle is compiled (its flags, its emulated board if any)

    @property
    def arena_bytes(self) -> int:
        return self.memory.arena_bytes

    @property
    def total_ram_bytes(self) -> int:
        """Everything one inference holds in SRAM (bytes): the arena, the inputs and outputs outside it, the
        state and the stack (target.RamUse; the stack measured on an emulated board, else the profile's bound)."""
        return self.ram.total_bytes

    @property
    def weight_bytes(self) -> int:
        return self.plan.weight_bytes()

    @property
    def files(self) -> list[Path]:
        return sorted(p for p in self.out_dir.iterdir() if p.is_file())


def cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and of its children that ended and were waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _stage(log: Callable[[str], None], name: str, work: Callable[[], T], describe: Callable[[T], str]) -> T:
    """Run one stage: `work()`, then log `<name> <wall seconds> s  CPU <seconds> s  <describe(result)>`;
    return the result. CPU counts this process and the children waited for during the stage (code generation
    workers, compilers, the reference runtime when its result is taken). An exception from `work` passes
    through, and no line is logged."""
    start, cpu_start = time.perf_counter(), cpu_seconds()
    result = work()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    log(f"{name:<10} {seconds:7.2f} s  CPU {cpu:5.2f} s  {describe(result)}")
    return result


def compile(  # noqa: A001 - the public name users expect: tvm_ext.compile(...)
    model: "str | Path | tvm.IRModule | list[str | Path]",
    target: TargetSpec = "lowpower",
    out: str | Path = "out",
    *,
    name: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda line: None,
    jobs: int | None = None,
    quantize: str | None = None,
    calibration: str | Path | None = None,
    ranges: str | None = None,
    held_back: str | Path | None = None,
    activations: str | None = None,
    scheduler: str | None = None,
    io_in_arena: bool = False,
    layout: str = "auto",
    build: bool = True,
    selftest_input: str | Path | None = None,
    patches: str | tuple[int, int] | None = None,
    input_rows: bool = False,
    keep_cross_build: str | Path | None = None,
) -> Bundle:
    """Compile `model` for `target` into the folder `out`; return the Bundle.

    `model` is a .tflite or .onnx file, or a Relax IRModule the user built (its self-test reference is then
    TVM's Relax VM on the host). `target` is a profile name, tag or file, a `Profile` or a lowpower TVM Target
    (`target.resolve_profile`). `name` is the bundle's C prefix (default: the model file's stem, or "model");
    `force` replaces a non-empty `out`; `log` receives one line per stage; `jobs` is the number of processes
    that generate the kernels' C and of compilers that build the bundle (default: the machine's cores; the
    bundle is the same for any number).
    `quantize` "int8" quantizes a float model file to int8 weights on `calibration` (an .npz with an array per
    model input, N samples, or "random"); its activations as `activations` says (tvm_ext.quantize.activation_type),
    with `ranges` "percentile", "minmax" or
    "mse" (default: percentile for int8, minmax for int16);
    "auto" does so when the profile has no FPU or the float model cannot fit it (tvm_ext.quantize.decide).
    `activations` "int8" (None: the default), "16x8" (int16 activations: the bundle takes and returns int16) or
    "auto" (16x8 where int8 misses the accuracy budget and 16x8 measures better and fits, said in a line). The
    manifest's "quantization" entry records the scheme, the calibration and the accuracy cost against the float model,
    also on `held_back` (an .npz like `calibration`'s: samples of the same distribution kept out of it).
    `scheduler` is the address of a Dask distributed scheduler whose workers compile instead of this process
    (`tvm_ext.compile.cluster`; a model file only, not quantized, and the workers generate the C with one process each).
    `io_in_arena` plans the model's inputs and outputs into the arena: the header gives their places
    (`<MODEL>_INPUT0_OFFSET`, `<model>_input0()`) and the run functions take no I/O arguments.
    `layout` "nchw" or "nhwc" puts every subgraph of a float model into that data layout; "auto" lets the
    passes choose per subgraph (tvm_ext.transform.layout_per_subgraph; the manifest's "subgraph_layouts"); a
    module that went through tvm_ext.pipeline has its layouts already and takes "auto" only.
    `build` False writes the bundle's sources, build files, manifest and README without building or self-testing
    them, nor asking for the profile's compiler (a toolchain not installed here): the manifest, report.md and
    README.md say it is untested, and the Bundle's `library` and `selftest` are None.

    `selftest_input` is an .npz (or .npy) of samples for the model file's inputs, as `--validate` reads them:
    the self-test embeds its first sample as its first case instead of seeded noise.
    `patches` "off" (layer by layer), "auto" (patch by patch only when the layer-by-layer RAM does not fit the
    profile's SRAM: the plan of fewest extra MACs that fits, said in one line) or a grid such as "2x4" or (2, 4)
    runs the first stages of a CNN patch by patch (tvm_ext.compile.patches; the manifest's "patches"); a grid or
    streamed bands, and auto when layer by layer does not fit (before any patch plan), also take the kernels whose
    scratch sets the arena in their forms without it (tvm_ext.compile.scratch_forms: fewer bytes, more
    instructions; the manifest's "scratch_forms"), "off" and a model that fits never; None (not
    given) is "auto" for one model compiled here, and layer by layer for a bundle of several models or a compile on
    a cluster, which take no patch plan.
    `input_rows` gives the model's one image input row by row (tvm_ext.plan.row_input): the run functions take a
    read_row callback instead of the input, the first stages run in bands of rows (`patches` auto or Nx1; off
    means auto) and the bundle holds only bands of the input, in its arena (the manifest's "row_input").
    `keep_cross_build` is a folder (not existing yet) that the emulated self-test's cross build (its objects, .d
    files and ELF: `EmulatedRunner.build_dir`) is moved into when the bundle is finished, instead of being deleted:
    a caller building another program from the bundle's sources (a driver instead of the self-test) copies it
    back into a copy of the bundle and recompiles only that program. Nothing is kept for a profile without an
    emulated board or with `build` False; one model compiled here only (CompileError otherwise). The bundle's
    folder is the same either way.
    Raises CompileError (one line naming the model) for anything wrong with the model or its bundle, and
    InternalError for a bug of ours: SelftestMismatchError when the built bundle disagrees with the reference,
    BundleBuildError when the generated bundle does not build.

    A list of several model files makes one bundle of them all (tvm_ext.compile.several: one run function per
    model over one shared arena, each constant once; `name` then names the bundle, each model keeps its stem as its
    prefix) and returns a `several.SeveralBundle`; the options that choose something per model are refused.
    """
    from tvm_ext.compile.pipeline import BundleOptions, compile_to_folder
    from tvm_ext.compile.quantized import (QuantizedSource, QuantizeRequest, check_request, quantized_module,
                                           source_instead)
    from tvm_ext.compile.output_folder import empty_folder

    if keep_cross_build is not None and (scheduler is not None or isinstance(model, (list, tuple)) and len(model) > 1):
        raise CompileError(f"{name or 'model'}: keep_cross_build is for one model compiled here, not on a cluster nor "
                           "for a bundle of several models")
    if isinstance(model, (list, tuple)) and len(model) > 1:
        from tvm_ext.compile.several import compile_several, refuse_per_model_options

        if not all(isinstance(m, (str, Path)) for m in model):
            raise CompileError(f"{name or 'model'}: a bundle of several models takes model files, not Relax modules")
        models = [Path(m) for m in model]
        refuse_per_model_options(", ".join(m.name for m in models), {
            "quantize": quantize, "calibration": calibration, "ranges": ranges, "held_back": held_back,
            "activations": activations, "scheduler": scheduler, "io_in_arena": io_in_arena,
            "layout": None if layout == "auto" else layout, "selftest_input": selftest_input,
            "patches": None if patches in (None, "off") else patches, "input_rows": input_rows})
        return compile_several(models, target, Path(out), name=name, force=force, log=log,
                               jobs=default_jobs() if jobs is None else jobs, build=build)
    if isinstance(model, (list, tuple)):
        if not model:
            raise CompileError(f"{name or 'model'}: no model given (an empty list of model files)")
        model = model[0]
    if isinstance(model, str):
        model = Path(model)
    label = model.name if isinstance(model, Path) else (name or "model")
    held_back = None if held_back is None else Path(held_back)
    check_request(label, quantize, calibration, held_back, activations)
    patch_request = _patch_request(label, patches if patches is not None else "auto" if scheduler is None else "off")
    if quantize is not None and not isinstance(model, Path):
        raise CompileError(f"{label}: --quantize takes a float model file, not a Relax module")
    if layout != "auto" and not isinstance(model, Path):
        from tvm_ext.lower import lowered_for

        if lowered_for(model) is not None:  # its layouts were chosen then: ours would be ignored
            raise CompileError(f"{label}: the module went through tvm_ext.pipeline, which chose its layouts; "
                               f"give layout={layout.upper()!r} to tvm_ext.pipeline instead")
    # The file's check made to read the samples is the compile's (the file is parsed once).
    checked, sample = (None, None) if selftest_input is None else _first_sample(label, model, Path(selftest_input))
    if scheduler is None:
        def fill_with(staging: Path, source, bundle_name: str | None, quantized: QuantizedSource | None
                      ) -> FolderResult:
            options = BundleOptions(bundle_name, default_jobs() if jobs is None else jobs,
                                    None if quantized is None else quantized.facts, io_in_arena,
                                    None if layout == "auto" else layout.upper(),
                                    None if quantized is None else quantized.io, build, sample,
                                    () if quantized is None else quantized.operators, patch_request, input_rows,
                                    None if keep_cross_build is None else Path(keep_cross_build))
            return compile_to_folder(source, target, staging, stage_logger(log), options,
                                     checked if quantized is None else quantized.checked)

        def fill(staging: Path) -> FolderResult:
            if quantize is None:
                return fill_with(staging, model, name, None)
            request = QuantizeRequest(quantize, calibration, ranges, held_back, activations or "int8")
            quantized = quantized_module(model, target, request, log, checked=checked)
            while True:  # a float bundle auto kept, then a 16x8 one, then int8: each smaller than the last
                try:
                    return fill_with(staging, quantized.source, name or model.stem, quantized)
                except DoesNotFitError as err:
                    instead = source_instead(model, target, request, log, quantized, err)
                    if instead is None:
                        raise
                    empty_folder(staging)
                    quantized = instead
    else:
        from tvm_ext.compile.cluster import compile_on_cluster

        if not isinstance(model, Path):
            raise CompileError(f"{label}: a Relax module cannot be compiled on a cluster (TVM cannot serialize "
                               "it); give the model file")
        if quantize is not None:
            raise CompileError(f"{label}: --quantize is not available with --scheduler; quantize locally")
        if io_in_arena:
            raise CompileError(f"{label}: --io-in-arena is not available with --scheduler; compile locally")
        if layout != "auto":
            raise CompileError(f"{label}: --layout {layout} is not available with --scheduler; compile locally")
        if patch_request != "off":
            raise CompileError(f"{label}: --patches is not available with --scheduler; compile locally")
        if input_rows:
            raise CompileError(f"{label}: --input-rows is not available with --scheduler; compile locally")
        if not build:
            raise CompileError(f"{label}: --no-build is not available with --scheduler; compile locally")
        if sample is not None:
            raise CompileError(f"{label}: --selftest-input is not available with --scheduler; compile locally")

        def fill(staging: Path) -> FolderResult:
            return compile_on_cluster(scheduler, model, target, staging, name, log)

    return fill_bundle_folder(Path(out), label, model if isinstance(model, Path) else None, force, fill)


def _first_sample(label: str, model, path: Path) -> tuple[Checked, tuple[np.ndarray, ...]]:
    """The model file checked, and the first sample of the file `path` for its inputs, one array each
    (CompileError: the model check's or the samples file's one line)."""
    if not isinstance(model, Path):
        raise CompileError(f"{label}: --selftest-input takes a model file, not a Relax module")
    checked, samples = checked_samples(model, path)
    return checked, tuple(samples.cases[0])


def checked_samples(model: Path, path: Path) -> tuple[Checked, Samples]:
    """The model file `model` checked, and the samples of the file `path` (as `--validate` and
    `--selftest-input` read them) for its inputs; CompileError with the model check's or the samples file's
    one line."""
    from tvm_ext.compile.pipeline import check
    from tvm_ext.validate import SamplesError, load_samples

    checked = check(model)
    try:
        return checked, load_samples(path, checked.facts.inputs)
    except SamplesError as err:
        raise CompileError(f"{model.name}: {err}") from err


def fill_bundle_folder(out: Path, label: str, model: Path | None, force: bool,
                       fill: Callable[[Path], FolderResult]) -> Bundle:
    """The Bundle in `out`, written by `fill(staging)` into a staging folder beside it and renamed into place
    only when `fill` returned (see `tvm_ext.compile.output_folder`). `label` starts error lines; `model` is the
    model file `out` must not hold (None for a Relax module); `force` replaces a non-empty `out`."""
    result = filled_folder(out, label, model, force, fill)
    library = None if result.library is None else out / result.library.name
    return Bundle(out, result.plan, result.memory, result.ram, result.flash, library, out / result.archive.name,
                  result.selftest, result.build)


def filled_folder(out: Path, label: str, model: Path | None, force: bool, fill: Callable[[Path], T]) -> T:
    """What `fill(staging)` returned, having written the folder `out` into a staging folder beside it, renamed into
    place only when `fill` returned (`fill_bundle_folder`'s arguments)."""
    from tvm_ext.compile.output_folder import (check_output_folder, make_parents, make_staging_folder,
                                               move_into_place, remove_parents)

    out_absolute = Path(os.path.abspath(out))  # "." and ".." named: the staging folder goes beside OUT
    check_output_folder(out_absolute, model, label, force)
    staging: Path | None = None
    parents: list[Path] = []
    try:
        with interrupts_held_back():  # no interrupt between creating the folders and knowing their names
            parents = make_parents(out_absolute, label)
            staging = make_staging_folder(out_absolute, label)
        result = fill(staging)
        with interrupts_held_back():  # with --force, OUT is renamed aside first: both renames, or neither
            move_into_place(staging, out_absolute, force, label)
            outcome_decided()
    except BaseException:
        with interrupts_held_back():
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            remove_parents(parents)
        raise
    return result


def tvm_ext_version() -> str:
    """The installed tvm_ext's version ("source" when run from a checkout that is not installed)."""
    from importlib.metadata import version

    try:
        return version("tvm-ext-lowpower")
    except Exception:  # noqa: BLE001 - PackageNotFoundError and metadata errors alike mean "not installed"
        return "source"


def default_jobs() -> int:
    """The cores this process may run on: the default number of code generation processes."""
    return len(os.sched_getaffinity(0))


def stage_logger(log: Callable[[str], None]):
    """The `stage(name, work, describe)` the pipeline runs each stage through, logging to `log`."""

    def stage(name: str, work: Callable[[], T], describe: Callable[[T], str]) -> T:
        return _stage(log, name, work, describe)

    return stage


def _patch_request(label: str, patches: str | tuple[int, int]):
    """`patches` as tvm_ext.compile.patches reads it; CompileError (one line) for a value it does not take."""
    from tvm_ext.compile.patches import parse_patches

    text = "x".join(str(n) for n in patches) if isinstance(patches, tuple) else str(patches)
    try:
        return parse_patches(text)
    except ValueError as err:
        raise CompileError(f"{label}: {err}") from err
