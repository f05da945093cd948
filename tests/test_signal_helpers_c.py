"""The signal-library C helpers' unit tests (tests/c/test_signal_helpers.c) built with the strict warnings and
the sanitizers and run; the helpers also build without a warning for cortex-m4f (arm-none-eabi-gcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from c_checks import SANITIZE, STRICT_WARNINGS
from packager.signal_c import HELPER_FILES, signal_helper_files

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "packager" / "templates"
UNIT_TESTS = REPO / "tests" / "c" / "test_signal_helpers.c"


def test_signal_helpers_pass_their_unit_tests(tmp_path: Path) -> None:
    program = tmp_path / "test_signal_helpers"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    f"-I{TEMPLATES}", str(UNIT_TESTS), "-lm", "-o", str(program)], check=True)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_signal_helpers_build_for_cortex_m4f_without_warnings(tmp_path: Path) -> None:
    source = tmp_path / "helpers.c"
    source.write_text("".join(f'#include "{name}"\n' for name in signal_helper_files(HELPER_FILES)))
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{TEMPLATES}", "-c",
                    str(source), "-o", str(tmp_path / "helpers.o")], check=True)
