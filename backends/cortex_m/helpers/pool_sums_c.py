"""The word operations of the int8 window sums of AVERAGE_POOL_2D and MEAN / SUM on DSP cores:
`<prefix>_pool_word` (four int8 as one word, any alignment), `<prefix>_pool_pairs` and `<prefix>_pool_pairs_ror8`
(SXTAB16: bytes 0 and 2, or 1 and 3, added to two 16-bit halves), called by the kernels
`backends.cortex_m.schedules.pool_sums` writes; portable C where the compiler has no DSP extension.

Its own library (`POOL_SUMS_HELPERS`): only a bundle whose kernels call them defines it, so the bundles of models
without such a pool keep their bytes. The column sums' store `<prefix>_pool_store_halves` (those halves as four
int16 in channel order, `templates/pool_columns.h.in`) is a library of its own too (`POOL_COLUMNS_HELPERS`), and so is the store of a block's four averages where a window has
2^shift taps, `<prefix>_pool_store_average` (`templates/pool_average.h.in`, `POOL_AVERAGE_HELPERS`). The C is hand-written: `templates/pool_sums.h.in` (its contract in its
leading comment), unit-tested on the host and under QEMU by `tests/c/test_pool_sums.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from packager.template_files import helper_template_c

POOL_SUMS_TEMPLATE = "pool_sums.h.in"


POOL_SUMS_OPS = ("word", "pairs", "pairs_ror8")
"""The operations: the word load, the SXTAB16 of bytes 0 and 2, that of bytes 1 and 3."""


def pool_sums_helper_name(prefix: str, operation: str) -> str:
    """The C name of the operation `operation` (one of POOL_SUMS_OPS) in the bundle `prefix`."""
    return f"{prefix}_pool_{operation}"


def pool_sums_helper_c(prefix: str) -> str:
    """The C definition of the three operations for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, POOL_SUMS_TEMPLATE, prefix)


POOL_SUMS_HELPERS = HelperLibrary("cortex_m_pool_sums", pool_sums_helper_c, family=CORTEX_M_FAMILY)
"""The window sums' library: defined by a bundle whose kernels call one of its operations."""


POOL_COLUMNS_TEMPLATE = "pool_columns.h.in"
STORE_HALVES = "store_halves"
"""The column sums' operation: a block's four 16-bit sums stored as int16 in channel order (PKHBT, PKHTB)."""


def pool_columns_helper_c(prefix: str) -> str:
    """The C definition of the column sums' store for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, POOL_COLUMNS_TEMPLATE, prefix)


POOL_COLUMNS_HELPERS = HelperLibrary("cortex_m_pool_columns", pool_columns_helper_c, family=CORTEX_M_FAMILY)
"""The column sums' library (`templates/pool_columns.h.in`, `<prefix>_pool_store_halves`): defined by a bundle whose
kernels call it (an average pool stepping one column), so the other window sums' bundles keep their bytes."""


POOL_AVERAGE_TEMPLATE = "pool_average.h.in"
STORE_AVERAGE = "store_average"
"""The average pool's operation where a window has 2^shift taps: a block's four averages stored as int8 in channel order
(SSUB16, SADD16 and two shifted ANDs: both halves of a word at once)."""


def pool_average_helper_c(prefix: str) -> str:
    """The C definition of the packed averages' store for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return helper_template_c(__package__, POOL_AVERAGE_TEMPLATE, prefix)


POOL_AVERAGE_HELPERS = HelperLibrary("cortex_m_pool_average", pool_average_helper_c, family=CORTEX_M_FAMILY)
"""The packed averages' library (`templates/pool_average.h.in`, `<prefix>_pool_store_average`): defined by a bundle
whose kernels call it (an average pool of 2^shift taps a window, four channels a word)."""


POOL_SCALE_TEMPLATE = "pool_scale.h.in"
SCALE_LOW, SCALE_HIGH = "scale_low", "scale_high"
"""The MEAN's rescaling of one 16-bit half of a block's sums: floor(multiplier * half / 2^16) + addend (SMLAWB and
SMLAWT: the half read where it lies, no extraction)."""


def pool_scale_helper_c(prefix: str) -> str:
    """The C definition of the halves' rescaling for the bundle `prefix`."""
    return helper_template_c(__package__, POOL_SCALE_TEMPLATE, prefix)


POOL_SCALE_HELPERS = HelperLibrary("cortex_m_pool_scale", pool_scale_helper_c, family=CORTEX_M_FAMILY)
"""The halves' rescaling library (`templates/pool_scale.h.in`, `<prefix>_pool_scale_low` and `_high`): defined by a
bundle whose kernels call it (an int8 MEAN over few taps, four channels a word), so the other bundles keep their
bytes."""
