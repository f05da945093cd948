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
Elsewhere (a host build of the same bundle) the same sums in portable C. Lengths that are not a multiple of
four end in the portable loop. Integer sums in another order: bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.cortex_m.helpers.mac_tile_c import TILE_STORE_C, smlad_2x2_tile_c

from backends.cortex_m.helpers.depthwise_mac_c import depthwise_mac_helper_c
from backends.cortex_m.helpers.dual_mac_q15_c import dual_mac_q15_helper_c
from backends.cortex_m.helpers.row_dot_c import row_dot_helper_c

DUAL_MAC_CHANNELS = 4  # output channels per call: four accumulators stay in registers beside the pointers


@dataclass(frozen=True)
class _Inputs:
    """The input elements of a one-pixel dual MAC helper: their C type, the tag in the helper's name, the word
    load (of `_word_operations_c`) that reads them, and whether the helper guides gcc -O2 (arm-none-eabi 12.2)
    through an int16 row: a `<prefix>_schedule_barrier` after each channel's MACs (its pairs take two more
    live words, and the first scheduling pass hoists every channel's weight widening above the SMLADs and
    spills: 39 instructions per 16 MACs, 28 with the barriers) and the row's last inputs as a count (with
    ``k < row_len`` it misjudges the trip count: a false -Waggressive-loop-optimizations). The int8 helper
    keeps its measured code."""

    c_type: str
    tag: str
    load: str  # the word load's name after the prefix
    guided: bool = False

    def pairs(self, prefix: str, indent: str) -> str:
        """C declarations of x02 (inputs 0 and 2) and x13 (inputs 1 and 3) of the four inputs at xr + k, each
        line ``indent``ed."""
        load = f"{prefix}_{self.load}"
        if self.tag == "s8":
            lines = [f"const int32_t word = {load}(xr + k);",
                     f"const int32_t x02 = __sxtb16(word), x13 = {prefix}_sxtb16_ror8(word);"]
        else:
            lines = [f"const int32_t word01 = {load}(xr + k), word23 = {load}(xr + k + 2);",
                     f"const int32_t x02 = {prefix}_pack_low_halves(word01, word23),"
                     f" x13 = {prefix}_pack_high_halves(word01, word23);"]
        return "".join(f"{indent}{line}\n" for line in lines)


_INPUTS = {"int8": _Inputs("int8_t", "s8", "load_s8x4"),
           "int16": _Inputs("int16_t", "s16", "load_s16x2", guided=True)}
DUAL_MAC_INPUT_TYPES = tuple(_INPUTS)
"""The input types of the dual MAC helpers (their weights are int8)."""


def dual_mac_helper_name(prefix: str, data: str = "int8") -> str:
    """The C name of the helper of ``data`` inputs in the bundle `prefix`."""
    return f"{prefix}_dual_mac_{_INPUTS[data].tag}x4"


def dual_mac_2px_helper_name(prefix: str) -> str:
    """The C name of the two-pixel helper (int8 inputs) in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s8x2x4"


def dual_mac_helper_c(prefix: str) -> str:
    """The C definitions of the one-pixel helpers (int8 and int16 inputs), the two-pixel one (int8) and the
    word operations they use for the bundle `prefix`, followed by the helpers that share them: the two-pixel
    MAC on widened inputs (`backends.cortex_m.helpers.dual_mac_q15_c`), the depthwise helper (`backends.cortex_m.helpers.depthwise_mac_c`) and the
    row dot product (`backends.cortex_m.helpers.row_dot_c`)."""
    return (_word_operations_c(prefix) + "".join(_one_pixel_helper_c(prefix, data) for data in _INPUTS)
            + _two_pixel_helper_c(prefix) + dual_mac_q15_helper_c(prefix) + depthwise_mac_helper_c(prefix)
            + row_dot_helper_c(prefix))


def _word_operations_c(prefix: str) -> str:
    """The loads, widenings and packs of words the helpers share (DSP builds only)."""
    return f"""#include <string.h> /* memcpy: a 32-bit load of four int8 at any alignment */
#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>

/* Four int8 at p as one word (one LDR: Armv7E-M loads unaligned words). */
static inline int32_t {prefix}_load_s8x4(const int8_t *p)
{{
    int32_t word;
    memcpy(&word, p, sizeof word);
    return word;
}}

/* SXTB16 of the word rotated by 8 bits: bytes 1 and 3 sign-extended to two int16 halves. */
static inline int32_t {prefix}_sxtb16_ror8(int32_t word)
{{
    int32_t pairs;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(pairs) : "r"(word));
    return pairs;
}}

/* Two int16 at p as one word (one LDR, at any alignment): p[0] in the low half. */
static inline int32_t {prefix}_load_s16x2(const int16_t *p)
{{
    int32_t word;
    memcpy(&word, p, sizeof word);
    return word;
}}

/* PKHBT: the low halves of lo and hi as one word, lo's low. */
static inline int32_t {prefix}_pack_low_halves(int32_t lo, int32_t hi)
{{
    int32_t pair;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(pair) : "r"(lo), "r"(hi));
    return pair;
}}

/* PKHTB: the high halves of lo and hi as one word, lo's low. */
static inline int32_t {prefix}_pack_high_halves(int32_t lo, int32_t hi)
{{
    int32_t pair;
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(pair) : "r"(lo), "r"(hi));
    return pair;
}}

/* No instruction: the compiler's scheduler moves no instruction across it (a volatile asm). */
static inline void {prefix}_schedule_barrier(void)
{{
    __asm__ volatile("");
}}

/* acc + the four products of the input pairs (x02: inputs 0 and 2, x13: inputs 1 and 3) with the weight word. */
static inline int32_t {prefix}_mac_s8x4(int32_t acc, int32_t x02, int32_t x13, int32_t weights)
{{
    acc = __smlad(x02, __sxtb16(weights), acc);
    return __smlad(x13, {prefix}_sxtb16_ror8(weights), acc);
}}
#endif
"""


def _one_pixel_helper_c(prefix: str, data: str) -> str:
    """The one-pixel helper of ``data`` inputs: per four inputs of a row, their pairs made once feed the four
    channels. (No int16 two-pixel helper: its 2x2 tile's eight pairs and four accumulators spill, 53
    instructions per 16 MACs with gcc 12.2 -O2 against 28 for this helper.)"""
    inputs, name = _INPUTS[data], dual_mac_helper_name(prefix, data)
    pairs = inputs.pairs(prefix, "            ")
    barrier = f" {prefix}_schedule_barrier();" if inputs.guided else ""
    tail = ("for (int32_t left = row_len - k; left > 0; --left, ++k) {  /* a count: gcc misjudges k < row_len */"
            if inputs.guided else "for (; k < row_len; ++k) {")
    return f"""
/* acc[c] += sum over r < rows, k < row_len of x[r * x_row_stride + k] * w[c * w_channel_stride + r * row_len + k],
   for the four channels c < 4 (strides and lengths in elements). */
static inline int32_t {name}(int32_t *acc, const {inputs.c_type} *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t w_channel_stride, int32_t rows, int32_t row_len)
{{
    int32_t acc0 = acc[0], acc1 = acc[1], acc2 = acc[2], acc3 = acc[3];
    const int8_t *w0 = w, *w1 = w + w_channel_stride, *w2 = w1 + w_channel_stride, *w3 = w2 + w_channel_stride;
    for (int32_t r = 0; r < rows; ++r) {{
        const {inputs.c_type} *xr = x + r * x_row_stride;
        int32_t k = 0;
#if defined(__ARM_FEATURE_DSP)
        for (; k + 4 <= row_len; k += 4) {{
{pairs}            acc0 = {prefix}_mac_s8x4(acc0, x02, x13, {prefix}_load_s8x4(w0 + k));{barrier}
            acc1 = {prefix}_mac_s8x4(acc1, x02, x13, {prefix}_load_s8x4(w1 + k));{barrier}
            acc2 = {prefix}_mac_s8x4(acc2, x02, x13, {prefix}_load_s8x4(w2 + k));{barrier}
            acc3 = {prefix}_mac_s8x4(acc3, x02, x13, {prefix}_load_s8x4(w3 + k));
        }}
#endif
        {tail}
            const int32_t value = xr[k];
            acc0 += value * w0[k];
            acc1 += value * w1[k];
            acc2 += value * w2[k];
            acc3 += value * w3[k];
        }}
        w0 += row_len;
        w1 += row_len;
        w2 += row_len;
        w3 += row_len;
    }}
    acc[0] = acc0;
    acc[1] = acc1;
    acc[2] = acc2;
    acc[3] = acc3;
    return 0;
}}
"""


def _two_pixel_helper_c(prefix: str) -> str:
    """The two-pixel helper: each weight word loaded and widened feeds both pixels. It runs as two 2x2 tiles
    (channels 0 and 1, then 2 and 3): four accumulators, four input pairs and a weight pair stay in
    registers with the pointers (a 2x4 tile's eight accumulators would not)."""
    name = dual_mac_2px_helper_name(prefix)
    return f"""
/* acc_p[c] += sum over r < rows, k < row_len of x[p * x_pixel_stride + r * x_row_stride + k]
   * w[c * w_channel_stride + r * row_len + k], for the two pixels p < 2 (acc_0: acc_a, acc_1: acc_b) and the
   four channels c < 4 (strides and lengths in elements). */
static inline int32_t {name}(int32_t *acc_a, int32_t *acc_b, const int8_t *x, const int8_t *w,
                                    int32_t x_row_stride, int32_t w_channel_stride, int32_t rows, int32_t row_len,
                                    int32_t x_pixel_stride)
{{
    for (int32_t c = 0; c < 4; c += 2) {{
        int32_t a0 = acc_a[c], a1 = acc_a[c + 1], b0 = acc_b[c], b1 = acc_b[c + 1];
        const int8_t *w0 = w + c * w_channel_stride, *w1 = w0 + w_channel_stride;
        for (int32_t r = 0; r < rows; ++r) {{
            const int8_t *xa = x + r * x_row_stride, *xb = xa + x_pixel_stride;
            int32_t k = 0;
#if defined(__ARM_FEATURE_DSP)
            for (; k + 4 <= row_len; k += 4) {{
                const int32_t word_a = {prefix}_load_s8x4(xa + k), word_b = {prefix}_load_s8x4(xb + k);
                const int32_t a02 = __sxtb16(word_a), a13 = {prefix}_sxtb16_ror8(word_a);
                const int32_t b02 = __sxtb16(word_b), b13 = {prefix}_sxtb16_ror8(word_b);
                const int32_t weights0 = {prefix}_load_s8x4(w0 + k), weights1 = {prefix}_load_s8x4(w1 + k);
{smlad_2x2_tile_c(prefix, "                ")}            }}
#endif
            for (; k < row_len; ++k) {{  /* the last bytes of a row (the whole row without DSP) */
                a0 += xa[k] * w0[k], a1 += xa[k] * w1[k];
                b0 += xb[k] * w0[k], b1 += xb[k] * w1[k];
            }}
            w0 += row_len, w1 += row_len;
        }}
{TILE_STORE_C}    }}
    return 0;
}}
"""
