"""The DSP cores' int8 convolution of few input channels: `<prefix>_window1_conv_s8`, C in `<model>_internal.h`,
called by the kernel `backends.cortex_m.schedules.window1_conv` writes for a CONV_2D whose window reads few input
channels (kws_ref_model's 10x4 stem, micro_speech's 10x8 depthwise of one channel and multiplier 8, an RGB stem's
3x3 of three: its taps in the weights' order, rows of columns of channels).

One out-of-line call computes every output pixel and channel (`<prefix>_window1_conv_lut_s8`: each output stored as
the entry of a 256-entry int8 table it indexes, an activation such as LEAKY_RELU fused after the convolution): four
pixels at a time, each pixel's window gathered once (the padding value outside the image) and widened to int16 pairs
in a scratch on the kernel's stack, then per output channel one weight word per four taps read and widened once for
the four pixels (an assembly group of 13 instructions per 16 MACs on cortex-m4f, where the one-pixel channel tiles
take 23) and the four sums requantized with the channel's multiplier and shift read once ("double_small"). Its own
library (`WINDOW1_HELPERS`): only a bundle whose kernels call it defines it, so the other bundles keep their bytes;
self-contained (its own word loads and requantization steps), since a bundle may call it without any other DSP
helper. Without the DSP extension (a host build) the same sums in portable C. Integer sums in another order:
bit-exact.

The C is hand-written: `templates/window1_conv.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_window1_conv.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from packager.template_files import helper_template_c

WINDOW1_TEMPLATE = "window1_conv.h.in"


def window1_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_window1_conv_s8"


def window1_lut_helper_name(prefix: str) -> str:
    """The C name of its form storing each output looked up in a table, in the bundle `prefix`."""
    return f"{prefix}_window1_conv_lut_s8"


def window1_scratch_words(taps: int) -> int:
    """The int32 scratch words a call over windows of `taps` taps needs (`<prefix>_window1_scratch_words`): eight
    per group of four taps, the four of the mark that ends the groups' loop, four per tap left, then one gathered
    int8 window in whole words."""
    return taps // 4 * 8 + 4 + taps % 4 * 4 + (taps + 3) // 4


def window1_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it needs <stdint.h> only)."""
    return helper_template_c(__package__, WINDOW1_TEMPLATE, prefix)


WINDOW1_HELPERS = HelperLibrary("cortex_m_window1", window1_helper_c, family=CORTEX_M_FAMILY)
"""The few-input-channel convolution's library: defined by a bundle whose kernels call `<prefix>_window1_conv_s8`."""
