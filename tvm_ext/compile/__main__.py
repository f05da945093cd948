"""`python -m tvm_ext.compile MODEL --target lowpower -o OUT`: compile a model into a C bundle.

Prints one line per stage with its time, then a summary. Exit codes: 0 the bundle is built and its
self-test passed; 2 the model, the target's limits, its bundle, OUT or the command line is at fault (one line on
stderr); 3 an internal error (a bundle that does not build or disagrees with its reference is one); 130
interrupted (SIGINT), 143 terminated (SIGTERM), at any moment, in one line and with nothing left behind
(`tvm_ext.processes.command_process`). OUT is only ever replaced by a bundle whose self-test passed.
Every line printed, and whatever TVM or a library wrote to stderr that is relayed, is `printable`: text from
the model reaches the terminal escaped, and the one error line stays one line. (Under --debug, TVM's own log
goes to stderr as TVM writes it, unheld; the traceback printed is escaped.)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from printable import printable, printable_lines
from target.tvm_import_hook import leave_torch_out_of_tvm
from tvm_ext.processes.command_process import (exit_code, install_signal_handlers, interrupted_line, received_signal,
                                     stop_if_signalled, work_that_unwinds)
from packager.bundle_prefix import checked_prefix
from tvm_ext.compile import Bundle, CompileError, InternalError, compile, default_jobs, tvm_ext_version
from tvm_ext.compile.quantized import ACTIVATION_CHOICES
from tvm_ext.compile.several import SeveralBundle, summary_line

if TYPE_CHECKING:
    from tvm_ext.compile.analyze import Analysis


class _OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are the command's one error line and exit code 2 (argparse prints
    the usage, several lines, before its own)."""

    def error(self, message: str) -> NoReturn:
        print(printable(f"tvm_ext.compile: error: {message} (--help lists the options)"), file=sys.stderr)
        sys.exit(2)


def program_name(argv0: str) -> str:
    """The command as it was invoked, for the usage line: `python -m tvm_ext.compile` when Python ran this
    module (`argv0` is then its file), else the name of the script run (`tvm-ext-compile`)."""
    name = Path(argv0).name
    return "python -m tvm_ext.compile" if name in ("__main__.py", "") else name


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=prog, description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("model", nargs="?", help="the .tflite or .onnx model file")
    source.add_argument("--example", action="store_true", help="compile the built-in example model")
    source.add_argument("--list-targets", action="store_true",
                        help="list the built-in target profiles, each with one line about it, and exit")
    parser.add_argument("more_models", nargs="*", default=[], metavar="MORE_MODELS",
                        help="more model files: one bundle of all the models (a run function per model over one "
                             "shared arena, each constant once; --name then names the bundle)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {tvm_ext_version()}")
    parser.add_argument("--target", default="lowpower", help="target profile (default: lowpower)")
    parser.add_argument("-o", "--out", default="out", help="output folder (default: out)")
    parser.add_argument("--name", type=_bundle_prefix, default=None,
                        help="the bundle's C prefix: <name>_run(), <NAME>_ARENA_BYTES, <name>.h (default: the "
                             "model file's stem, made a C identifier); with several models, the name of what they "
                             "share: <name>.h, <name>_arena, lib<name>.a (default: models)")
    parser.add_argument("--analyze", action="store_true",
                        help="build nothing: list the operators and whether each is supported, then per profile "
                             "(--target all: every built-in one) MACs, weights, activations, arena, RAM, flash, fit "
                             "and estimated time per layer")
    parser.add_argument("--no-build", action="store_true",
                        help="write the sources, build files and manifest without building or self-testing them "
                             "(marked untested), e.g. for a profile whose compiler is not installed here")
    parser.add_argument("--validate", default=None, metavar="SAMPLES.npz",
                        help="after the compile, run these samples (an array per model input, N samples; optional "
                             "'labels', N class indices) through the bundle on the host and the model's reference "
                             "runtime, and print per output the errors, top-1 agreement and accuracy")
    parser.add_argument("--selftest-input", default=None, metavar="FILE.npz",
                        help="the self-test's first case is this file's first sample (an array per model input, as "
                             "--validate reads them) instead of seeded noise")
    parser.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=_positive, default=None, metavar="N",
                       help="processes that generate the kernels' C, and compilers that build the bundle "
                            "(default: the machine's cores)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="compile on a worker of this Dask distributed scheduler (tcp://host:8786)")
    parser.add_argument("--quantize", choices=("int8", "auto"), default=None,
                        help="quantize a float model to int8 (auto: when the profile has no FPU or the float "
                             "model does not fit it)")
    parser.add_argument("--calibration", default=None, metavar="DATA.npz",
                        help="calibration samples for --quantize: an .npz with an array per model input "
                             "(N samples), or 'random' (uniform noise, recorded in the manifest)")
    parser.add_argument("--activations", choices=ACTIVATION_CHOICES, default=None,
                        help="--quantize's activation type: int8 (default), 16x8 (int16 activations, int8 weights: "
                             "the bundle takes and returns int16), or auto (16x8 where int8 misses the accuracy "
                             "budget and 16x8 measures better and fits; the choice is printed)")
    parser.add_argument("--ranges", choices=("minmax", "percentile", "mse"), default=None,
                        help="activation ranges from the calibration data (default: percentile for int8 "
                             "activations, minmax for int16)")
    parser.add_argument("--held-back", default=None, metavar="DATA.npz",
                        help="samples of the calibration's distribution kept out of it (an .npz like "
                             "--calibration's), on which the manifest also records the accuracy cost")
    parser.add_argument("--io-in-arena", action="store_true",
                        help="place the model's inputs and outputs in the arena (the header gives their places; "
                             "the run functions take no input or output arguments)")
    parser.add_argument("--patches", type=_patches, default=None,
                        help="off, auto (the default for one model compiled here: only when the model does not fit "
                             "the SRAM layer by layer), a "
                             "grid NxM: run a CNN's first stages patch by patch, or stream (streamN: N bands): run "
                             "them in bands of rows, each layer computing only its new rows; where memory is "
                             "the constraint (NxM, streamN, auto when layer by layer does not fit) kernels whose "
                             "scratch sets the arena take a form without it (slower)")
    parser.add_argument("--input-rows", action="store_true",
                        help="take the image input row by row from a read_row callback instead of a whole buffer "
                             "(the first stages run in bands of rows: --patches auto or Nx1)")
    parser.add_argument("--layout", choices=("auto", "nchw", "nhwc"), default="auto",
                        help="data layout of a float model's convolutions (default: auto, chosen per subgraph "
                             "by an instruction estimate)")
    return parser


def _bundle_prefix(text: str) -> str:
    """--name: a C identifier usable as the bundle's prefix as given (packager.bundle_prefix)."""
    try:
        return checked_prefix(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _list_targets() -> str:
    """The built-in profiles, one line each: name and description (`printable`: a profile is data)."""
    import target

    profiles = [target.load_profile(name) for name in target.profile_names()]
    width = max(len(profile.name) for profile in profiles)
    return "\n".join(printable(f"{profile.name:<{width}}  {profile.description}") for profile in profiles)


def _patches(text: str):
    """--patches' value (tvm_ext.compile.patches.parse_patches); argparse's one-line error otherwise."""
    from tvm_ext.compile.patches import parse_patches

    try:
        return parse_patches(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def _positive(text: str) -> int:
    """--jobs: a whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1 (got {text!r})")
    return int(text)


@contextlib.contextmanager
def _stderr_held_back(enabled: bool) -> Iterator[Callable[[], None]]:
    """Send everything written to file descriptor 2 (TVM's C++ log included) to a temporary file.

    Yields `release()`, which copies what was held back to the real stderr, each line `printable` (TVM's log
    and warnings quote the model's names); without it the text is dropped.
    A failed compilation must end in exactly one line, yet TVM's C++ destructors warn when an exception
    abandons an IR builder mid-conversion ("BlockBuilder destroyed with remaining blocks!"); those objects
    die while the exception is handled, so the redirection lasts until after they are collected. After a
    `release()` (the compile succeeded) nothing is collected: a full collection of the compile's TVM objects
    takes about 0.2 s that the user would wait for, and no failure's single line needs protecting.
    """
    if not enabled:
        yield lambda: None
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:

        released = False

        def release() -> None:
            nonlocal released
            held.seek(0)
            os.write(saved, printable_lines(held.read()).encode())
            released = True

        os.dup2(held.fileno(), 2)
        try:
            yield release
        finally:
            if not released:
                gc.collect()
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def main(argv: list[str] | None = None) -> int:
    """Run the command with `argv` (default: sys.argv[1:]); return the exit code."""
    args = _parser(program_name(sys.argv[0])).parse_args(argv)
    leave_torch_out_of_tvm()  # a compile uses no PyTorch: its import would be most of TVM's
    if args.list_targets:
        print(_list_targets())
        return 0
    outcome: Bundle | Analysis | None = None
    failure: tuple[int, str] | None = None
    work = _compile_several if args.more_models else _analysis if args.analyze else _compile
    with _stderr_held_back(enabled=not args.debug) as release, work_that_unwinds():
        try:
            outcome, failure = _outcome_or_failure(args, release, work)
        except KeyboardInterrupt:
            pass  # raised while a failure was being handled: the signal decides the outcome below
    if outcome is None:  # once the bundle is in place, an interrupt no longer changes the outcome
        if received_signal() is not None:
            # whatever the interrupt became on its way out (TVM's FFI makes it a RuntimeError), it was one
            failure = (exit_code(received_signal()), interrupted_line(received_signal()))
        code, line = failure  # without an outcome and a signal, _outcome_or_failure returned a failure
        print(printable(line), file=sys.stderr)
        return code
    return _print_analysis(outcome) if args.analyze else _print_summary(outcome)


def _print_summary(bundle: Bundle | SeveralBundle) -> int:
    """The compile's summary line; exit code 0."""
    if isinstance(bundle, SeveralBundle):
        print(printable(summary_line(bundle)))
        return 0
    memory = bundle.memory
    verdict = "untested (--no-build)" if bundle.selftest is None else \
        f"self-test {'PASS' if bundle.selftest.passed else 'FAIL'}"
    print(printable(
        f"[tvm_ext] {bundle.plan.model}: arena {memory.arena_bytes:,} B (lower bound {memory.lower_bound:,} B, "
        f"{'optimal' if memory.optimal else memory.strategy}"
        + (f"; {bundle.ram.faster_arena_bytes:,} B more in faster RAM regions" if bundle.ram.faster_arena_bytes else "")
        + f"), total RAM {bundle.total_ram_bytes:,} B "
        f"({bundle.ram.parts()}), weights {bundle.weight_bytes:,} B, "
        + (f"flash {bundle.flash.total_bytes:,} B ({bundle.flash.parts()}), " if bundle.flash.measured else "")
        + f"{len({c.kernel for c in bundle.plan.calls})} kernels in {len(bundle.plan.calls)} calls, "
        f"{verdict} -> {bundle.out_dir}"
    ))
    return 0


def _compile(args: argparse.Namespace, model: Path) -> Bundle:
    """The compile `args` ask for, of the model file `model`; with --validate, then its validation (the samples
    read and checked first, before any compile work)."""
    checked, samples = (None, None) if args.validate is None else _validation_samples(args, model)
    bundle = compile(model, args.target, Path(args.out), force=args.force,
                     log=_print_stage_and_stop_if_signalled, jobs=args.jobs, quantize=args.quantize,
                     calibration=args.calibration, ranges=args.ranges, held_back=args.held_back,
                     activations=args.activations, scheduler=args.scheduler, io_in_arena=args.io_in_arena,
                     layout=args.layout, name=args.name, build=not args.no_build, patches=args.patches,
                     selftest_input=args.selftest_input, input_rows=args.input_rows)
    if samples is not None:
        from tvm_ext.validate import ValidationError, validate, validation_text

        from tvm_ext.compile import stage_logger

        try:
            validation = stage_logger(_print_stage_and_stop_if_signalled)(
                "validate", lambda: validate(bundle.out_dir, bundle.plan, model, checked.facts, samples,
                                            bundle.build),
                lambda v: f"{v.count} samples of {v.source} on {v.where}")
        except ValidationError as err:
            raise InternalError(str(err)) from err
        for line in validation_text(validation).splitlines():
            _print_stage_and_stop_if_signalled(line)
    return bundle


def _compile_several(args: argparse.Namespace, model: Path) -> SeveralBundle:
    """One bundle of the model files `model` and `args.more_models` (tvm_ext.compile.several); CompileError for an
    option a bundle of several models does not take."""
    models = [model, *map(Path, args.more_models)]
    label = ", ".join(m.name for m in models)
    for option in ("example", "analyze", "validate"):
        if getattr(args, option) not in (None, False):
            raise CompileError(f"{label}: --{option} takes one model; give one model file, or leave it out")
    return compile(models, args.target, Path(args.out), force=args.force, log=_print_stage_and_stop_if_signalled,
                   jobs=args.jobs, quantize=args.quantize, calibration=args.calibration, ranges=args.ranges,
                   held_back=args.held_back, activations=args.activations, scheduler=args.scheduler,
                   io_in_arena=args.io_in_arena, layout=args.layout, name=args.name, build=not args.no_build,
                   patches=args.patches, selftest_input=args.selftest_input, input_rows=args.input_rows)


def _validation_samples(args: argparse.Namespace, model: Path):
    """The model file checked and --validate's samples for its inputs (`checked_samples`; CompileError: the one
    line of the model check or of the samples file's checks); refused with --no-build and --io-in-arena
    (nothing to run, or no run arguments)."""
    from tvm_ext.compile import checked_samples

    for option in ("no_build", "io_in_arena", "input_rows"):
        if getattr(args, option):
            raise CompileError(f"{model.name}: --validate runs the built bundle's run function; leave out "
                               f"--{option.replace('_', '-')}")
    return checked_samples(model, Path(args.validate))


_NOT_WITH_ANALYZE = ("quantize", "calibration", "held_back", "activations", "validate", "selftest_input", "scheduler",
                     "io_in_arena", "no_build", "force", "input_rows")


def _analysis(args: argparse.Namespace, model: Path) -> Analysis:
    """The analysis `args` ask for (--analyze), of the model file `model`; CompileError for an option that
    has no meaning without a compile."""
    from tvm_ext.compile.analyze import analyze, profiles_named
    from tvm_ext.compile.patches import AUTO

    given = [name for name in _NOT_WITH_ANALYZE if getattr(args, name) not in (None, False)]
    if given:
        raise CompileError(f"{model.name}: --analyze builds nothing; leave out --{given[0].replace('_', '-')}")
    return analyze(model, profiles_named(args.target), _print_stage_and_stop_if_signalled,
                   default_jobs() if args.jobs is None else args.jobs, AUTO if args.patches is None else args.patches)


def _print_analysis(analysis: Analysis) -> int:
    """--analyze's tables; 0 when every operator is supported and the model fits one of the profiles, else 2
    with one error line saying why (after the tables)."""
    from tvm_ext.compile.analyze_table import analysis_text

    print(printable_lines(analysis_text(analysis)), end="")
    if not analysis.supported:
        unsupported = [row for row in analysis.operators if row.refusal is not None]
        print(printable(f"tvm_ext.compile: error: {analysis.model}: unsupported operators: "
                        + "; ".join(row.refusal for row in unsupported)), file=sys.stderr)
        return 2
    if not any(result.fits for result in analysis.profiles):
        print(printable(f"tvm_ext.compile: error: {analysis.model}: fits no profile analysed: "
                        + "; ".join(result.problem or "" for result in analysis.profiles)), file=sys.stderr)
        return 2
    return 0


W = TypeVar("W")


def _outcome_or_failure(args: argparse.Namespace, release: Callable[[], None],
                        work: Callable[[argparse.Namespace, Path], W]) -> tuple[W | None, tuple[int, str] | None]:
    """Run `work(args, model file)` (the compile, or the analysis): its result (stderr released), or None and
    (exit code, stderr line)."""
    try:
        with contextlib.ExitStack() as temporary:
            model = _example_model(Path(temporary.enter_context(tempfile.TemporaryDirectory()))) \
                if args.example and not args.more_models else Path(args.model or args.more_models[0])
            outcome = work(args, model)
        release()
        return outcome, None
    except CompileError as err:
        _print_traceback_if(args.debug)
        return None, (2, f"tvm_ext.compile: error: {err}")
    except InternalError as err:
        _print_traceback_if(args.debug)
        return None, (3, f"tvm_ext.compile: internal error: {err} (a bug of tvm_ext, not of the model;"
                         " please report it with the output of --debug)")
    except KeyboardInterrupt:
        return None, (130, "tvm_ext.compile: interrupted")
    except Exception as err:  # noqa: BLE001 - anything else is our bug: say so, in one line
        _print_traceback_if(args.debug)
        first_line = str(err).splitlines()[0] if str(err) else ""
        return None, (3, f"tvm_ext.compile: internal error: {type(err).__name__}: {first_line}"
                         " (please report it with the output of --debug)")


def _print_traceback_if(debug: bool) -> None:
    """With --debug, print the exception being handled with its traceback, each line `printable`."""
    if debug:
        sys.stderr.write(printable_lines(traceback.format_exc()))


def _print_stage_and_stop_if_signalled(line: str) -> None:
    """Print a finished stage's line; then stop, before the next stage, if an interrupt was swallowed in it."""
    print(printable(f"[tvm_ext] {line}"), flush=True)
    stop_if_signalled()


def _example_model(folder: Path) -> Path:
    """The built-in example model, written into `folder`."""
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    return write_example_model(folder / f"{EXAMPLE_NAME}.onnx")


def run() -> None:
    """The console script `tvm-ext-compile` and `python -m tvm_ext.compile`: run main() and exit with its code."""
    install_signal_handlers()  # already installed when `tvm_ext` was imported by this command; idempotent
    code = main()
    # os._exit skips atexit: the reference runtimes' servers are stopped here (not imported if never used).
    reference_server = sys.modules.get("tvm_ext.reference.server")
    if reference_server is not None:
        reference_server.stop_servers()
    # Cleanup is done: every child was waited for and every temporary folder deleted by its `with` block.
    # End here, not by Python's own shutdown: with TVM loaded, tearing the interpreter down (its modules,
    # TVM's objects and registries) takes about 0.8 CPU seconds (vww_96_int8 on this 2-core machine), time
    # the user waits for after the bundle is in place. And after an interrupt, Python's shutdown would end
    # the process by the signal instead of with our code when the KeyboardInterrupt passed through code a
    # C extension ran with PyRun_* (then it marks the interrupt as unhandled even though we handled it).
    with contextlib.suppress(OSError):  # a reader that went away (`| head`) changes nothing now
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
