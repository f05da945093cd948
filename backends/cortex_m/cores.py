"""What a Cortex-M profile's core has, read from the profile's fields (no TVM)."""

from __future__ import annotations

from target.profile import Profile

DSP_SIMD = ("dsp", "mve")
"""The profiles' `simd` values whose cores have the DSP extension's SMLAD and SXTB16 (target.profile.SIMD_VALUES):
"dsp", and Helium's "mve", which implies it (Armv8.1-M with MVE has the DSP extension)."""


def has_dsp_extension(profile: Profile) -> bool:
    """Whether `profile`'s core has the DSP extension (dual 16-bit MACs, SIMD32 on packed bytes)."""
    return profile.simd in DSP_SIMD


def has_mve(profile: Profile) -> bool:
    """Whether `profile`'s core has Helium, the M-profile vector extension (`simd = "mve"`)."""
    return profile.simd == "mve"
