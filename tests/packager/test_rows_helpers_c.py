"""The row-wise input's band helpers (packager/templates/lp_rows.h) pass their C unit test (tests/c/test_rows_helpers.c)
on the host (strict warnings, sanitizers) and on cortex-m0plus under QEMU, and build for it without warnings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from c_checks import build_for_cortex_m, run_c_program_under_qemu, run_c_unit_tests
from emulator.tools import missing_tools

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "packager" / "templates"
UNIT_TEST = REPO / "tests" / "c" / "test_rows_helpers.c"

needs_cross_tools = pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")


def test_the_rows_helpers_pass_their_unit_test_on_the_host(tmp_path: Path) -> None:
    run = run_c_unit_tests(UNIT_TEST, TEMPLATES, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@needs_cross_tools
def test_the_rows_helpers_pass_their_unit_test_under_qemu(tmp_path: Path) -> None:
    result = run_c_program_under_qemu(tmp_path, "cortex-m0plus", {
        "selftest.c": UNIT_TEST.read_text(), "lp_rows.h": (TEMPLATES / "lp_rows.h").read_text()})
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_the_rows_helpers_build_for_cortex_m_without_warnings(tmp_path: Path) -> None:
    build_for_cortex_m(UNIT_TEST.read_text(), TEMPLATES, tmp_path, "cortex-m0plus")
