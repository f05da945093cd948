"""The bundle's saturating rounding of onnxruntime's requantizations (packager/templates/saturate_half_even.h.in)
equals the float clamp then nearbyintf, ties to even, on tests/c/test_saturate_half_even.c's cases (quarters and
their neighbours, int32's edges and beyond, the infinities, drawn values; int8, uint8 and int16 ranges): on the host
(its float clamp and rounding of small values, strict warnings and sanitizers) and under QEMU on cortex-m4f and
cortex-m55 (their VCVTR, QADD and SSAT / USAT)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_checks import run_c_program_under_qemu, run_c_unit_tests
from emulator.tools import REQUIRED_TOOLS as CORTEX_M_TOOLS
from packager.fixed_point_c import SATURATE_HALF_EVEN, requantize_helpers_c
from required_tools import require_tools

UNIT_TEST = Path(__file__).resolve().parents[1] / "c" / "test_saturate_half_even.c"
CASES = UNIT_TEST.with_name("float_rounding_cases.h")  # its values (beside it on the host; copied for QEMU)


def _header() -> str:
    return "#include <stdint.h>\n" + requantize_helpers_c("lp", [SATURATE_HALF_EVEN])


def test_the_saturating_rounding_equals_the_clamp_and_nearbyintf_on_the_host(tmp_path):
    (tmp_path / "saturate_half_even.h").write_text(_header())
    run = run_c_unit_tests(UNIT_TEST, tmp_path, tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr


@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m55"])  # the VCVTR path's FPv4 and FPv5 (MVE) cores
def test_the_saturating_rounding_equals_the_clamp_and_nearbyintf_under_qemu(tmp_path, profile):
    require_tools(CORTEX_M_TOOLS)
    files = {"saturate_half_even.h": _header(), CASES.name: CASES.read_text(), "selftest.c": UNIT_TEST.read_text()}
    result = run_c_program_under_qemu(tmp_path, profile, files, strict=True)
    assert result.exit_status == 0 and "ok " in result.stdout, result.ending() + "\n" + result.stdout
