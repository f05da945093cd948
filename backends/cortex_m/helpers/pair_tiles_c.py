"""The bundle's fused channel tiles of a convolution's pixel pair on DSP cores: `<prefix>_pair_tiles_s8` (int32
biases) and `_s8_b16` (int16 ones), and `<prefix>_pair_tiles_double_s8` (`_b16`) for TFLite's double rounding of any
shift and sum, C in `<model>_internal.h` (after the q15 pair MAC's and the DSP requantization epilogue's helpers),
called by the kernels of `backends.cortex_m.schedules.pair_tiles`.

One call computes a pair of output pixels over every output channel: it widens both pixels' input windows once
into a scratch of int32 words (``q15_scratch_words``), then per pair of channels starts the sums at the
biases in registers, multiply-accumulates the widened inputs with the int8 weights (an assembly loop of four
groups of four inputs per iteration: 70 instructions per 64 MACs on cortex-m4f, where the two-pixel dual MAC
takes 21 per 16) and requantizes both pixels' sums ("double_small": the DSP epilogue's lane; `_double`: SMULL
and QDADD, any shift). Out of line, one copy per bundle and rounding. Without the DSP extension (a host build)
the same sums in portable C. Integer sums in another order: bit-exact. A window of eight inputs in two whole
groups (a 1x1 convolution on 8 channels) takes `<prefix>_pair_tiles_eight_any` instead, chosen by the entry points
where the sizes are constant at the call: both pixels' widened inputs held in registers, one channel per step,
its multiplier and shift read once for both pixels; a bundle without such a call has no copy of it.

`<prefix>_pair_tiles_direct_s8` computes the same without the scratch, widening the inputs again in every pair of
channels' pass (`templates/pair_tiles_direct.h.in`): the form a kernel takes where the memory plan is smaller
without the widened inputs (`tvm_ext.compile.scratch_forms`), for a few more instructions per MAC
(PAIR_DIRECT_EXTRA_INSTRUCTIONS_PER_MAC). A library of its own (PAIR_DIRECT_HELPERS), defined only by the bundles
whose kernels call it: every other bundle's text is unchanged.

The C is hand-written: `templates/pair_tiles.h.in` and `templates/pair_tiles_direct.h.in` (their contracts in their
leading comments), unit-tested on the host and under QEMU by `tests/c/test_pair_tiles.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form

PAIR_TILES_TEMPLATE = "pair_tiles.h.in"
PAIR_DIRECT_TEMPLATE = "pair_tiles_direct.h.in"
PAIR_PART_TEMPLATE = "pair_tiles_part.h.in"
"""`<prefix>_pair_tiles_part_s8` (`_b16`): the pair tiles of a channel count that is not a multiple of four (an odd
last channel one more pass), after PAIR_TILES_TEMPLATE; a library of its own (PAIR_PART_HELPERS), defined only by the
bundles whose kernels call it."""
PAIR_DIRECT_EXTRA_INSTRUCTIONS_PER_MAC = 0.3
"""The instructions per MAC the scratch-free form adds, an estimate: per 16 MACs its assembly groups take 22
instructions where the scratch's take 17 (templates/pair_tiles_direct.h.in), and its short rows' single groups more.
Measured under QEMU on cortex-m4f: kws_ref_model's 25x5x64 1x1 convolution +0.29 per MAC (64 inputs a window),
str_ww_ref_model's 24x1x128 one +0.38 and 28x1x128 one +0.50 (40 inputs: two single groups a pass). What a plan's
choice of it costs (the planning line's and report.md's estimate; the measured figures are the report's table)."""


def pair_tiles_helper_name(prefix: str, bias: str, any_double: bool = False, table: bool = False) -> str:
    """The C name of the helper for biases of type `bias` ("int32" or "int16") in the bundle `prefix`; with
    `any_double`, the one of TFLite's double rounding for any shift and sum (not only "double_small"); with `table`,
    the one whose outputs are then looked up in a table (LEAKY_RELU's)."""
    name = f"{prefix}_pair_tiles_double_s8" if any_double else \
        f"{prefix}_pair_tiles_lut_s8" if table else f"{prefix}_pair_tiles_s8"
    return bias_form(name, bias)


def pair_part_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the partial pair tiles' helper (PAIR_PART_TEMPLATE) for biases of type `bias` ("int32" or
    "int16") in the bundle `prefix`; with `table`, the one whose outputs are then looked up in a table."""
    return bias_form(f"{prefix}_pair_tiles_part_lut_s8" if table else f"{prefix}_pair_tiles_part_s8", bias)


def pair_direct_helper_name(prefix: str) -> str:
    """The C name of the scratch-free pair-tiles entry of the bundle `prefix` (either bias type and rounding)."""
    return f"{prefix}_pair_tiles_direct_s8"
