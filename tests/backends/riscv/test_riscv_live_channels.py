"""An RV32 CONV_2D whose output channels the lowering padded to one tile of eight (5: a DenseNet's growth) runs
its pixel pairs' window MAC over the stored channels only (`backends.riscv.schedules.live_channels`:
`<prefix>_mac_s8x2xn` with the count), not over the padded rows' zero weights. Bit-exact against TFLite Micro on
QEMU virt."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import RISCV_TOOLS  # noqa: E402
from required_tools import require_tools  # noqa: E402
from test_riscv_four_channel_tiles import _conv_chain  # noqa: E402


def growth_model(folder):
    """CONV_2D 3x3 SAME (20 -> 5 channels, a DenseNet layer of growth 5) on a 30x26 image: its pixels paired."""
    return _conv_chain(folder, "growth5", (30, 26, 20), ((5, 3),), seed=5)


def test_riscv_a_padded_tile_pairs_pixels_over_its_stored_channels(compiled) -> None:
    require_tools(RISCV_TOOLS)
    bundle = compiled(growth_model, "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    model = bundle.plan.model
    kernels_c = (bundle.out_dir / f"{model}_kernels.c").read_text()
    assert re.search(rf"{model}_mac_s8x2xn\(.*, 5\);", kernels_c), kernels_c[:3000]
    assert f"{model}_mac_s8x2x8(" not in kernels_c, kernels_c[:3000]
