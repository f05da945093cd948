"""The fused channel tiles of TFLite's 16x8 CONV_2D and FULLY_CONNECTED (`templates/tiles_16x8.h.in`): one output
pixel's int16 dual MAC sums and 16x8 requantization of every channel in one out-of-line call, one copy per bundle
(`backends.cortex_m.schedules.tiles_16x8`), over int8 weights: on Helium cores its own predicated vector loop, elsewhere
`<prefix>_dual_mac_s16x4` (`dual_mac_c`)."""

from __future__ import annotations

from packager.template_files import helper_template_c

TILES_16X8_TEMPLATE = "tiles_16x8.h.in"


def tiles_16x8_helper_name(prefix: str) -> str:
    """The C name of the fused 16x8 tiles in the bundle `prefix`."""
    return f"{prefix}_tiles_s16x4"


def dual_mac_s16x4_outlined_name(prefix: str) -> str:
    """The C name of the int16 dual MAC's out-of-line copy in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s16x4_outlined"


def tiles_16x8_c(prefix: str) -> str:
    """The fused 16x8 tiles' C definition for the bundle `prefix`."""
    return helper_template_c(__package__, TILES_16X8_TEMPLATE, prefix)
