"""Shared fixtures: where the shared models are, and how a test compiles one (once per session: `compiled`)."""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

if TYPE_CHECKING:
    from tvm_ext.compile import Bundle, CompileError

REPO = Path(__file__).resolve().parent.parent


def models_dir() -> Path:
    """The shared models: $TVM_EXT_MODELS, else ../shared/models beside the repository."""
    path = Path(os.environ.get("TVM_EXT_MODELS", REPO.parent / "shared" / "models"))
    if not path.is_dir():
        raise RuntimeError(f"shared models not found at {path}: set TVM_EXT_MODELS")
    return path


@pytest.fixture(scope="session")
def shared_models() -> Path:
    return models_dir()


def profile_build_config(profile_name: str):
    """The build configuration (compiler, flags, emulated target) the compiler uses for a device profile."""
    import target
    from tvm_ext.compile.pipeline import build_config

    return build_config(target.load_profile(profile_name))


def profile_target(profile_name: str):
    """The Cortex-M target (core flags and QEMU board) the compiler uses for a device profile."""
    runner = profile_build_config(profile_name).emulated
    return None if runner is None else runner.target


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m tvm_ext.compile ARGS` from the repository, with its exit code, stdout and stderr.

    A new process imports TVM again when the command compiles (about 1.3 CPU-seconds more than `cli_in_process`
    per such test, measured on the loaded 2-core machine): use it where the process is what the test checks
    (the `python -m` entry point, a real process's exit code, signals, the environment it inherits, a crash),
    and `cli_in_process` elsewhere."""
    return subprocess.run([sys.executable, "-m", "tvm_ext.compile", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=900)


CliRun = Callable[..., subprocess.CompletedProcess]
"""`run_cli`'s signature: the command's arguments (str each) -> its exit code, stdout and stderr."""


@pytest.fixture
def cli_in_process(capfd: pytest.CaptureFixture[str]) -> CliRun:
    """`run_cli`'s twin: the command's `main(ARGS)` run in this process, with the same result (a
    CompletedProcess: exit code, stdout, stderr), so that a test's assertions read the same. TVM is imported
    once per pytest process instead of once per command.

    Like `run_cli` it runs from the repository (relative paths resolve there) with the program name of
    `python -m tvm_ext.compile`; what the command writes to file descriptors 1 and 2 (TVM's C++ log included)
    is captured by `capfd`. Global state the command may change is put back afterwards: the working directory,
    sys.argv, the environment, the root logger's handlers and level, the signal bookkeeping of
    tvm_ext.processes.command_process and target.tvm_import_hook's leave-torch-out flag (main sets it for the
    process's first `import tvm`). An argparse exit (SystemExit) is its exit code, as in a process."""
    import logging

    from target import tvm_import_hook
    from tvm_ext.compile.__main__ import __file__ as main_file, main
    from tvm_ext.processes import command_process

    module_state = [(command_process, name) for name in ("_working", "_received", "_raised", "_held_back")]
    module_state.append((tvm_import_hook, "_leave_torch_out"))

    def run(*args: str) -> subprocess.CompletedProcess:
        cwd, argv, environ = os.getcwd(), sys.argv, dict(os.environ)
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        saved = [(module, name, getattr(module, name)) for module, name in module_state]
        capfd.readouterr()  # what the test wrote before
        os.chdir(REPO)
        sys.argv = [main_file, *args]
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
        finally:
            os.chdir(cwd)
            sys.argv = argv
            if dict(os.environ) != environ:
                os.environ.clear()
                os.environ.update(environ)
            root.handlers[:] = handlers
            root.setLevel(level)
            for module, name, value in saved:
                setattr(module, name, value)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess([sys.executable, "-m", "tvm_ext.compile", *args], code, out, err)

    return run


def two_region_profile(extends: str, name: str, fast: tuple[str, int], slow: tuple[str, int]) -> str:
    """A TOML profile extending `extends` whose SRAM is the RAM regions `fast` then `slow` ((name, bytes) each;
    their bytes must add up to the base's sram_bytes)."""
    return (f'extends = "{extends}"\nname = "{name}"\n'
            + "".join(f'[[ram_regions]]\nname = "{region}"\nbytes = {size}\n' for region, size in (fast, slow)))


# ---------------------------------------------------------------------------------------------------------
# The session's bundle cache: each (model, target, compile options) is compiled once per test session.
#
#     def test_x(compiled, tmp_path):
#         bundle = compiled("mlperf_tiny/vww_96_float.tflite", "cortex-m4f")   # shared: read it, never write
#         mine = writable_copy(bundle, tmp_path)                              # a copy a test may modify
#         plan = compiled(chain, "lowpower", patches="stream", build=False)   # options: tvm_ext.compile's
#
# `model` is a path relative to the shared models, or a ModelFactory (e.g. `example_model` below) that
# writes the model into a folder; pass the same function object everywhere, since it is the cache key.

ModelFactory = Callable[[Path], Path]
"""Writes a model file into the folder it is given (which exists and is empty) and returns the file's path."""


def example_model(folder: Path) -> Path:
    """The built-in example model (ONNX), written into `folder`."""
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    return write_example_model(folder / f"{EXAMPLE_NAME}.onnx")


COMPILE_JOBS = 1
"""Code generation processes and compilers of each compile in the session's cache (`compile(jobs=...)`; the
bundle is the same for any number). One: a second only competes with the other pytest-xdist worker's compile
for the same two cores, and with more than one a compile forks code generation workers and builds objects early,
which it builds again when the planning changes the kernels. Measured (CPU-seconds, two compiles of each pair,
jobs 1 / 2, interleaved on the loaded machine): str_ww_ref_model 3.26 / 4.81 on cortex-m4f, 2.94 / 3.96 on
rv32imc, 1.91 / 2.65 on lowpower; micro_speech_quantized, pretrainedResnet_quant, keyword_scrambled the same
within 3 %; all twelve pairs 41.7 / 45.3."""


@pytest.fixture(scope="session", autouse=True)
def one_compile_job_under_xdist():
    """Under pytest-xdist, a compile in a test's process that names no `jobs` (tvm_ext.compile's API and the
    command's `main` run by `cli_in_process`) runs on COMPILE_JOBS processes instead of one per core
    (tvm_ext.compile.default_jobs): the other worker keeps the second core busy, and the bundle is the same for any
    number. Measured (CPU-s with the forked code generation workers, jobs 1 / 2, in a process that had imported
    torch and TVM as a worker has, two compiles of each, interleaved, loaded machine): the ONNX example on lowpower
    2.47 / 2.81 and 2.46 / 2.66, kws_ref_model on lowpower 2.36 / 3.07 and 2.97 / 3.21, micro_speech_quantized on
    rv32imc 1.90 / 2.09 and 1.97 / 2.11, hello_world_int8 on cortex-m4f 1.65 / 1.82 and 2.01; in the suite,
    test_fuzz_corpus_compiles' 13 hello_world_int8 cases under -n 2 took 14.5 / 12.3 CPU-s (this fixture off / on).

    What two jobs do (forked code generation, early objects) stays tested where a test asks for them (`jobs=2`,
    `--jobs 2`), and a command a test runs in a new process (`run_cli`) keeps the machine's default. Without
    xdist (`-n 0`) nothing changes."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    import importlib

    api = importlib.import_module("tvm_ext.compile")  # the package: tvm_ext.compile is also the function's name
    command = importlib.import_module("tvm_ext.compile.__main__")  # which holds its own name for it
    patch = pytest.MonkeyPatch()
    for module in (api, command):
        patch.setattr(module, "default_jobs", lambda: COMPILE_JOBS)
    yield
    patch.undo()


PYTEST_TEST_VARIABLE = "PYTEST_CURRENT_TEST"
"""The environment variable pytest sets to the running test's id and phase (setup, call, teardown)."""


@pytest.fixture(scope="session", autouse=True)
def one_reference_server_per_process():
    """The reference runtimes' fork server (tvm_ext.reference.server) is reused across tests: a server serves
    only the environment it was started with (`run_environment`), and pytest changes PYTEST_TEST_VARIABLE at
    each phase of each test, so every test that compiled started a server of its own (Python, numpy and the
    runtime's import: 0.24-0.33 CPU-s each, measured per test on the loaded machine), some one test in eight.
    The runtimes never read that variable; any other change of the environment still starts a new server."""
    from tvm_ext.reference import server

    whole = server.run_environment
    patch = pytest.MonkeyPatch()
    patch.setattr(server, "run_environment",
                  lambda: {name: value for name, value in whole().items() if name != PYTEST_TEST_VARIABLE})
    yield
    patch.undo()


BOARD_OBJECTS_FOLDER = "board-objects"
"""The session folder (`session_folder`) of the board objects every emulated compile of the session shares."""


@pytest.fixture(scope="session", autouse=True)
def board_objects_once_per_session(tmp_path_factory: pytest.TempPathFactory):
    """Every emulated board's support objects (startup, console, system calls, instruction counter, the profiling
    build's per-call report) compiled once per session and profile, not once per bundle: the environment names a
    session folder (packager.board_objects.BOARD_OBJECTS_VARIABLE) that every compile in the session keeps them
    in and takes them from, keyed by every input of their compile; the processes the tests start inherit it.
    Some 0.2 CPU-s of gcc per emulated compile (five objects: 0.21 measured on vww_96_int8's cortex-m4f
    bundle, loaded machine)."""
    from packager.board_objects import BOARD_OBJECTS_VARIABLE

    patch = pytest.MonkeyPatch()
    patch.setenv(BOARD_OBJECTS_VARIABLE, str(session_folder(tmp_path_factory, BOARD_OBJECTS_FOLDER)))
    yield
    patch.undo()


KEPT_CROSS_BUILD = "cross-build"
"""The folder beside a cached bundle's folder that holds its emulated self-test's cross build (`compile`'s
keep_cross_build): `cross_build_of`."""


def cross_build_of(bundle: "Bundle") -> Path | None:
    """The cross build (objects and ELF of the emulated self-test) the session's cache kept for `bundle`, for a
    program built from a copy of it to reuse (tests/cortex_m_many_inputs.emulated_run); None when none was kept
    (a bundle not from the cache, a profile without an emulated board)."""
    kept = bundle.out_dir.parent / KEPT_CROSS_BUILD
    return kept if kept.is_dir() else None


CompileOptions = tuple[tuple[str, object], ...]
"""Keyword arguments of tvm_ext.compile besides the model, target, output folder, jobs, log and keep_cross_build,
sorted by name: part of a cached bundle's key."""


class BundleCache:
    """Bundles compiled once per session, keyed by (model, target profile name, compile options).

    The options are tvm_ext.compile's keyword arguments that a test passes (e.g. patches="stream", build=False):
    every one of them is in the key, so two tests share a bundle only when they ask for the same compile; each
    value must have a stable repr (str, bool, int, a tuple of them), which names the cache's folder.

    Under pytest-xdist the session's workers share one cache folder: the first worker to ask for a key compiles
    it while holding that key's lock file, and saves the Bundle and the compile's log lines (pickled) beside it;
    the others wait for the lock and load them. The bundles it returns are shared by every test that asks for the
    same key: tests must treat their folders and plans as read-only (use `writable_copy` to change a file). A key
    the compiler refuses (CompileError: the model or the profile's limits are at fault) is refused once too: its
    error is saved (pickled) the same way and raised again to every test that asks for the key.

    Each compile runs on one process (COMPILE_JOBS): the session's workers keep the cores busy already. The
    emulated self-test's cross build is kept beside the bundle (`cross_build_of`): a test building a driver from a
    copy of the bundle recompiles only the driver.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._results: dict[tuple[str | ModelFactory, str, CompileOptions],
                            tuple["Bundle | CompileError", list[str]]] = {}

    def __call__(self, model: str | ModelFactory, target: str = "lowpower", **options) -> "Bundle":
        result = self._result(model, target, options)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def log_of(self, model: str | ModelFactory, target: str = "lowpower", **options) -> list[str]:
        """The lines the compile of (model, target, options) logged (tvm_ext.compile's `log`: its stage lines and
        what it says, e.g. the patches line), compiled first unless the session has it; a refusal's too."""
        return list(self._result(model, target, options)[1])

    def _result(self, model: str | ModelFactory, target: str, options: dict
                ) -> tuple["Bundle | CompileError", list[str]]:
        key = (model, target, tuple(sorted(options.items())))
        if key not in self._results:
            self._results[key] = self._compiled_once(*key)
        return self._results[key]

    def _compiled_once(self, model: str | ModelFactory, target: str, options: CompileOptions
                       ) -> tuple["Bundle | CompileError", list[str]]:
        """The key's bundle (or the CompileError that refused it) and its compile's log lines, from the shared
        folder, compiled there first unless a worker already did."""
        name = model if isinstance(model, str) else f"{model.__module__}.{model.__qualname__}"
        digest = hashlib.sha256(f"{name}\0{target}\0{options!r}".encode()).hexdigest()[:8]
        folder = self._root / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{target}-{digest}"
        saved = folder / "bundle.pickle"
        with open(self._root / f"{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            if saved.is_file():
                return pickle.loads(saved.read_bytes())
            from tvm_ext.compile import CompileError, compile

            shutil.rmtree(folder, ignore_errors=True)  # what a compile that raised left behind
            (folder / "model").mkdir(parents=True)
            path = models_dir() / model if isinstance(model, str) else model(folder / "model")
            lines: list[str] = []
            try:
                result = compile(path, target, folder / "out", jobs=COMPILE_JOBS, log=lines.append,
                                 keep_cross_build=folder / KEPT_CROSS_BUILD, **dict(options))
            except CompileError as refusal:
                result = refusal
            saved.with_suffix(".partial").write_bytes(pickle.dumps((result, lines)))
            saved.with_suffix(".partial").replace(saved)
            return result, lines


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder `name` in the test session's base folder, created if new: under pytest-xdist every worker
    gets the same one (guard what workers write there with a lock file, as BundleCache does)."""
    base = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:  # a worker's base is <the session's base>/<worker id>
        base = base.parent
    folder = base / name
    folder.mkdir(exist_ok=True)
    return folder


def written_once(folder: Path, name: str, write: Callable[[Path], None]) -> Path:
    """`folder / name` (a file or a folder), written by `write(path)` once per test session: under pytest-xdist the
    first worker to ask writes it while holding its lock file (`folder` a `session_folder`), the others wait for the
    lock and read it. A write that raised leaves no `name`, so the next test to ask writes it again (and fails the
    same way). Read-only for the tests: copy it to change it."""
    path = folder / name
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not path.exists():
            partial = folder / f"partial-{name}"  # the same suffix: a writer may choose its format by it
            shutil.rmtree(partial, ignore_errors=True)  # what a write that raised left behind
            partial.unlink(missing_ok=True)
            write(partial)
            partial.replace(path)
    return path


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> BundleCache:
    """`compiled(model, target="lowpower") -> Bundle`, compiled once per session (see BundleCache)."""
    return BundleCache(session_folder(tmp_path_factory, "compiled"))


def writable_copy(bundle: "Bundle", folder: Path) -> "Bundle":
    """A copy of `bundle`'s folder inside `folder`, as a Bundle whose paths point into the copy."""
    out_dir = folder / bundle.out_dir.name
    shutil.copytree(bundle.out_dir, out_dir)
    return dataclasses.replace(bundle, out_dir=out_dir, library=out_dir / bundle.library.relative_to(bundle.out_dir),
                               archive=out_dir / bundle.archive.relative_to(bundle.out_dir))


def pytest_configure(config) -> None:
    """TVM's import in the test processes leaves PyTorch out, as the command line's does
    (target.tvm_import_hook.leave_torch_out_of_tvm): otherwise each pytest-xdist worker imports torch while it
    collects the tests (the first test module importing TVM), some 2.7 CPU-seconds of the ~5 that TVM's import
    then takes (measured on the loaded 2-core machine). The few tests that use torch import it when they run
    (tests/tvm_ext/frontend/pytorch_nets.py, torchvision_import.py). Registers tests/cpu_seconds.py's plugin: each
    test's CPU-seconds, and the terminal summary's costliest files and tests."""
    from target.tvm_import_hook import leave_torch_out_of_tvm

    from cpu_seconds import CpuSeconds

    leave_torch_out_of_tvm()
    config.pluginmanager.register(CpuSeconds(), "cpu_seconds")


def pytest_addoption(parser) -> None:
    parser.addoption("--backend-suite", action="store_true",
                     help="run every pair of the backend suite (tests/backends/test_backends_match_generic_c.py: "
                          "every shared model on every emulated profile), not only its CI share")


def pytest_collection_modifyitems(config, items) -> None:
    """Without --backend-suite, the tests marked backend_suite are deselected (reported as such, never skipped):
    the whole backend suite takes some 950 CPU-seconds, beyond CI's budget of the test suite (its CI share, 124 of
    its 168 pairs: tests/backends/test_backends_match_generic_c.in_ci_share). Under pytest-xdist the modules
    holding a slow test run first (`slow_modules_first`)."""
    if not config.getoption("--backend-suite"):
        kept, deselected = [], []
        for item in items:
            (kept if item.get_closest_marker("backend_suite") is None else deselected).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
    if getattr(config.option, "dist", "no") != "no":
        items[:] = slow_modules_first(items)


def slow_modules_first(items: list) -> list:
    """`items` with the modules that hold a test marked slow first, each module's tests together and in their
    order, the modules otherwise in theirs. pytest-xdist's workers start on halves of this order and an idle one
    takes half of another's tests still waiting, never a running test: the long tests then run while the short
    ones still wait, not last, where a worker would finish alone (every worker collects the same order)."""
    slow_modules = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow") is not None}
    return sorted(items, key=lambda item: item.nodeid.split("::")[0] not in slow_modules)
