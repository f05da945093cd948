"""The Cortex-M backend's ascending copy helper (backends/cortex_m/helpers/templates/copy_ascending.h.in) passes
its C unit test (tests/c/test_copy_ascending.c) on the host, with its portable byte loop and with the 16-byte
word copies of cores that load unaligned words (__ARM_FEATURE_UNALIGNED), strict warnings and sanitizers clean;
it builds for cortex-m4f without a warning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from backends.cortex_m.helpers.copy_c import copy_helper_c
from c_checks import SANITIZE, STRICT_WARNINGS

UNIT_TEST = Path(__file__).resolve().parent / "c" / "test_copy_ascending.c"


def _header(folder: Path) -> Path:
    """copy_ascending.h: the helper as a bundle of prefix `lp` defines it (after <stdint.h>, as there)."""
    header = folder / "copy_ascending.h"
    header.write_text("#include <stdint.h>\n" + copy_helper_c("lp"))
    return header


@pytest.mark.parametrize("word_copies", [False, True], ids=["bytes", "words"])
def test_the_copy_is_the_ascending_element_loop(tmp_path: Path, word_copies: bool) -> None:
    _header(tmp_path)
    program = tmp_path / "test_copy_ascending"
    defines = ["-D__ARM_FEATURE_UNALIGNED=1"] if word_copies else []
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    *defines, f"-I{tmp_path}", str(UNIT_TEST), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_the_copy_builds_for_cortex_m4f_without_warnings(tmp_path: Path) -> None:
    source = tmp_path / "copy.c"
    source.write_text(f'#include "{_header(tmp_path).name}"\n'
                      "int32_t shift(int8_t *state, int32_t n) { return lp_copy_ascending(state, state + 1, n, 1); }\n")
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{tmp_path}", "-c",
                    str(source), "-o", str(tmp_path / "copy.o")], check=True)
