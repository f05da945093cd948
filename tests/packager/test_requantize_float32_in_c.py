"""The bundle's integer form of onnxruntime's float32 requantization (packager/templates/
fixed_point_requantize_float32.h.in) equals the float operations it replaces on tests/c/test_requantize_float32.c's
cases (ties, sums where float32 rounds, multipliers from subnormal to overflowing): on the host, with strict warnings
and sanitizers, and under QEMU on rv32imc (no floating-point unit: the reference there is the C library's soft
float)."""

from __future__ import annotations

from pathlib import Path

from c_checks import run_c_program_under_riscv_qemu, run_c_unit_tests
from emulator.tools import RISCV_TOOLS
from packager.fixed_point_c import REQUANTIZE_FLOAT32, requantize_helpers_c
from required_tools import require_tools

UNIT_TEST = Path(__file__).resolve().parents[1] / "c" / "test_requantize_float32.c"


def _write_header(folder: Path) -> None:
    (folder / "requantize_float32.h").write_text("#include <stdint.h>\n"
                                                 + requantize_helpers_c("lp", [REQUANTIZE_FLOAT32]))


def test_the_integer_requantization_equals_the_float_one_on_the_host(tmp_path):
    _write_header(tmp_path)
    run = run_c_unit_tests(UNIT_TEST, tmp_path, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


def test_the_integer_requantization_equals_the_float_one_under_qemu_on_rv32imc(tmp_path):
    require_tools(RISCV_TOOLS)
    _write_header(tmp_path)
    result = run_c_program_under_riscv_qemu(tmp_path, "rv32imc", UNIT_TEST)
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout
