"""The per-tensor fully connected rows (backends/cortex_m/schedules/fc_rows.py; the helpers
backends/cortex_m/helpers/templates/helium_fc_rows.h.in and backends/riscv/helpers/templates/fc_rows_s8x8.h.in): an
int8 FULLY_CONNECTED of one input row compiled for cortex-m55 or rv32imc is one call of the core family's shared
out-of-line row helper (one tile included), no loop of its own, bit-exactly with TFLite Micro under QEMU and on
the host (the helper's portable C; rv32imc takes its helper where its one copy pays per bundle, here priced free:
tests/backends/riscv/test_riscv_fc_rows_price.py has the price); cortex-m4f calls its twin over stacked weights, and
a layer its profile's tile does not divide keeps its loops."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from emulator.tools import RISCV_TOOLS, missing_tools  # noqa: E402
from tflite_models import fully_connected_model  # noqa: E402
from backends.riscv import schedules as riscv_schedules  # noqa: E402
from backends.riscv.schedules import fc_rows_price  # noqa: E402

PROFILES = {"cortex-m55": ("mps3-an547", r"_fc_rows_s8(_b16)?\("), "rv32imc": ("virt", r"_fc_rows_s8x8(_b16)?\(")}
"""Each profile's board and its row helper's call (int32 or int16 biases)."""
needs_riscv_tools = pytest.mark.skipif(bool(missing_tools(RISCV_TOOLS)), reason="needs the RISC-V tools and QEMU")


@needs_cross_tools
@needs_riscv_tools
# 16 channels over 36 inputs (four Helium tiles, two RV32 ones); 8 over 1,100 (two Helium tiles, one RV32 tile: the
# loop of one iteration); 8 over 13 inputs (a predicated rest of Helium's vectors, an odd RV32 group)
@pytest.mark.parametrize("input_units, units", [(36, 16), (1100, 8), (13, 8)])
@pytest.mark.parametrize("profile", PROFILES)
def test_a_fully_connected_row_is_one_call_of_the_row_helper_bit_exactly(tmp_path, monkeypatch, profile: str,
                                                                         input_units: int, units: int) -> None:
    board, call = PROFILES[profile]
    monkeypatch.setattr(fc_rows_price, "FC_ROWS_CODE_BYTES", 0)  # RV32: the helper's copy priced free (it pays)
    monkeypatch.setattr(riscv_schedules, "HELPER_MIN_MACS", 0)  # RV32: so few MACs would keep TVM's loops
    bundle, kernels = bit_exact_bundle(tmp_path, "dense", fully_connected_model((1, input_units), units,
                                                                               keep_num_dims=False, seed=5),
                                       profile, board)
    assert len(re.findall(call, kernels)) == 1 and "for (" not in kernels, kernels
    assert f", {input_units}, {units // (4 if profile == 'cortex-m55' else 8)});" in kernels, kernels
    internal = (bundle.out_dir / f"{bundle.plan.model}_internal.h").read_text()
    assert internal.count("int32_t dense_fc_rows_any(") == 1  # one out-of-line copy for both bias types
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable loops


@needs_cross_tools
def test_dsp_cores_call_their_stacked_rows_helper(tmp_path) -> None:
    """cortex-m4f: the DSP twin over stacked weights (backends/cortex_m/schedules/fc_tiles.py), one call (eight
    tiles: FUSED_TILES_MIN)."""
    _bundle, kernels = bit_exact_bundle(tmp_path, "dense", fully_connected_model((1, 36), 32, keep_num_dims=False),
                                        "cortex-m4f", "mps2-an386")
    assert len(re.findall(r"_fc_rows_s8x4(_b16)?\(", kernels)) == 1 and "_stacked_mac_s8x4(" not in kernels


@needs_cross_tools
def test_channels_the_tile_does_not_divide_keep_their_loops(tmp_path) -> None:
    """Ten output channels on cortex-m55 (not a multiple of four): no row helper's call, still bit-exact."""
    _bundle, kernels = bit_exact_bundle(tmp_path, "dense", fully_connected_model((1, 16), 10, keep_num_dims=False),
                                        "cortex-m55", "mps3-an547")
    assert "_fc_rows_" not in kernels
