"""The bundle's depthwise multiply-accumulate helpers: `<prefix>_depthwise_mac_s8x4` (int8 inputs) and
`<prefix>_depthwise_mac_s16x4` (int16 inputs: TFLite's 16x8 operators whose sums fit int32), `static inline` C in
`<model>_internal.h` beside the dual MAC (`templates/dsp_words.h.in`, whose word loads and rotating SXTB16 they use),
called by the depthwise kernels scheduled for a DSP core (`backends.cortex_m.schedules.depthwise_mac`).

Each adds to four int32 accumulators (four consecutive channels of one output pixel) the products of each
window tap's four input channels with the tap's four int8 weights: channels innermost, as NHWC lays them out, so
each tap is one 32-bit load of weights and one (int8) or two (int16) of inputs. Where the compiler defines
`__ARM_FEATURE_DSP`, SXTB16 widens the weight word into int16 pairs (bytes 0 and 2, then 1 and 3) and the
16-bit multiply-accumulates SMLA<x><y> pick the halves: int8 inputs are widened the same way, so SMLABB/SMLATT
pair bottom with bottom and top with top; int16 inputs are already pairs in their two words (channels 0 and 1,
2 and 3), so SMLABB, SMLATB, SMLABT and SMLATT pick each channel's input half beside its weight half, with no
packing: two input loads, one weight load, two SXTB16 and four MACs per tap (PKHBT/PKHTB into SXTB16's order,
as `<prefix>_dual_mac_s16x4` does, add two per tap: a 32x32x16 3x3 SAME layer measured 1,555,720 instructions
against 1,432,488 on cortex-m4f). Depthwise has one product per channel and tap, so SMLAD's
two products would need two taps of one channel in one word: two packs of inputs and two of weights per
channel pair, more than they save. Elsewhere the same sums in portable C. The sums are held in locals
(registers once the helper is inlined) and stored once per call.
Both window loops step by three taps (rows) written out, then the one or two left: the kernels pass the
sizes as constants, so where the helper is inlined a window of up to 3x3 taps (the common depthwise kernel,
and the clipped windows of its padded border) runs as straight-line taps: no loop counters, only loads at
constant offsets. `<prefix>_depthwise_box_s8x4` (`_s16x4`) is the same helper kept out of line (one copy per
bundle) for the clipped windows of a padded border (`tvm_ext.schedule.border_split`), whose sizes differ per rectangle:
code bytes for a few more instructions per call on border pixels. Each channel's products are integer sums:
bit-exact in any order.

`<prefix>_depthwise_mac_s8x4w16` (`_box_`, `_pad_`, and the fused tiles and border helpers of
`templates/depthwise_tiles.h.in`) take the weights widened to int16 at compile time (`tvm_ext.transform.int8.conv`,
the profile's `widened_depthwise_taps`): a tap's two weight words (channels 0 and 1, 2 and 3) one LDRD, paired with
SXTB16's input halves by SMLABB/SMLABT/SMLATB/SMLATT, 8 instructions a tap instead of 10, for twice the depthwise
weights' bytes. Measured on cortex-m4f (instructions, code B, weights B), before / after: kws_ref_model 4,509,130,
4,648, 28,272 / 4,383,042, 4,548, 30,576 (its 3x3 layer on 25x5x64 325,933 -> 294,411).

The C is hand-written: `templates/depthwise_mac.h.in` (its contract in its leading comment), unit-tested on the
host and under QEMU by `tests/c/test_depthwise_mac.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form

DEPTHWISE_MAC_TEMPLATE = "depthwise_mac.h.in"
DEPTHWISE_TILES_TEMPLATE = "depthwise_tiles.h.in"
"""The fused channel tiles (`<prefix>_depthwise_tiles_s8x4`, `_s8x4_b16`: an interior pixel's window sums and
requantization of every channel, the sums started at the biases), after this template and the requantization
epilogue's (`requantize_small_c`) in a bundle."""
DEPTHWISE_PAIR_TEMPLATE = "depthwise_pair.h.in"
"""The fused channel tiles of two interior pixels at once (`<prefix>_depthwise_pair_s8x4w16`, `_b16`), after
DEPTHWISE_TILES_TEMPLATE in a bundle (a library of its own: `backends.cortex_m.helpers.DEPTHWISE_PAIR_HELPERS`)."""
DEPTHWISE_PIXEL_TEMPLATE = "depthwise_pixel.h.in"
"""The fused tiles of one pixel of any channel count from four (`<prefix>_depthwise_pixel_s8x4`, `_b16`: the last
tile overlapping), after DEPTHWISE_TILES_TEMPLATE in a bundle (a library of its own:
`backends.cortex_m.helpers.DEPTHWISE_PIXEL_HELPERS`)."""
DEPTHWISE_ROWS_TEMPLATE = "depthwise_rows.h.in"
"""A 3x3 depthwise layer as channel rows (`<prefix>_depthwise_rows3x3_s8`: one channel's weights in registers over
its output rows, its input rows widened to int16 once into a ring on the stack), after DEPTHWISE_MAC_TEMPLATE and
the requantization epilogue's in a bundle (a library of its own: `backends.cortex_m.helpers.DEPTHWISE_ROWS_HELPERS`)."""
DEPTHWISE_ROWS_ANY_TEMPLATE = "depthwise_rows_any.h.in"
"""A depthwise layer of any other window as channel rows (`<prefix>_depthwise_rows_s8`: its weights packed on the
stack), after DEPTHWISE_ROWS_TEMPLATE, whose ring and widening it reads (a library of its own:
`backends.cortex_m.helpers.DEPTHWISE_ROWS_ANY_HELPERS`)."""
_TAGS = {"int8": "s8", "int16": "s16"}
DEPTHWISE_MAC_INPUT_TYPES = tuple(_TAGS)
"""The input types of the depthwise helpers (their weights are int8)."""


WEIGHT_TAGS = {"int8": "", "int16": "w16"}
"""The depthwise helpers' name suffix per weight type: int8 as TFLite stores them, or int16 (a DSP core's weights
widened at compile time, `tvm_ext.transform.int8.conv`: a tap's weights one LDRD, no SXTB16)."""


def depthwise_mac_helper_name(prefix: str, data: str = "int8", weights: str = "int8") -> str:
    """The C name of the helper of ``data`` inputs and ``weights`` in the bundle `prefix`."""
    return f"{prefix}_depthwise_mac_{_TAGS[data]}x4{WEIGHT_TAGS[weights]}"


def depthwise_box_helper_name(prefix: str, data: str = "int8", weights: str = "int8") -> str:
    """The C name of the helper's one out-of-line copy in the bundle `prefix` (same arguments and sums)."""
    return f"{prefix}_depthwise_box_{_TAGS[data]}x4{WEIGHT_TAGS[weights]}"


def dsp_depthwise_tiles_helper_name(prefix: str, bias: str, window: str = "", kind: str = "tiles",
                                    weights: str = "int8") -> str:
    """The C name of the fused channel tiles' helper for biases of type `bias` ("int32" or "int16") and weights of
    type `weights` ("int8", or "int16": widened) in the bundle `prefix`: the inlined one, or where `window` is
    "3x3" or "5x5" the out-of-line copy for such windows; of an interior pixel's tiles (`kind` "tiles") or a border
    pixel's ("border")."""
    name = f"{prefix}_depthwise_{kind}{window}_s8x4{WEIGHT_TAGS[weights]}"
    return bias_form(name, bias)


def dsp_depthwise_pad_helper_name(prefix: str, weights: str = "int8") -> str:
    """The C name of the DSP cores' padding products of a border pixel's four-channel tile in the bundle `prefix`,
    over weights of type `weights`."""
    return f"{prefix}_depthwise_pad_s8x4{WEIGHT_TAGS[weights]}"


def dsp_depthwise_pixel_helper_name(prefix: str, bias: str, weights: str = "int8", tail: bool = False) -> str:
    """The C name of one pixel's fused tiles of any channel count over weights of type `weights` ("int8", or
    "int16": widened at compile time) for biases of type `bias` ("int32" or "int16") in the bundle `prefix`; with
    `tail` (int8 weights), the form whose last channel runs alone (a count one more than a multiple of four)."""
    return bias_form(f"{prefix}_depthwise_pixel{'_tail' if tail else ''}_s8x4{WEIGHT_TAGS[weights]}", bias)


def dsp_depthwise_pair_helper_name(prefix: str, bias: str) -> str:
    """The C name of the two-pixel fused channel tiles (int16 weights) for biases of type `bias` ("int32" or
    "int16") in the bundle `prefix`."""
    return bias_form(f"{prefix}_depthwise_pair_s8x4w16", bias)
