"""The Cortex-M backend's row dot product helper (backends/cortex_m/helpers/templates/row_dot_s8x4.h.in) passes
its C unit test (tests/c/test_row_dot.c) on the host, strict warnings and sanitizers clean; the whole Cortex-M
helper library (its DSP path: SXTB16, SMLAD) builds for cortex-m4f without a warning."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from backends.cortex_m.helpers import cortex_m_helpers_c
from backends.cortex_m.helpers.row_dot_c import row_dot_helper_c
from c_checks import SANITIZE, STRICT_WARNINGS

UNIT_TEST = Path(__file__).resolve().parent / "c" / "test_row_dot.c"


def test_the_row_dot_adds_each_channels_dot_product(tmp_path: Path) -> None:
    (tmp_path / "row_dot.h").write_text("#include <stdint.h>\n" + row_dot_helper_c("lp"))
    program = tmp_path / "test_row_dot"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    f"-I{tmp_path}", str(UNIT_TEST), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_the_helper_library_builds_for_cortex_m4f_without_warnings(tmp_path: Path) -> None:
    source = tmp_path / "helpers.c"
    source.write_text("#include <stdint.h>\n" + cortex_m_helpers_c("lp") + "\nint32_t row(int32_t *acc, const int8_t *x, "
                      "const int8_t *w, int32_t n) { return lp_row_dot_s8x4(acc, x, w, n, n, n); }\n")
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), "-c", str(source),
                    "-o", str(tmp_path / "helpers.o")], check=True)
