"""A self-test's verdict, read from what it printed: the one place that decides whether a bundle passed.

selftest.c (packager/selftest.py) prints, for each case and each output in order, its largest error and its
checksum beside the reference's, a line per mismatch, then its verdict line (PASS_LINE or FAIL_LINE), and
exits 0, 1 (a mismatch) or 2 (a run call failed). Its exit status alone proves nothing: a program that
returns 0 before comparing, or whose output stops early (after some cases), would look like a pass. So a
self-test passes only when it ended with exit status 0 having reported every output of every case the
compiler embedded, compared, with that case's reference checksum as the compiler computed it, and then
PASS_LINE; anything else fails (exit 3 from the compiler).
On the emulated board the exit status is the one its exit marker reported (emulator.qemu).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packager.selftest import FAIL_LINE, PASS_LINE, RUN_FAILED_STATUS


@dataclass(frozen=True)
class Mismatch:
    """The first place where one output of one case of the bundle disagrees with the reference, as selftest.c
    printed it.

    `element` is the flat index of the first failing element, or None when only the checksum of an output
    that must be bit-identical differs; `got` and `expected` are the printed values (or checksums).
    """

    case: int
    output: int
    element: int | None
    failing_elements: int  # how many elements differ (0 when only the checksum does)
    total_elements: int  # the output's element count (0 when only the checksum differs)
    got: str
    expected: str
    detail: str  # why it fails: "abs error 0.5, allowed 1e-05", "not the same non-finite class", ...

    def describe(self) -> str:
        """One line: which case and output, where, both values, and by how much."""
        where = (f"element {self.element} ({self.failing_elements} of {self.total_elements} differ)"
                 if self.element is not None else "checksum")
        return (f"case {self.case} output {self.output}, {where}: got {self.got}, expected {self.expected} "
                f"({self.detail})")


@dataclass(frozen=True)
class OutputReport:
    """What the self-test printed about one output of one case."""

    case: int
    output: int
    max_abs_error: float
    checksum: str  # FNV-1a of the bundle's output bytes, 8 hex digits
    reference_checksum: str  # the same of the reference's output, computed by the packager
    non_finite: dict[str, int] | None  # the reference's NaN, +Inf and -Inf element counts (float outputs)

    @property
    def bit_identical(self) -> bool:
        return self.checksum == self.reference_checksum

    def facts(self) -> dict:
        """This report as an entry of the manifest's `selftest.outputs`."""
        entry: dict = {"case": self.case, "output": self.output, "max_abs_error": self.max_abs_error,
                       "checksum": self.checksum,
                       "reference_checksum": self.reference_checksum, "bit_identical": self.bit_identical}
        if self.non_finite is not None:
            entry["reference_non_finite"] = self.non_finite
        return entry


@dataclass(frozen=True)
class SelftestResult:
    """One run of a bundle's self-test, judged (`read_selftest`).

    `exit_code` is the program's exit status (None: it ended without one, e.g. stopped on the board);
    `problem` says why the run does not show a complete comparison (a fault, outputs not reported, no
    verdict), None when it does; a run passes only with no problem and no mismatch.
    """

    passed: bool
    exit_code: int | None
    reports: tuple[OutputReport, ...]  # per case and output, in order (case 0's outputs first)
    mismatches: tuple[Mismatch, ...]  # the failing outputs, one each (several for a float output and its checksum)
    output: str
    where: str  # "host" or the emulated board
    instructions: int | None = None  # per inference, on the emulated board (not cycles)
    call_instructions: tuple[int, ...] | None = None  # per kernel call, by the profiling build (emulated only)
    problem: str | None = None

    @property
    def cases(self) -> int:
        """How many cases it reported."""
        return len({report.case for report in self.reports})

    @property
    def outputs(self) -> tuple[OutputReport, ...]:
        """The reports of case 0 (the input whose run the emulated board counts), per output in order."""
        return tuple(report for report in self.reports if report.case == 0)

    @property
    def max_errors(self) -> tuple[float, ...]:
        """Per output, its largest error over every case."""
        worst: dict[int, float] = {}
        for report in self.reports:
            worst[report.output] = max(worst.get(report.output, 0.0), report.max_abs_error)
        return tuple(worst[k] for k in sorted(worst))

    @property
    def checksums(self) -> tuple[str, ...]:
        """Every case's outputs' checksums, case by case."""
        return tuple(report.checksum for report in self.reports)


_CASE_OUTPUT = r"^selftest: case (\d+) output (\d+) "
_MAX_ERROR = re.compile(_CASE_OUTPUT + r"max abs error (\S+)", re.MULTILINE)
_CHECKSUM = re.compile(_CASE_OUTPUT + r"checksum ([0-9a-f]{8}), reference ([0-9a-f]{8})", re.MULTILINE)
_NON_FINITE = re.compile(_CASE_OUTPUT + r"reference has (\d+) NaN, (\d+) \+Inf, (\d+) -Inf", re.MULTILINE)
_MISMATCH = re.compile(_CASE_OUTPUT + r"mismatch (?:at element (\d+) \((\d+) of (\d+) differ\)"
                       r"|in the checksum): got (\S+), expected (\S+) \((.*)\)", re.MULTILINE)
_RUN_FAILED = re.compile(r"^selftest: case (\d+) run failed with status (-?\d+)$", re.MULTILINE)
_SELFTEST_LINE = re.compile(r"^selftest: .*$", re.MULTILINE)
"""The lines of packager/selftest.py's C read back here (selftest.c's only channel is its output)."""


def read_selftest(exit_code: int | None, ending: str, output: str, where: str,
                  reference_checksums: tuple[tuple[int, ...], ...], instructions: int | None = None) -> SelftestResult:
    """Judge one self-test run: `exit_code` is its exit status (None: none), `ending` says in a few words how
    it ended ("exit status 0", "a HardFault"), `output` is what it printed, `reference_checksums` per case the
    checksum of each of the reference's outputs as the compiler computed it (the cases and outputs the
    self-test must report)."""
    max_errors = {(int(m[1]), int(m[2])): float(m[3]) for m in _MAX_ERROR.finditer(output)}
    checksums = {(int(m[1]), int(m[2])): (m[3], m[4]) for m in _CHECKSUM.finditer(output)}
    non_finite = {(int(m[1]), int(m[2])): {"nan": int(m[3]), "+inf": int(m[4]), "-inf": int(m[5])}
                  for m in _NON_FINITE.finditer(output)}
    reports = tuple(OutputReport(*key, max_errors[key], *checksums[key], non_finite.get(key))
                    for key in sorted(max_errors) if key in checksums)
    mismatches = tuple(
        Mismatch(int(m[1]), int(m[2]), int(m[3]) if m[3] else None, int(m[4] or 0), int(m[5] or 0), m[6], m[7], m[8])
        for m in _MISMATCH.finditer(output)
    )
    problem = _problem(exit_code, ending, output, max_errors, checksums, reference_checksums, bool(mismatches))
    return SelftestResult(problem is None and not mismatches, exit_code, reports, mismatches, output, where,
                          instructions, problem=problem)


def _problem(exit_code: int | None, ending: str, output: str, max_errors: dict[tuple[int, int], float],
             checksums: dict[tuple[int, int], tuple[str, str]], reference_checksums: tuple[tuple[int, ...], ...],
             mismatched: bool) -> str | None:
    """Why the run does not show a complete comparison with the reference, or None."""
    if exit_code == RUN_FAILED_STATUS:
        failed = _RUN_FAILED.search(output)
        where = f"case {failed[1]}'s input (status {failed[2]})" if failed else "its input"
        return f"got an error status from the bundle's run call on {where}"
    if exit_code not in (0, 1):
        return f"ended with {ending} before its verdict"
    expected = [(case, k) for case, per_case in enumerate(reference_checksums) for k in range(len(per_case))]
    compared = sorted(set(max_errors) & set(checksums))
    if compared != expected or set(max_errors) != set(checksums):
        outputs = len(reference_checksums[0]) if reference_checksums else 0
        missing = [key for key in expected if key not in compared]
        first = f"; case {missing[0][0]} output {missing[0][1]} is missing" if missing else ""
        return (f"reported {len(compared)} of its {len(expected)} outputs compared with the reference's checksum "
                f"({len(reference_checksums)} cases of {outputs}{first})")
    for case, k in expected:
        reference = reference_checksums[case][k]
        if int(checksums[case, k][1], 16) != reference:
            return (f"printed {checksums[case, k][1]} as case {case} output {k}'s reference checksum, not the "
                    f"reference's {reference:08x}")
    lines = _SELFTEST_LINE.findall(output)
    verdict = lines[-1] if lines else None
    if verdict not in (PASS_LINE, FAIL_LINE):
        return "printed no verdict after its outputs"
    if (verdict == PASS_LINE) != (exit_code == 0) or (verdict == FAIL_LINE) != mismatched:
        return f"printed {verdict!r} but ended with {ending}" + ("" if mismatched else " and no mismatch")
    return None
