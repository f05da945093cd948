"""`--quantize auto`: whether a float model is quantized for a profile, and why, in one line.

Quantize when the profile has no FPU (float would run as software emulation), or when the float weights
exceed the flash. Whether the float arena fits the SRAM is known only once the float bundle is planned:
fusion and in-place kernels put it below any sum read from the float graph (pretrainedResnet: 135,232 B
planned, while its largest layer reads and writes 196,608 B), so `auto` compiles the float bundle and
quantizes when that one does not fit (`tvm_ext.compile`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import relax

from target.profile import Profile
from tvm_ext.layers import constant_bytes


@dataclass(frozen=True)
class Decision:
    quantize: bool
    reason: str  # one line, for the log and the manifest


def decide(main: relax.Function, profile: Profile) -> Decision:
    """Whether to quantize the float `main` for `profile` before compiling it, with the reason."""
    if profile.fpu == "none":
        return Decision(True, f"quantizing to int8: {profile.name} has no FPU (float would run in software)")
    weights = constant_bytes(main)  # the float bundle's weights, before folding, each stored once
    if weights > profile.flash_bytes:
        return Decision(True, f"quantizing to int8: float weights need {weights:,} B of flash, {profile.name} has "
                              f"{profile.flash_bytes:,} B")
    return Decision(False, f"keeping float: {profile.name} has an FPU and the float weights ({weights:,} B) fit its "
                           f"flash (quantized if the float bundle's arena does not fit its SRAM)")
