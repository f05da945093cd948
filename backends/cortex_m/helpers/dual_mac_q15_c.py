"""The bundle's two-pixel dual MAC on inputs widened once per pixel pair (CMSIS-NN's im2col to q15):
`<prefix>_widen_s8x2_q15` and `<prefix>_dual_mac_q15x2x4`, `static inline` C in `<model>_internal.h` (after
the word operations of `templates/dsp_words.h.in`), called by the kernels of
`backends.cortex_m.schedules.pixel_pairs`.

A pixel pair's two input windows (``rows`` runs of ``row_len`` int8, ``x_row_stride`` apart, the second
window ``x_pixel_stride`` after the first) are widened ONCE into a scratch of int32 words
(``q15_scratch_words``): per row and pixel, each whole group of four inputs x0..x3 as the int16 pairs
(x0, x2) and (x1, x3) that SXTB16 makes, then each of the row's last ``row_len % 4`` inputs as a word of its
own. Every output-channel tile then reads the pairs two words per LDRD and widens only its weights: per four
reduction elements and 2x2 tile (two pixels, two channels), two LDRD, two weight loads, four SXTB16 and eight
SMLAD, 19 instructions with the loop's (the int8 helper: 22, widening the inputs again in every tile).
Without DSP (a host build) the same words and products in portable C. Integer sums in another order:
bit-exact.

The C is hand-written: `templates/dual_mac_q15.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_dual_mac_q15.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

DUAL_MAC_Q15_TEMPLATE = "dual_mac_q15.h.in"


def q15_scratch_words(rows: int, row_len: int) -> int:
    """The int32 words the widening helper writes for two windows of ``rows`` x ``row_len`` inputs: 4 bytes per
    input in whole groups of four, 8 per input left over."""
    return 2 * rows * (row_len // 4 * 2 + row_len % 4)


def widen_q15_helper_name(prefix: str) -> str:
    """The C name of the widening helper in the bundle `prefix`."""
    return f"{prefix}_widen_s8x2_q15"


def dual_mac_q15_helper_name(prefix: str) -> str:
    """The C name of the two-pixel MAC on widened inputs in the bundle `prefix`."""
    return f"{prefix}_dual_mac_q15x2x4"
