"""The bundle's row dot product helpers: `<prefix>_row_dot_s8x4` (int8 rows) and `<prefix>_row_dot_s16x4` (int16 rows),
`static inline` C in `<model>_internal.h`, called by the SVDF time product on DSP cores
(`backends.cortex_m.schedules.row_dot`).

It adds to four int32 accumulators the dot product of each channel's int8 input row with its own int8
weight row. Where the compiler defines `__ARM_FEATURE_DSP`, four inputs and four weights per 32-bit load,
widened by SXTB16 and multiplied two pairs per SMLAD (the word operations of `templates/dsp_words.h.in`,
which a bundle defines first); elsewhere, and for the last bytes of a row, portable C. Bit-exact.

The C is hand-written: `templates/row_dot_s8x4.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_row_dot.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`). The int16
rows' helper (an SVDF of int16 state: its time weights are int16 too), two elements per 32-bit load and one SMLAD
per two products, is `templates/row_dot_s16x4.h.in`, its own library (`ROW_DOT16_HELPERS`: only a bundle that calls
it defines it), unit-tested by `tests/c/test_row_dot16.c`.
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from packager.template_files import helper_template_c

ROW_DOT_TEMPLATE = "row_dot_s8x4.h.in"


def row_dot_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s8x4"


ROW_DOT16_TEMPLATE = "row_dot_s16x4.h.in"


def row_dot16_helper_name(prefix: str) -> str:
    """The C name of the int16 rows' helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s16x4"


def row_dot16_c(prefix: str) -> str:
    """The int16 rows' helper's C definition for the bundle `prefix`."""
    return helper_template_c(__package__, ROW_DOT16_TEMPLATE, prefix)


ROW_DOT16_HELPERS = HelperLibrary("cortex_m_row_dot16", row_dot16_c)


ROW_DOT1_TEMPLATE = "row_dot1.h.in"
"""One row's dot product into one accumulator (`<prefix>_row_dot_s8`, `<prefix>_row_dot_s16`): the SVDF time product
unit after unit (`tvm_ext.kernels.svdf.svdf_output_rows`), its sum kept in a register for the requantization;
unit-tested by `tests/c/test_row_dot1.c`."""


def row_dot1_helper_name(prefix: str, rows: str) -> str:
    """The C name of the one-row helper over ``rows`` ("int8" or "int16") in the bundle `prefix`."""
    return f"{prefix}_row_dot_{ {'int8': 's8', 'int16': 's16'}[rows]}"


def row_dot1_c(prefix: str) -> str:
    """The one-row helpers' C definitions for the bundle `prefix`."""
    return helper_template_c(__package__, ROW_DOT1_TEMPLATE, prefix)


ROW_DOT1_HELPERS = HelperLibrary("cortex_m_row_dot1", row_dot1_c)
