"""The signal-library C helpers' unit tests (tests/c/test_signal_helpers.c) built with the strict warnings and
the sanitizers and run; the helpers also build without a warning for cortex-m4f (arm-none-eabi-gcc)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from c_checks import build_for_cortex_m, run_c_unit_tests
from packager.signal_c import HELPER_FILES, signal_helper_files

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "packager" / "templates"
UNIT_TESTS = REPO / "tests" / "c" / "test_signal_helpers.c"


def test_signal_helpers_pass_their_unit_tests(tmp_path: Path) -> None:
    run = run_c_unit_tests(UNIT_TESTS, TEMPLATES, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_signal_helpers_build_for_cortex_m_without_warnings(tmp_path: Path) -> None:
    build_for_cortex_m("".join(f'#include "{name}"\n' for name in signal_helper_files(HELPER_FILES)), TEMPLATES,
                         tmp_path)
