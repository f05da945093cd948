"""The DSP cores' depthwise MAC of a depth multiplier above 1: `<prefix>_depthwise_spread_s8x4m4` (a multiplier that
is a multiple of 4: a tile's four output channels read one input channel) and `<prefix>_depthwise_spread_s8x4m2` (a
multiplier of 2: two input channels, each read by two output channels), one out-of-line copy each per bundle (the
interior's windows and a padded border's clipped ones alike), and their sums inlined for windows of up to 9 taps
(`_depthwise_spread_inline_s8x4m4` / `_m2`), C in `<model>_internal.h`, called by the kernels
`backends.cortex_m.schedules.depthwise_spread` writes.

Each adds to four int32 accumulators (four consecutive output channels of one pixel) the window's products: per
tap one word of int8 weights widened by SXTB16 into two int16 pairs and the tap's input (or two inputs) by a
sign-extending byte load, four SMLABB/SMLABT: 10 instructions a tap in the copy's loop on cortex-m4f, where the
scheduled kernel had a scalar loop nest (the depthwise helper, `depthwise_mac_c`, takes four consecutive input
channels a tap: a multiplier of 1).

A library of its own (`backends.cortex_m.helpers.DEPTHWISE_SPREAD_HELPERS`), defined only by the bundles whose
kernels call it, after CORTEX_M_HELPERS, whose word operations (`dsp_words.h.in`) it uses: every other bundle's
text is unchanged. The C is hand-written: `templates/depthwise_spread.h.in` (its contract in its leading comment),
unit-tested on the host and under QEMU by `tests/c/test_depthwise_spread.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

DEPTHWISE_SPREAD_TEMPLATE = "depthwise_spread.h.in"
SPREAD_INPUTS = (1, 2)
"""The input channels a four-channel tile reads per tap: 1 (a multiplier that is a multiple of 4), 2 (a multiplier
of 2)."""
SPREAD_TAGS = {1: "m4", 2: "m2"}
"""The helpers' name suffix per inputs a tap: the depth multiplier they serve."""


def depthwise_spread_helper_name(prefix: str, inputs: int, inlined: bool = False) -> str:
    """The C name of the helper whose tile reads ``inputs`` input channels a tap (SPREAD_INPUTS) in the bundle
    `prefix`: its out-of-line copy, or where ``inlined`` its inlined sums."""
    return f"{prefix}_depthwise_spread{'_inline' if inlined else ''}_s8x4{SPREAD_TAGS[inputs]}"
