"""The RISC-V depthwise helpers (backends/riscv/schedules/mac.py, helpers/templates/depthwise_mac_s8x8.h.in and
depthwise_tiles_s8x8.h.in): int8 DEPTHWISE_CONV_2D models of 19 and of 8 channels (stride 1 and 2, SAME and VALID
padding, depth multipliers 1 and 2) compiled for rv32imc self-test bit-exactly against TFLite Micro on QEMU virt,
and each kernel of a depth multiplier of 1 computes its interior pixels' eight-channel tiles in one call of
`<prefix>_depthwise_tiles_s8x8` per pixel (the depthwise MAC's taps, the requantization) and, where padded, its
border pixels' (clipped windows and the padding's taps) in one call of `<prefix>_depthwise_border_s8x8` per pixel,
and holds no window MAC's, padding's or loop of its own for them; with 8 channels too (exactly one tile: the
RISC-V schedules tile it, `RiscvMacSchedules.channel_tiles`) and with 19 (one tile of every channel, eight not
dividing them: `mac.depthwise_whole_tile`, the fused tiles' second step of 3 channels). (The helpers' own C unit tests:
tests/c/test_riscv_depthwise_mac.c, test_riscv_depthwise_tiles.c.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import RISCV_TOOLS  # noqa: E402
from required_tools import require_tools  # noqa: E402
from test_depthwise_border_regions import CASES, SAME, _depthwise_model  # noqa: E402



def depthwise_model_19(folder: Path) -> Path:
    """The depthwise cases of the Cortex-M border test (`CASES`) over 19 channels (three tiles of eight, the second
    overlapping the first), into `folder`."""
    path = folder / "depthwise19.tflite"
    path.write_bytes(_depthwise_model(19, seed=19))
    return path


def depthwise_model_8(folder: Path) -> Path:
    """The same over 8 channels (one tile) of a 7x6 image, into `folder`: 13,104 MACs, enough for the MAC helpers
    (backends.riscv.schedules.HELPER_MIN_MACS; the 7x5 image's 10,920 keep TVM's loops)."""
    path = folder / "depthwise8.tflite"
    path.write_bytes(_depthwise_model(8, seed=8, image=(7, 6)))
    return path


MODELS = {19: depthwise_model_19, 8: depthwise_model_8}


def _kernel_bodies(kernels_c: str) -> dict[str, str]:
    """Each kernel's name -> its body's text, from a bundle's `<model>_kernels.c`."""
    return {match.group(1): match.group(2) for match in
            re.finditer(r"^void (\w+)\(.*?\) \{\n(.*?)^\}", kernels_c, flags=re.MULTILINE | re.DOTALL)}


@pytest.mark.slow
@pytest.mark.parametrize("channels", sorted(MODELS))
def test_riscv_depthwise_kernels_call_the_fused_tiles_and_stay_bit_exact(compiled, channels: int) -> None:
    require_tools(RISCV_TOOLS)
    bundle = compiled(MODELS[channels], "rv32imc")
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    kernels = _kernel_bodies((bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text())
    depthwise = {name: body for name, body in kernels.items() if "depthwise" in name}
    assert len(depthwise) == len(CASES), sorted(kernels)
    single = [body for name, body in depthwise.items() if name.endswith(f"x{channels}")]
    assert len(single) == sum(multiplier == 1 for _, multiplier, _, _ in CASES), sorted(depthwise)
    assert all("_depthwise_tiles_s8x8" in body for body in single), single
    padded = sum(multiplier == 1 and padding == SAME for _, multiplier, _, padding in CASES)
    assert sum("_depthwise_border_s8x8" in body for body in single) == padded, single
    assert not any(f"_depthwise_{kind}_s8x{lanes}(" in body for body in single for kind in ("mac", "pad")
                   for lanes in ("8", "n")), single
    # no window's, padding's or tiles' loop of its own
    assert not any("for (int32_t r" in body or "for (int32_t o" in body for body in single), single
