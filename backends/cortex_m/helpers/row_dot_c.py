"""The bundle's row dot product helper: `<prefix>_row_dot_s8x4`, `static inline` C in `<model>_internal.h`,
called by the SVDF time product on DSP cores (`backends.cortex_m.schedules.row_dot`).

It adds to four int32 accumulators the dot product of each channel's int8 input row with its own int8
weight row. Where the compiler defines `__ARM_FEATURE_DSP`, four inputs and four weights per 32-bit load,
widened by SXTB16 and multiplied two pairs per SMLAD (the dual MAC's word operations, `backends.cortex_m.helpers.dual_mac_c`,
which defines them first); elsewhere, and for the last bytes of a row, portable C. Bit-exact.

The C is hand-written: `templates/row_dot_s8x4.h.in` (`${prefix}` the bundle's prefix), its portable path
unit-tested on the host by `tests/c/test_row_dot.c` (`tests/test_row_dot_c.py`).
"""

from __future__ import annotations

from string import Template

from packager.template_files import template_text


def row_dot_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s8x4"


def row_dot_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (after the dual MAC's word operations)."""
    return Template(template_text("backends.cortex_m.helpers", "row_dot_s8x4.h.in")).substitute(prefix=prefix)
