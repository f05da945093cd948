"""The bundle's dual multiply-accumulate helper: `<prefix>_dual_mac_s8x4`, `static inline` C in
`<model>_internal.h`, called by the MAC kernels scheduled for a DSP core (`tvm_ext.dual_mac`).

It adds to four int32 accumulators (four output channels) the dot products of one int8 input window with
each channel's int8 weights. Where the compiler defines `__ARM_FEATURE_DSP` (Armv7E-M, Armv8-M Mainline
with the DSP extension: -mcpu=cortex-m4, m7, m33), four inputs and four weights are read per 32-bit load,
widened by SXTB16 into int16 pairs (bytes 0 and 2, then bytes 1 and 3 with `ror #8`) and multiplied and
added two pairs at a time by SMLAD (gcc's `<arm_acle.h>`; the rotating SXTB16 as inline assembly, since gcc
12 has no `__ror`). Elsewhere (a host build of the same bundle) the same sums in portable C. Lengths that are
not a multiple of four end in the portable loop. Integer sums in another order: bit-exact.
"""

from __future__ import annotations

from packager.mac_tile_c import TILE_STORE_C, smlad_2x2_tile_c

from packager.depthwise_mac_c import depthwise_mac_helper_c
from packager.dual_mac_q15_c import dual_mac_q15_helper_c
from packager.row_dot_c import row_dot_helper_c

DUAL_MAC_CHANNELS = 4  # output channels per call: four accumulators stay in registers beside the pointers


def dual_mac_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s8x4"


def dual_mac_2px_helper_name(prefix: str) -> str:
    """The C name of the two-pixel helper in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s8x2x4"


def dual_mac_helper_c(prefix: str) -> str:
    """The C definition of the helper (and of the two word operations it uses) for the bundle `prefix`,
    followed by the helpers that share them: the two-pixel MAC on widened inputs (`packager.dual_mac_q15_c`),
    the depthwise helper (`packager.depthwise_mac_c`) and the row dot product (`packager.row_dot_c`)."""
    name = dual_mac_helper_name(prefix)
    return (f"""#include <string.h> /* memcpy: a 32-bit load of four int8 at any alignment */
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

/* acc + the four products of the input pairs (x02: bytes 0 and 2, x13: bytes 1 and 3) with the weight word. */
static inline int32_t {prefix}_mac_s8x4(int32_t acc, int32_t x02, int32_t x13, int32_t weights)
{{
    acc = __smlad(x02, __sxtb16(weights), acc);
    return __smlad(x13, {prefix}_sxtb16_ror8(weights), acc);
}}
#endif

/* acc[c] += sum over r < rows, k < row_len of x[r * x_row_stride + k] * w[c * w_channel_stride + r * row_len + k],
   for the four channels c < 4 (strides and lengths in elements). */
static inline int32_t {name}(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride,
                                  int32_t w_channel_stride, int32_t rows, int32_t row_len)
{{
    int32_t acc0 = acc[0], acc1 = acc[1], acc2 = acc[2], acc3 = acc[3];
    const int8_t *w0 = w, *w1 = w + w_channel_stride, *w2 = w1 + w_channel_stride, *w3 = w2 + w_channel_stride;
    for (int32_t r = 0; r < rows; ++r) {{
        const int8_t *xr = x + r * x_row_stride;
        int32_t k = 0;
#if defined(__ARM_FEATURE_DSP)
        for (; k + 4 <= row_len; k += 4) {{
            const int32_t word = {prefix}_load_s8x4(xr + k);
            const int32_t x02 = __sxtb16(word), x13 = {prefix}_sxtb16_ror8(word);
            acc0 = {prefix}_mac_s8x4(acc0, x02, x13, {prefix}_load_s8x4(w0 + k));
            acc1 = {prefix}_mac_s8x4(acc1, x02, x13, {prefix}_load_s8x4(w1 + k));
            acc2 = {prefix}_mac_s8x4(acc2, x02, x13, {prefix}_load_s8x4(w2 + k));
            acc3 = {prefix}_mac_s8x4(acc3, x02, x13, {prefix}_load_s8x4(w3 + k));
        }}
#endif
        for (; k < row_len; ++k) {{
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
""" + _two_pixel_helper_c(prefix) + dual_mac_q15_helper_c(prefix) + depthwise_mac_helper_c(prefix)
            + row_dot_helper_c(prefix))


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
