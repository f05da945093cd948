"""The DSP cores' int8 batch matmul: `<prefix>_batch_matmul_s8`, C in `<model>_internal.h`, called by the kernel
`backends.cortex_m.schedules.batch_matmul` writes for a BATCH_MATMUL of two int8 activations (a transformer's
attention: the scores Q x K^T, the attention times V), once per matrix of the batch.

One out-of-line call computes a whole matrix product: both operands widened once to int16 pairs with their zero
points subtracted (every column of the right one in an arena scratch, each pair of rows of the left one after it
as the rows are reached), then tiles of two rows by two columns, each widened word feeding two dual MACs (SMLAD),
the four sums requantized with the per-tensor multiplier and shift ("double_small", the steps of
`requantize_small.h.in`, whose library it needs: `BATCH_MATMUL_HELPERS` in `backends.cortex_m.helpers`). Its own library: only a bundle whose kernels call it defines it, so the
other bundles keep their bytes. Without the DSP extension (a host build) the same sums in portable C. Integer sums
in another order: bit-exact.

The C is hand-written: `templates/batch_matmul_s8.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_batch_matmul_s8.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from packager.template_files import helper_template_c

BATCH_MATMUL_TEMPLATE = "batch_matmul_s8.h.in"
HELIUM_BATCH_MATMUL_TEMPLATE = "helium_batch_matmul_s8.h.in"
"""Its Helium twin, the same name and contract (VMLADAVA on the int8 operands as they are, the zero points by row and
column sums; one row by four columns a tile): a Helium bundle defines it after the Helium helpers, whose dual MAC and
vector requantization it calls (`HELIUM_BATCH_MATMUL_HELPERS` in `backends.cortex_m.helpers`)."""


def batch_matmul_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_batch_matmul_s8"


def batch_matmul_pairs(depth: int) -> int:
    """The int16 pairs one widened vector of `depth` int8 takes (`<prefix>_batch_matmul_pairs`): two per group of
    four depth steps, the last group padded."""
    return (depth + 3) // 4 * 2


def batch_matmul_scratch_words(cols: int, depth: int) -> int:
    """The int32 scratch words one call over `cols` columns of depth `depth` needs
    (`<prefix>_batch_matmul_scratch_words`): every pair of columns' widened words (a lone last column's pair too),
    then one pair of rows'."""
    return ((cols + 1) // 2 + 1) * 2 * batch_matmul_pairs(depth)


def helium_batch_matmul_scratch_words(cols: int, depth: int) -> int:
    """The int32 scratch words one call of the Helium twin over `cols` columns of depth `depth` needs
    (`helium_batch_matmul_s8.h.in`'s `<prefix>_batch_matmul_scratch_words`): each column's zero-point part (cols
    rounded up to whole tiles of four), then those columns' and one row's gathered int8, each `depth` rounded up to
    whole vectors of 16."""
    columns = (cols + 3) // 4 * 4
    return columns + (columns + 1) * ((depth + 15) // 16 * 16) // 4


def helium_batch_matmul_helper_c(prefix: str) -> str:
    """The C definition of the Helium twin for the bundle `prefix` (after the Helium helpers; <string.h>)."""
    return helper_template_c(__package__, HELIUM_BATCH_MATMUL_TEMPLATE, prefix)


def batch_matmul_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (after the requantization epilogue's template, whose
    steps it calls; it needs <stdint.h> only)."""
    return helper_template_c(__package__, BATCH_MATMUL_TEMPLATE, prefix)
