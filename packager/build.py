"""Build the bundle with its own Makefile and run its self-test (on the host, or on the emulated board)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from backends.backend import EmulatedBuildError
from emulator.profile import read_call_profile
from packager.board_objects import board_objects_folder, keep_board_objects, restore_board_objects
from packager.build_files import BuildConfig
from packager.make_text import make_words
from packager.selftest import reference_checksums
from packager.selftest_verdict import SelftestResult, read_selftest

if TYPE_CHECKING:  # packager.bundle imports the backends, whose schedules import tvm_ext, which imports this module
    from packager.bundle import BundleInputs


STACK_USAGE_FLAG = "-fstack-usage"
"""What an emulated board's library objects are compiled with besides the Makefile's flags: GCC's stack usage
file (<stem>.su beside <stem>.o), which changes no code. Its self-test ELF's build compiles each of the
library's sources with its own flags, which differ from the library's only by flags that change no code either
(backends.cortex_m.bundle_files.support.COMPILE_FLAGS): the same object, so `share_library_objects` gives the
ELF's build the library's objects (with their .su files) instead of compiling each source twice."""


class BuildError(Exception):
    """The bundle did not build; the message holds the compiler's first error line."""


def make_command(goal: str, variables: dict[str, tuple[str, ...]] | None = None, jobs: int = 1) -> list[str]:
    """The command line of `make <goal>` with warnings as errors and the Makefile variables `variables` (each
    its words, written by `packager.make_text`) overridden, running up to `jobs` compilers at once, in a
    bundle's folder."""
    settings = {"EXTRA_CFLAGS": ("-Werror",), **(variables or {})}
    return ["make", "-s", f"-j{max(1, jobs)}", goal,
            *(f"{name}={make_words(words, 'command line')}" for name, words in settings.items())]


def make(bundle_dir: Path, goal: str, variables: dict[str, tuple[str, ...]] | None = None, timeout_s: float = 900,
         jobs: int = 1) -> None:
    """`make <goal>` in `bundle_dir` (`make_command`), running up to `jobs` compilers at once (the
    library's sources are independent objects); raise BuildError with the first error line."""
    proc = subprocess.run(make_command(goal, variables, jobs), cwd=bundle_dir, capture_output=True, text=True,
                          timeout=timeout_s)
    if proc.returncode != 0:
        raise BuildError(first_error(proc.stderr) or f"make {goal} exited with {proc.returncode}")


def first_error(stderr: str) -> str | None:
    """The line of a failed build's stderr that says what went wrong: the first compiler error or linker
    complaint (`undefined reference`), not the linker driver's or make's summary of it; else the first line."""
    lines = stderr.splitlines()
    summaries = ("collect2:", "make:", "make[")
    causes = [line for line in lines if ("error" in line or "undefined reference" in line)
              and not line.startswith(summaries)]
    return (causes or lines or [None])[0]


def run_host_selftest(bundle_dir: Path, checksums: tuple[int, ...], timeout_s: float = 600) -> SelftestResult:
    """Run the host's self-test program and judge it against the reference's `checksums`
    (packager.selftest_verdict)."""
    return read_selftest(*run_host_program(bundle_dir, timeout_s), "host", checksums)


def run_host_program(bundle_dir: Path, timeout_s: float = 600) -> tuple[int, str, str]:
    """Run the host's self-test program: its exit status, how it ended in words, and what it printed."""
    proc = subprocess.run(["./selftest"], cwd=bundle_dir, capture_output=True, timeout=timeout_s)
    ending = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"signal {-proc.returncode}"
    return proc.returncode, ending, proc.stdout.decode(errors="backslashreplace")


def build_bundle(bundle_dir: Path, config: BuildConfig, jobs: int = 1) -> None:
    """Build lib<model>.a with the target's compiler, and the self-test program where it will run; `jobs`
    compilers at once (the library is the same for any number: `ar` takes its objects in the Makefile's order).

    The self-test runs on the emulated board when the profile has one (its board objects taken from, and left
    in, the folder of packager.board_objects when the environment names one), else on the host: built with the
    target's compiler when that makes host programs, else with the host's `cc` and the profile's portable
    flags (`BuildConfig.on_host`: the C is checked on the host; the device's build is the library's).
    """
    if config.emulated:
        make(bundle_dir, "lib", library_variables(config), jobs=jobs)
        share_library_objects(bundle_dir, config.emulated.build_dir)
        restore_board_objects(bundle_dir, config.emulated.build_dir, config.emulated.board_sources(),
                              config.emulated.cross_compile_command(config), board_objects_folder())
        try:
            config.emulated.build(bundle_dir, jobs)
        except EmulatedBuildError as err:
            raise BuildError(str(err).splitlines()[-1]) from err
        keep_emulated_board_objects(bundle_dir, config)
    elif config.runs_on_host:
        make(bundle_dir, "all", jobs=jobs)
    else:
        make(bundle_dir, "selftest", config.on_host().make_variables(), jobs=jobs)
        # The host's objects must not end up in the device library: make would reuse them.
        for host_object in [*bundle_dir.glob("*.o"), *bundle_dir.glob("lib*.a")]:
            host_object.unlink()
        make(bundle_dir, "lib", jobs=jobs)


def keep_emulated_board_objects(bundle_dir: Path, config: BuildConfig) -> None:
    """Keep the board objects the emulated build of `bundle_dir` compiled in the folder the environment names
    (packager.board_objects: for the next bundle of the same profile); nothing without one."""
    runner = config.emulated
    if runner is not None:
        keep_board_objects(bundle_dir, runner.build_dir, runner.board_sources(), runner.cross_compile_command(config),
                           board_objects_folder())


def library_variables(config: BuildConfig) -> dict[str, tuple[str, ...]]:
    """The Makefile variables `make` overrides to compile the library's objects (`make_command`): warnings
    as errors, and for an emulated board's build also STACK_USAGE_FLAG (its objects are the self-test ELF's)."""
    return {"EXTRA_CFLAGS": ("-Werror", *((STACK_USAGE_FLAG,) if config.emulated else ()))}


def share_library_objects(bundle_dir: Path, build_dir: str) -> list[str]:
    """Give the self-test ELF's build (its objects in `build_dir`, relative to `bundle_dir`) each library object
    `make lib` compiled with STACK_USAGE_FLAG: <stem>.o linked as build_dir/<stem>.o, and <stem>.su moved
    there, so that the ELF's `make` takes the object as up to date (it is newer than its source) and links the
    library's code. Returns the stems shared, in name order."""
    shared = []
    for library_object in sorted(bundle_dir.glob("*.o")):
        stack_usage = library_object.with_suffix(".su")
        if not stack_usage.is_file():  # not compiled with STACK_USAGE_FLAG: the ELF's build compiles its own
            continue
        elf_object = bundle_dir / build_dir / library_object.name
        elf_object.parent.mkdir(parents=True, exist_ok=True)
        elf_object.unlink(missing_ok=True)
        elf_object.with_suffix(".d").unlink(missing_ok=True)
        os.link(library_object, elf_object)
        stack_usage.replace(elf_object.with_suffix(".su"))
        shared.append(library_object.stem)
    return shared


def selftest_bundle(bundle_dir: Path, bundle: BundleInputs) -> tuple[SelftestResult, dict]:
    """Run the self-test build_bundle built for `bundle` (written into `bundle_dir`) and judge it against the
    reference's checksums; the dict holds the emulated board's measurements (or {}). On an emulated board a
    passing self-test is followed by the runner's profiling build, where it has one, whose per-call
    instructions the result carries as `call_instructions`."""
    model, runner = bundle.plan.model, bundle.config.emulated
    checksums = reference_checksums(bundle.plan, bundle.vectors)
    if runner:
        run = runner.run(bundle_dir, model)
        result = read_selftest(run.exit_status, run.ending, run.stdout, run.where, checksums, run.instructions)
        if result.passed:
            profiled = runner.call_profile_output(bundle_dir)
            keep_emulated_board_objects(bundle_dir, bundle.config)
            result = replace(result, call_instructions=None if profiled is None else
                             read_call_profile(profiled).instructions)
        return result, run.measurements
    return run_host_selftest(bundle_dir, checksums), {}
