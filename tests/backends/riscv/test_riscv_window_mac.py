"""str_ww's 1x1 convolutions compiled for rv32imc: their weights paired two channels to a word at compile time
(backends/riscv/schedules/mac.py paired_mac_replacement, helpers/templates/mac_s8x8_pairs.h.in), they accumulate
through the paired MACs (two pixels' tiles in one call of `<prefix>_pair_tiles_s8x8`, their one-column rows paired
across the fused pixel index, backends/cortex_m/schedules/flat_pixels.py; the one-pixel layer's and an odd count's
last pixel's tiles in one call of `<prefix>_conv_tiles_s8x8`), none through the
int8 window MAC's two-pixel helpers (`<prefix>_mac_s8x2x8_row`,
`<prefix>_mac_s8x2x8`: convolutions whose channels are not whole tiles of eight keep them), and the bundle
self-tests bit-exactly against TFLite Micro on QEMU virt. (The helpers' own C unit tests: tests/c/test_riscv_mac.c,
test_riscv_mac_pairs.c.)"""

from __future__ import annotations

import pytest

from emulator.tools import RISCV_TOOLS
from required_tools import require_tools

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")


@pytest.mark.slow
def test_one_row_windows_call_the_paired_mac_and_stay_bit_exact(compiled) -> None:
    require_tools(RISCV_TOOLS)
    bundle = compiled("mlperf_tiny/str_ww_ref_model.tflite", "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output[-2000:]
    assert "(bit-identical)" in bundle.selftest.output
    kernels = (bundle.out_dir / "str_ww_ref_model_kernels.c").read_text()
    # the 24x1, 28x1 and 15x1 layers' pixel pairs, each pair's channel tiles in one call of the fused pair helper
    assert kernels.count("str_ww_ref_model_pair_tiles_s8x8") == 3
    assert kernels.count("str_ww_ref_model_conv_tiles_s8x8") == 2  # the 15x1 layer's last pixel, the 1x1 layer
    assert "str_ww_ref_model_mac_s8x2x8_row(" not in kernels and "str_ww_ref_model_mac_s8x2x8(" not in kernels
