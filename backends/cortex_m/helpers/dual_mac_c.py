"""The bundle's dual multiply-accumulate helpers: `<prefix>_dual_mac_s8x4`, `<prefix>_dual_mac_s16x4` and the
two-pixel `<prefix>_dual_mac_s8x2x4`, `static inline` C in `<model>_internal.h`, called by the MAC kernels
scheduled for a DSP core (`backends.cortex_m.schedules.dual_mac`).

Each adds to four int32 accumulators (four output channels) the dot products of one input window (int8, or
int16: TFLite's 16x8 operators) with each channel's int8 weights. Where the compiler defines
`__ARM_FEATURE_DSP` (Armv7E-M, Armv8-M Mainline with the DSP extension: -mcpu=cortex-m4, m7, m33), four weights
are read per 32-bit load and widened by SXTB16 into int16 pairs (bytes 0 and 2, then bytes 1 and 3 with
`ror #8`), and multiplied and added two pairs at a time by SMLAD (gcc's `<arm_acle.h>`; the rotating SXTB16 as
inline assembly, since gcc 12 has no `__ror`). Four inputs become pairs in the same order: int8 ones from one
load by the same SXTB16s; int16 ones from two loads (x0 x1, x2 x3) by PKHBT and PKHTB ((x0, x2), (x1, x3)).
`<prefix>_dual_mac_s8x4`'s groups of four run as one inline-assembly loop where its row length is not a
constant below 64 at the call (gcc spills its four weight pointers there; the template says why and what was
measured). Elsewhere (a host build of the same bundle) the same sums in portable C. Lengths that are not a
multiple of four end in the portable loop. Integer sums in another order: bit-exact.

The C is hand-written, in `templates/` (each file's contract in its leading comment): `dsp_words.h.in` (the
loads, widenings and packs every MAC helper shares), `dual_mac.h.in` (these helpers), then the helpers that
share the word operations: `dual_mac_q15.h.in` (`backends.cortex_m.helpers.dual_mac_q15_c`),
`depthwise_mac.h.in` (`backends.cortex_m.helpers.depthwise_mac_c`) and `row_dot_s8x4.h.in`
(`backends.cortex_m.helpers.row_dot_c`). Each has a C unit test under `tests/c/`, run on the host and under
QEMU (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form
from packager.template_files import helper_template_c

from backends.cortex_m.helpers.depthwise_mac_c import DEPTHWISE_MAC_TEMPLATE
from backends.cortex_m.helpers.dual_mac_q15_c import DUAL_MAC_Q15_TEMPLATE
from backends.cortex_m.helpers.row_dot_c import ROW_DOT_TEMPLATE

DUAL_MAC_CHANNELS = 4  # output channels per call: four accumulators stay in registers beside the pointers
DUAL_MAC_GROUP = 4  # inputs per SXTB16 word: a row's length past a multiple of this runs in the scalar loop
WIDE_MAC_INPUTS = 8  # inputs per pass of wide_mac.h.in's loop (tvm_ext.kernels.dense.WIDE_GROUP: a test ties them)
DSP_WORDS_TEMPLATE = "dsp_words.h.in"
DUAL_MAC_TEMPLATE = "dual_mac.h.in"
STACKED_MAC_TEMPLATE = "stacked_mac.h.in"
"""The stacked-rows MAC of a FULLY_CONNECTED's stacked weights (`tvm_ext.kernels.dense.stack_rows`): DSP bundles
only (after the word operations), not in MAC_HELPER_TEMPLATES, whose list Helium bundles define too."""
DUAL_MAC_W16_TEMPLATE = "dual_mac_w16.h.in"
"""The dual MAC of int16 inputs over int16 weights (`<prefix>_dual_mac_s16x4_w16`: a 16x8 layer's weights widened at
compile time): DSP bundles only, after the word operations, a library of its own
(`backends.cortex_m.helpers.DUAL_MAC_W16_HELPERS`), so only bundles that call it define it."""
WIDE_MAC_TEMPLATE = "wide_mac.h.in"
"""The widened-rows MAC of a FULLY_CONNECTED's int16 weights (`tvm_ext.kernels.dense.widen_rows`): DSP bundles only,
after STACKED_MAC_TEMPLATE (its attributes)."""
MAC_HELPER_TEMPLATES = (DSP_WORDS_TEMPLATE, DUAL_MAC_TEMPLATE, DUAL_MAC_Q15_TEMPLATE, DEPTHWISE_MAC_TEMPLATE,
                        ROW_DOT_TEMPLATE)
"""The MAC helpers' templates in the order a bundle defines them: the word operations first."""
CONV_TILES_TEMPLATE = "conv_tiles_s8x4.h.in"
"""The fused channel tiles (`<prefix>_conv_tiles_s8x4`, `_s8x4_b16`: one output pixel's dual MAC sums and
requantization of every channel, the sums started at the biases), after this template's helpers and the
requantization epilogue's (`requantize_small_c`) in a bundle."""
CONV_TILES_PART_TEMPLATE = "conv_tiles_part_s8x4.h.in"
"""The fused channel tiles of a channel count that is not a multiple of four (`<prefix>_conv_tiles_part_s8x4`,
`_b16`: CONV_TILES_TEMPLATE's whole tiles, then a last tile of fewer channels), after CONV_TILES_TEMPLATE in a bundle:
a library of its own (`backends.cortex_m.helpers.CONV_TILES_PART_HELPERS`), so only bundles that call it define it."""
FC_TILES_TEMPLATE = "fc_tiles_s8x4.h.in"
"""The fused FULLY_CONNECTED channel tiles over stacked weights (`<prefix>_fc_tiles_s8x4`, `_s8x4_b16`: one input
row's stacked MAC sums and requantization of every channel in one out-of-line call, the sums started at the
biases), after STACKED_MAC_TEMPLATE's helpers and the requantization epilogue's in a bundle."""

_TAGS = {"int8": "s8", "int16": "s16"}
DUAL_MAC_INPUT_TYPES = tuple(_TAGS)
"""The input types of the dual MAC helpers (their weights are int8)."""


def dual_mac_helper_name(prefix: str, data: str = "int8") -> str:
    """The C name of the helper of ``data`` inputs in the bundle `prefix`."""
    return f"{prefix}_dual_mac_{_TAGS[data]}x4"


def dual_mac_w16_helper_name(prefix: str) -> str:
    """The C name of the helper of int16 inputs over int16 weights (DUAL_MAC_W16_TEMPLATE) in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s16x4_w16"


def conv_tiles_helper_name(prefix: str, bias: str) -> str:
    """The C name of the fused channel tiles' helper for biases of type `bias` ("int32" or "int16") in the bundle
    `prefix`."""
    return bias_form(f"{prefix}_conv_tiles_s8x4", bias)


def conv_tiles_part_helper_name(prefix: str, bias: str) -> str:
    """The C name of the partial channel tiles' helper (CONV_TILES_PART_TEMPLATE) for biases of type `bias` ("int32"
    or "int16") in the bundle `prefix`."""
    return bias_form(f"{prefix}_conv_tiles_part_s8x4", bias)


def fc_tiles_helper_name(prefix: str, bias: str) -> str:
    """The C name of the fused FULLY_CONNECTED tiles' helper (FC_TILES_TEMPLATE) for biases of type `bias` ("int32"
    or "int16") in the bundle `prefix`."""
    return bias_form(f"{prefix}_fc_tiles_s8x4", bias)


def fc_tiles_wide_helper_name(prefix: str, bias: str, form: str) -> str:
    """The C name of FC_TILES_TEMPLATE's fused helper over widened weights (`WIDE_MAC_TEMPLATE`'s layout) for biases
    of type `bias` ("int32" or "int16") in the bundle `prefix`: per channel (`form` "tiles": `<prefix>_fc_tiles_w16x4`)
    or per tensor ("rows": `<prefix>_fc_rows_w16x4`)."""
    return bias_form(f"{prefix}_fc_{form}_w16x4", bias)


def dual_mac_2px_helper_name(prefix: str) -> str:
    """The C name of the two-pixel helper (int8 inputs) in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s8x2x4"


def stacked_mac_helper_name(prefix: str) -> str:
    """The C name of the stacked-rows MAC (`STACKED_MAC_TEMPLATE`) in the bundle `prefix`."""
    return f"{prefix}_stacked_mac_s8x4"


def wide_mac_helper_name(prefix: str) -> str:
    """The C name of the widened-rows MAC (`WIDE_MAC_TEMPLATE`) in the bundle `prefix`."""
    return f"{prefix}_wide_mac_s8x4"


def dsp_template_options(prefix: str) -> dict[str, dict[str, str]]:
    """The options (`packager.template_files.helper_template_c`) a DSP bundle of prefix `prefix` fills, per
    template: a schedule barrier after each int8 depthwise tap of a row's three-tap steps and between the two
    taps left, where the compiler has the DSP extension (`templates/depthwise_mac.h.in` says why)."""
    fence = f"\n#if defined(__ARM_FEATURE_DSP)\n        {prefix}_schedule_barrier();\n#endif"  # defined there only
    return {DEPTHWISE_MAC_TEMPLATE: {"option_after_s8_tap": fence}}


def dsp_template_c(name: str, prefix: str) -> str:
    """The C a DSP bundle of prefix `prefix` defines for the helper template `name`, its options filled
    (`dsp_template_options`)."""
    return helper_template_c(__package__, name, prefix, dsp_template_options(prefix).get(name))


def mac_helpers_c(prefix: str, templates: tuple[str, ...] = MAC_HELPER_TEMPLATES) -> str:
    """The C definitions of every MAC helper for the bundle `prefix`, from `templates` in their order (by
    default MAC_HELPER_TEMPLATES: the word operations, the one-pixel helpers (int8 and int16 inputs), the
    two-pixel one (int8), then the helpers that share the word operations (the two-pixel MAC on widened inputs,
    the depthwise helpers, the row dot product); a Helium bundle's replace two of them,
    `backends.cortex_m.helpers.helium_c`)."""
    return "".join(dsp_template_c(name, prefix) for name in templates)
