"""The bundle's row dot product helpers: `<prefix>_row_dot_s8x4`, `static inline` C in `<model>_internal.h`, called by
the SVDF time product on DSP cores (`backends.cortex_m.schedules.row_dot`), and the one-row dot products
`<prefix>_row_dot_s8` and `<prefix>_row_dot_s16` (the time product unit after unit), and `<prefix>_row_dot_s8_pairs`
(int8 rows against int16 time weights laid out in SXTB16's lane order at compile time).

It adds to four int32 accumulators the dot product of each channel's int8 input row with its own int8
weight row. Where the compiler defines `__ARM_FEATURE_DSP`, four inputs and four weights per 32-bit load,
widened by SXTB16 and multiplied two pairs per SMLAD (the word operations of `templates/dsp_words.h.in`,
which a bundle defines first); elsewhere, and for the last bytes of a row, portable C. Bit-exact.

The C is hand-written: `templates/row_dot_s8x4.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_row_dot.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`). The one-row
helpers are `templates/row_dot1.h.in`, their own library (`ROW_DOT1_HELPERS`: only a bundle that calls them defines
them), unit-tested by `tests/c/test_row_dot1.c`.
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from packager.template_files import helper_template_c

ROW_DOT_TEMPLATE = "row_dot_s8x4.h.in"


def row_dot_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s8x4"


ROW_DOT1_TEMPLATE = "row_dot1.h.in"
"""One row's dot product into one accumulator (`<prefix>_row_dot_s8`, `<prefix>_row_dot_s16`): the SVDF time product
unit after unit (`tvm_ext.kernels.svdf.svdf_output_rows`), its sum kept in a register for the requantization;
unit-tested by `tests/c/test_row_dot1.c`."""


ROW_DOT1_TAGS = {"int8": "s8", "int16": "s16"}
"""The one-row helpers' name tags by the rows' type."""


def row_dot1_helper_name(prefix: str, rows: str) -> str:
    """The C name of the one-row helper over ``rows`` ("int8" or "int16") in the bundle `prefix`."""
    return f"{prefix}_row_dot_{ROW_DOT1_TAGS[rows]}"


def row_dot_lanes_helper_name(prefix: str) -> str:
    """The C name of the one-row helper over int8 inputs and int16 weights in SXTB16's lane order in the bundle
    `prefix`."""
    return f"{prefix}_row_dot_s8_pairs"


def row_dot1_c(prefix: str) -> str:
    """The one-row helpers' C definitions for the bundle `prefix`."""
    return helper_template_c(__package__, ROW_DOT1_TEMPLATE, prefix)


ROW_DOT1_HELPERS = HelperLibrary("cortex_m_row_dot1", row_dot1_c, family=CORTEX_M_FAMILY)
