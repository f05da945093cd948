"""A self-test passes only when it reports every output, compared, with the reference's checksum, and then its
verdict: one that exits 0 early, reports one output of two, faults or prints no verdict fails, on the host and
on the emulated board alike, and the compiler reports it as its own bug (exit 3). Issue 26, section 1.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import packager.bundle
from conftest import profile_build_config
from packager.selftest import expected_checksum
from packager.selftest_verdict import read_selftest
from test_selftest_can_fail import self_test

CHECKSUM = expected_checksum(np.array([1.0, 2.0], np.float32), "float32")
REPORT = (f"selftest: case {{c}} output {{k}} max abs error 0 (allowed 1e-05, scale 2)\n"
          f"selftest: case {{c}} output {{k}} reference has 0 NaN, 0 +Inf, 0 -Inf\n"
          f"selftest: case {{c}} output {{k}} checksum {CHECKSUM:08x}, reference {CHECKSUM:08x} (bit-identical)\n")
HEADER = "selftest: copy compared with hand-written values\n"


def judged(output: str, exit_code: int | None = 0, outputs: int = 2, cases: int = 1):
    ending = "exit status 0" if exit_code == 0 else "a HardFault" if exit_code is None else f"exit status {exit_code}"
    return read_selftest(exit_code, ending, output, "host", ((CHECKSUM,) * outputs,) * cases)


def test_a_complete_report_with_its_verdict_passes() -> None:
    result = judged(HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1) + "selftest: PASS\n")
    assert result.passed and result.problem is None and len(result.outputs) == 2


@pytest.mark.parametrize(("output", "exit_code", "problem"), [
    (HEADER, 0, "reported 0 of its 2 outputs compared with the reference's checksum"),
    (HEADER + REPORT.format(c=0, k=0) + "selftest: PASS\n", 0, "reported 1 of its 2 outputs"),
    (HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1) + REPORT.format(c=0, k=2) + "selftest: PASS\n", 0,
     "reported 3 of its 2 outputs"),
    (HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1), 0, "printed no verdict after its outputs"),
    (HEADER + "selftest: PASS\n" + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1), 0, "printed no verdict after"),
    (HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1) + "selftest: PASS\n", None,
     "ended with a HardFault before its verdict"),
    (HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1) + "selftest: PASS\n", 1,
     "printed 'selftest: PASS' but ended with exit status 1"),
    (HEADER + REPORT.format(c=0, k=0) + REPORT.format(c=0, k=1) + "selftest: FAIL\n", 1,
     "printed 'selftest: FAIL' but ended with exit status 1 and no mismatch"),
    (HEADER + REPORT.format(c=0, k=0)
     + REPORT.format(c=0, k=1).replace(f"reference {CHECKSUM:08x}", "reference 00000000") + "selftest: PASS\n", 0,
     f"printed 00000000 as case 0 output 1's reference checksum, not the reference's {CHECKSUM:08x}"),
    ("selftest: case 1 run failed with status 4\n", 2,
     "got an error status from the bundle's run call on case 1's input (status 4)"),
])
def test_a_run_that_shows_less_than_a_complete_comparison_fails(output: str, exit_code: int | None,
                                                                problem: str) -> None:
    result = judged(output, exit_code)
    assert not result.passed and result.problem is not None and result.problem.startswith(problem), result.problem


def returns_before_comparing(selftest_c: str) -> str:
    """selftest.c with `return 0;` after the run call, before the first comparison."""
    return selftest_c.replace("  failed |= ", "  return 0;\n  failed |= ", 1)


BOARDS = {None: "host", "cortex-m4f": "mps2-an386", "rv32imc": "virt"}
"""Where each profile's self-test runs: the host, or its emulated board (the RISC-V profile's on QEMU virt)."""


@pytest.mark.parametrize("profile", list(BOARDS), ids=["host", "cortex-m4f", "rv32imc"])
def test_a_selftest_that_returns_0_before_comparing_fails(tmp_path: Path, profile: str | None) -> None:
    config = profile_build_config(profile) if profile else None
    result = self_test(tmp_path, [("float32", [1.0, 2.0], [1.0, 2.0])], returns_before_comparing, config)
    assert result.exit_code == 0 and not result.passed, result.output
    assert result.where == BOARDS[profile]  # the failure is the emulated board's run, not a host build's
    assert result.problem == ("reported 0 of its 1 outputs compared with the reference's checksum "
                              "(1 cases of 1; case 0 output 0 is missing)")


@pytest.mark.parametrize("profile", list(BOARDS), ids=["host", "cortex-m4f", "rv32imc"])
def test_a_selftest_that_reports_one_output_of_two_fails(tmp_path: Path, profile: str | None) -> None:
    def forget_output_1(selftest_c: str) -> str:
        """selftest.c without output 1's comparison and checksum (its expected values then unused)."""
        forgotten, count = re.subn(r"  failed \|= check_\w+\(c, 1u,.*\n  failed \|= check_checksum\(c, 1u,.*\n",
                                   "  (void)selftest_expected1;\n  (void)selftest_reference_checksum1;\n", selftest_c)
        assert count == 1, selftest_c
        return forgotten

    config = profile_build_config(profile) if profile else None
    result = self_test(tmp_path, [("int8", [1, 2], [1, 2]), ("int8", [3], [3])], forget_output_1, config)
    assert result.exit_code == 0 and "selftest: PASS" in result.output and not result.passed
    assert result.where == BOARDS[profile]
    assert result.problem == ("reported 1 of its 2 outputs compared with the reference's checksum "
                              "(1 cases of 2; case 0 output 1 is missing)")


@pytest.fixture
def selftests_return_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bundle's selftest.c returns 0 before comparing (a bug of ours in the self-test's C)."""
    write_selftest = packager.bundle.write_selftest
    monkeypatch.setattr(packager.bundle, "write_selftest",
                        lambda *args: returns_before_comparing(write_selftest(*args)))


@pytest.mark.parametrize("target", ["lowpower", "cortex-m4f"])
def test_the_cli_reports_a_selftest_that_returns_early_as_our_bug(tmp_path: Path, capfd, selftests_return_early,
                                                                  target: str) -> None:
    from tvm_ext.compile.__main__ import main

    assert main(["--example", "--target", target, "-o", str(tmp_path / "out")]) == 3
    stderr = capfd.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith("tvm_ext.compile: internal error: "), stderr
    assert "reported 0 of its 4 outputs compared with the reference's checksum (4 cases of 1" in stderr[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("profile", ["cortex-m4f", "rv32imc"])
def test_a_complete_selftest_on_the_board_passes(tmp_path: Path, profile: str) -> None:
    result = self_test(tmp_path, [("float32", [1.0], [1.0])], config=profile_build_config(profile))
    assert result.passed and result.where == BOARDS[profile] and result.call_instructions, result.output
    assert result.instructions and "instructions per inference (QEMU -icount, not cycles)" in result.output
