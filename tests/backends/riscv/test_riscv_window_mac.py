"""The RISC-V window MAC's one-row helper (backends/riscv/schedules/mac.py, helpers/templates/mac_s8x2x8_row.h.in):
str_ww's 1x1 convolutions (one-row windows, paired pixels) compiled for rv32imc accumulate through
`<prefix>_mac_s8x2x8_row`, none through the two-group `<prefix>_mac_s8x2x8` (kept for windows of several
rows), and the bundle self-tests bit-exactly against TFLite Micro on QEMU virt. (The helper's own C unit test:
tests/c/test_riscv_mac.c.)"""

from __future__ import annotations

import pytest

from emulator.tools import RISCV_TOOLS
from required_tools import require_tools

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")


@pytest.mark.slow
def test_one_row_paired_windows_call_the_row_helper_and_stay_bit_exact(compiled) -> None:
    require_tools(RISCV_TOOLS)
    bundle = compiled("mlperf_tiny/str_ww_ref_model.tflite", "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output[-2000:]
    assert "(bit-identical)" in bundle.selftest.output
    kernels = (bundle.out_dir / "str_ww_ref_model_kernels.c").read_text()
    assert kernels.count("str_ww_ref_model_mac_s8x2x8_row(") >= 3
    assert "str_ww_ref_model_mac_s8x2x8(" not in kernels
