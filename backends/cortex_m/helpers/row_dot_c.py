"""The bundle's row dot product helper: `<prefix>_row_dot_s8x4`, `static inline` C in `<model>_internal.h`,
called by the SVDF time product on DSP cores (`backends.cortex_m.schedules.row_dot`).

It adds to four int32 accumulators the dot product of each channel's int8 input row with its own int8
weight row. Where the compiler defines `__ARM_FEATURE_DSP`, four inputs and four weights per 32-bit load,
widened by SXTB16 and multiplied two pairs per SMLAD (the word operations of `templates/dsp_words.h.in`,
which a bundle defines first); elsewhere, and for the last bytes of a row, portable C. Bit-exact.

The C is hand-written: `templates/row_dot_s8x4.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_row_dot.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

ROW_DOT_TEMPLATE = "row_dot_s8x4.h.in"


def row_dot_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s8x4"
