"""Build the bundle with its own Makefile and run its self-test (on the host, or on the emulated board)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from packager.build_files import BuildConfig
from packager.make_text import make_words

class BuildError(Exception):
    """The bundle did not build; the message holds the compiler's first error line."""


@dataclass(frozen=True)
class Mismatch:
    """The first place where one output of the bundle disagrees with the reference, as selftest.c printed it.

    `element` is the flat index of the first failing element, or None when only the checksum of an output
    that must be bit-identical differs; `got` and `expected` are the printed values (or checksums).
    """

    output: int
    element: int | None
    failing_elements: int  # how many elements differ (0 when only the checksum does)
    total_elements: int  # the output's element count (0 when only the checksum differs)
    got: str
    expected: str
    detail: str  # why it fails: "abs error 0.5, allowed 1e-05", "not the same non-finite class", ...

    def describe(self) -> str:
        """One line: which output, where, both values, and by how much."""
        where = (f"element {self.element} ({self.failing_elements} of {self.total_elements} differ)"
                 if self.element is not None else "checksum")
        return f"output {self.output}, {where}: got {self.got}, expected {self.expected} ({self.detail})"


@dataclass(frozen=True)
class OutputReport:
    """What the self-test printed about one output."""

    max_abs_error: float
    checksum: str  # FNV-1a of the bundle's output bytes, 8 hex digits
    reference_checksum: str  # the same of the reference's output, computed by the packager
    non_finite: dict[str, int] | None  # the reference's NaN, +Inf and -Inf element counts (float outputs)

    @property
    def bit_identical(self) -> bool:
        return self.checksum == self.reference_checksum

    def facts(self) -> dict:
        """This report as the manifest's `selftest.outputs` entry."""
        entry: dict = {"max_abs_error": self.max_abs_error, "checksum": self.checksum,
                       "reference_checksum": self.reference_checksum, "bit_identical": self.bit_identical}
        if self.non_finite is not None:
            entry["reference_non_finite"] = self.non_finite
        return entry


@dataclass(frozen=True)
class SelftestResult:
    passed: bool
    exit_code: int
    outputs: tuple[OutputReport, ...]  # per output, in the model's order
    mismatches: tuple[Mismatch, ...]  # the failing outputs, one each (several for a float output and its checksum)
    output: str
    where: str  # "host" or the emulated board
    instructions: int | None = None  # per inference, on the emulated board (not cycles)
    call_instructions: tuple[int, ...] | None = None  # per kernel call, by the profiling build (emulated only)

    @property
    def max_errors(self) -> tuple[float, ...]:
        return tuple(report.max_abs_error for report in self.outputs)

    @property
    def checksums(self) -> tuple[str, ...]:
        return tuple(report.checksum for report in self.outputs)


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


_MAX_ERROR = re.compile(r"selftest: output (\d+) max abs error (\S+)")
_CHECKSUM = re.compile(r"selftest: output (\d+) checksum ([0-9a-f]{8}), reference ([0-9a-f]{8})")
_NON_FINITE = re.compile(r"selftest: output (\d+) reference has (\d+) NaN, (\d+) \+Inf, (\d+) -Inf")
_MISMATCH = re.compile(r"selftest: output (\d+) mismatch (?:at element (\d+) \((\d+) of (\d+) differ\)"
                       r"|in the checksum): got (\S+), expected (\S+) \((.*)\)")
"""The lines of packager/selftest.py's C that `_result` reads back (selftest.c's only channel is stdout)."""


def _result(exit_code: int, output: str, where: str, instructions: int | None = None) -> SelftestResult:
    max_errors = {int(m[1]): float(m[2]) for m in _MAX_ERROR.finditer(output)}
    checksums = {int(m[1]): (m[2], m[3]) for m in _CHECKSUM.finditer(output)}
    non_finite = {int(m[1]): {"nan": int(m[2]), "+inf": int(m[3]), "-inf": int(m[4])}
                  for m in _NON_FINITE.finditer(output)}
    reports = tuple(
        OutputReport(max_errors[k], *checksums[k], non_finite.get(k)) for k in sorted(max_errors) if k in checksums
    )
    mismatches = tuple(
        Mismatch(int(m[1]), int(m[2]) if m[2] else None, int(m[3] or 0), int(m[4] or 0), m[5], m[6], m[7])
        for m in _MISMATCH.finditer(output)
    )
    return SelftestResult(exit_code == 0, exit_code, reports, mismatches, output, where, instructions)


def run_host_selftest(bundle_dir: Path, timeout_s: float = 600) -> SelftestResult:
    proc = subprocess.run(["./selftest"], cwd=bundle_dir, capture_output=True, text=True, timeout=timeout_s)
    return _result(proc.returncode, proc.stdout, "host")


def build_bundle(bundle_dir: Path, config: BuildConfig, jobs: int = 1) -> None:
    """Build lib<model>.a with the target's compiler, and the self-test program where it will run; `jobs`
    compilers at once (the library is the same for any number: `ar` takes its objects in the Makefile's order).

    The self-test runs on the emulated board when the profile has one, else on the host: built with the
    target's compiler when that makes host programs, else with the host's `cc` and the profile's portable
    flags (`BuildConfig.on_host`: the C is checked on the host; the device's build is the library's).
    """
    if config.emulated:
        from emulator.selftest import CortexMBuildError, build_selftest_elf

        make(bundle_dir, "lib", jobs=jobs)
        try:
            build_selftest_elf(bundle_dir, jobs)
        except CortexMBuildError as err:
            raise BuildError(str(err).splitlines()[-1]) from err
    elif config.runs_on_host:
        make(bundle_dir, "all", jobs=jobs)
    else:
        make(bundle_dir, "selftest", config.on_host().make_variables(), jobs=jobs)
        # The host's objects must not end up in the device library: make would reuse them.
        for host_object in [*bundle_dir.glob("*.o"), *bundle_dir.glob("lib*.a")]:
            host_object.unlink()
        make(bundle_dir, "lib", jobs=jobs)


def selftest_bundle(bundle_dir: Path, model: str, config: BuildConfig) -> tuple[SelftestResult, dict]:
    """Run the self-test built by build_bundle; the dict holds the emulated board's measurements (or {}). On an
    emulated board a passing self-test is followed by the profiling build (emulator.profile), whose per-call
    instructions the result carries as `call_instructions`."""
    if config.emulated:
        from emulator.selftest import run_selftest

        from emulator.profile import run_call_profile

        run = run_selftest(bundle_dir, model, config.emulated, arena_symbol=f"{model}_arena")
        result = _result(run.result.exit_code, run.result.stdout, run.target.board.name, run.result.instructions)
        if result.passed:
            profile = run_call_profile(bundle_dir, config.emulated.board)
            result = replace(result, call_instructions=profile.instructions)
        return result, run.manifest_entry()
    return run_host_selftest(bundle_dir), {}
