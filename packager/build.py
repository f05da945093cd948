"""Build the bundle with its own Makefile and run its self-test (on the host, or on the emulated board)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from packager.build_files import BuildConfig

class BuildError(Exception):
    """The bundle did not build; the message holds the compiler's first error line."""


@dataclass(frozen=True)
class SelftestResult:
    passed: bool
    exit_code: int
    max_errors: tuple[float, ...]  # per output, as the self-test printed them
    checksums: tuple[str, ...]  # per output: FNV-1a of its bytes, as the self-test printed them
    output: str
    where: str  # "host" or the emulated board
    instructions: int | None = None  # per inference, on the emulated board (not cycles)


def make(bundle_dir: Path, goal: str, variables: dict[str, str] | None = None, timeout_s: float = 900) -> None:
    """`make <goal>` in `bundle_dir` with warnings as errors; raise BuildError with the first error line."""
    settings = {"EXTRA_CFLAGS": "-Werror", **(variables or {})}
    proc = subprocess.run(["make", "-s", goal, *(f"{k}={v}" for k, v in settings.items())],
                          cwd=bundle_dir, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()
        raise BuildError(errors[0] if errors else f"make {goal} exited with {proc.returncode}")


def _result(exit_code: int, output: str, where: str, instructions: int | None = None) -> SelftestResult:
    errors = tuple(float(x) for x in re.findall(r"max abs error (\S+)", output))
    checksums = tuple(re.findall(r"checksum ([0-9a-f]{8})", output))
    return SelftestResult(exit_code == 0, exit_code, errors, checksums, output, where, instructions)


def run_host_selftest(bundle_dir: Path, timeout_s: float = 600) -> SelftestResult:
    proc = subprocess.run(["./selftest"], cwd=bundle_dir, capture_output=True, text=True, timeout=timeout_s)
    return _result(proc.returncode, proc.stdout, "host")


def build_bundle(bundle_dir: Path, config: BuildConfig) -> None:
    """Build lib<model>.a with the target's compiler, and the self-test program where it will run.

    The self-test runs on the emulated board when the profile has one, else on the host: built with the
    target's compiler when that makes host programs, else with the host's `cc` and the profile's portable
    flags (`BuildConfig.on_host`: the C is checked on the host; the device's build is the library's).
    """
    if config.emulated:
        from packager.cortex_m import CortexMBuildError, build_selftest_elf

        make(bundle_dir, "lib")
        try:
            build_selftest_elf(bundle_dir)
        except CortexMBuildError as err:
            raise BuildError(str(err).splitlines()[-1]) from err
    elif config.runs_on_host:
        make(bundle_dir, "all")
    else:
        make(bundle_dir, "selftest", config.on_host().make_variables())
        # The host's objects must not end up in the device library: make would reuse them.
        for host_object in [*bundle_dir.glob("*.o"), *bundle_dir.glob("lib*.a")]:
            host_object.unlink()
        make(bundle_dir, "lib")


def selftest_bundle(bundle_dir: Path, model: str, config: BuildConfig) -> tuple[SelftestResult, dict]:
    """Run the self-test built by build_bundle; the dict holds the emulated board's measurements (or {})."""
    if config.emulated:
        from packager.cortex_m import run_selftest

        run = run_selftest(bundle_dir, model, config.emulated, arena_symbol=f"{model}_arena")
        result = _result(run.result.exit_code, run.result.stdout, run.target.board.name, run.result.instructions)
        return result, run.manifest_entry()
    return run_host_selftest(bundle_dir), {}
