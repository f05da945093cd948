"""The bundle's fused channel tiles of two neighbouring pixel pairs of a short-window convolution on DSP cores:
`<prefix>_quad_tiles_s8` (int32 biases) and `_s8_b16` (int16 ones), C in `<model>_internal.h` after the pair tiles'
helpers, called by the kernels of `backends.cortex_m.schedules.quad_tiles`.

One call computes four output pixels (two pairs) over every output channel: it widens the four windows once into a
scratch of int32 words (``quad_scratch_words``), doubled, then per output channel widens its weights once for the
four pixels (one weight word, two SXTB16, four LDRD and eight SMLAD per 32 MACs) from twice the bias, and
requantizes the four doubled sums ("double_small", the DSP epilogue's rounding without its doubling). Inlined in
each kernel (its sizes constants there: out of line it spilled and ran slower than the pair helper). Windows of whole groups of four inputs only. Without the DSP extension the same sums in
portable C. Integer sums in another order, the doubled final sum within int32: bit-exact.

A library of its own (`backends.cortex_m.helpers.QUAD_TILES_HELPERS`), defined only by the bundles whose kernels call
it: every other bundle's text is unchanged. The C is hand-written: `templates/quad_tiles.h.in` (its contract in its
leading comment), unit-tested on the host and under QEMU by `tests/c/test_quad_tiles.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form

QUAD_TILES_TEMPLATE = "quad_tiles.h.in"
QUAD_PIXELS = 4
"""The output pixels of one call: two pairs."""


def quad_scratch_words(rows: int, row_len: int) -> int:
    """The int32 words the quad's widened windows take: of ``rows`` x ``row_len`` inputs (row_len a multiple of
    four), two words per group of four inputs per pixel."""
    return QUAD_PIXELS * rows * (row_len // 4) * 2


def quad_tiles_helper_name(prefix: str, bias: str) -> str:
    """The C name of the helper for biases of type `bias` ("int32" or "int16") in the bundle `prefix`."""
    return bias_form(f"{prefix}_quad_tiles_s8", bias)
