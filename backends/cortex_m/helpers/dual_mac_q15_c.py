"""The bundle's two-pixel dual MAC on inputs widened once per pixel pair (CMSIS-NN's im2col to q15):
`<prefix>_widen_s8x2_q15` and `<prefix>_dual_mac_q15x2x4`, `static inline` C in `<model>_internal.h`
(after `backends.cortex_m.helpers.dual_mac_c`, whose word operations they use), called by the kernels of `backends.cortex_m.schedules.pixel_pairs`.

A pixel pair's two input windows (``rows`` runs of ``row_len`` int8, ``x_row_stride`` apart, the second
window ``x_pixel_stride`` after the first) are widened ONCE into a scratch of int32 words
(``q15_scratch_words``): per row and pixel, each whole group of four inputs x0..x3 as the int16 pairs
(x0, x2) and (x1, x3) that SXTB16 makes, then each of the row's last ``row_len % 4`` inputs as a word of its
own. Every output-channel tile then reads the pairs two words per LDRD and widens only its weights: per four
reduction elements and 2x2 tile (two pixels, two channels), two LDRD, two weight loads, four SXTB16 and eight
SMLAD, 19 instructions with the loop's (the int8 helper: 22, widening the inputs again in every tile).
Without DSP (a host build) the same words and products in portable C. Integer sums in another order:
bit-exact.
"""

from __future__ import annotations

from backends.cortex_m.helpers.mac_tile_c import TILE_STORE_C, smlad_2x2_tile_c



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


def dual_mac_q15_helper_c(prefix: str) -> str:
    """The C definitions of both helpers for the bundle `prefix` (after `backends.cortex_m.helpers.dual_mac_c`'s)."""
    widen, mac = widen_q15_helper_name(prefix), dual_mac_q15_helper_name(prefix)
    return f"""
/* Words of one widened row of row_len inputs: two per whole group of four, one per input left. */
static inline int32_t {prefix}_q15_row_words(int32_t row_len)
{{
    return row_len / 4 * 2 + row_len % 4;
}}

/* Two int16 as one word: lo in the low half, hi in the high half (what SXTB16 makes of two bytes). */
static inline int32_t {prefix}_pack_s16x2(int32_t lo, int32_t hi)
{{
    return (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
}}

/* For the two pixels p < 2 and rows r < rows, the row x[p * x_pixel_stride + r * x_row_stride + k], k < row_len,
   as the words q[(p * rows + r) * row_words + ...]: per whole group of four inputs x0..x3 the pairs (x0, x2)
   and (x1, x3), then each input left as a word (strides and lengths in elements). */
static inline int32_t {widen}(int32_t *q, const int8_t *x, int32_t x_row_stride, int32_t rows, int32_t row_len,
                                    int32_t x_pixel_stride)
{{
    for (int32_t p = 0; p < 2; ++p) {{
        for (int32_t r = 0; r < rows; ++r) {{
            const int8_t *xr = x + p * x_pixel_stride + r * x_row_stride;
            int32_t *qr = q + (p * rows + r) * {prefix}_q15_row_words(row_len);
            int32_t k = 0;
            for (; k + 4 <= row_len; k += 4, qr += 2) {{
#if defined(__ARM_FEATURE_DSP)
                const int32_t word = {prefix}_load_s8x4(xr + k);
                qr[0] = __sxtb16(word), qr[1] = {prefix}_sxtb16_ror8(word);
#else
                qr[0] = {prefix}_pack_s16x2(xr[k], xr[k + 2]), qr[1] = {prefix}_pack_s16x2(xr[k + 1], xr[k + 3]);
#endif
            }}
            for (int32_t left = row_len % 4; left > 0; --left, ++k) {{  /* a count: gcc -O2 misjudges k < row_len */
                *qr++ = xr[k];
            }}
        }}
    }}
    return 0;
}}

#if defined(__ARM_FEATURE_DSP)
/* Two words at a 4-byte aligned p (one LDRD), p moved on by two words. */
static inline const int32_t *{prefix}_load_q15x2(const int32_t *p, int32_t *pair02, int32_t *pair13)
{{
    int32_t low, high;
    __asm__("ldrd %0, %1, [%2], #8" : "=r"(low), "=r"(high), "+r"(p) : "m"(*(const int32_t(*)[2])p));
    *pair02 = low, *pair13 = high;
    return p;
}}
#else
/* x * (the low half of pair) + y * (its high half). */
static inline int32_t {prefix}_dot_s16x2(int32_t pair, int32_t x, int32_t y)
{{
    return x * (int16_t)(pair & 0xFFFF) + y * (pair >> 16);
}}
#endif

/* acc_p[c] += sum over r < rows, k < row_len of x_p[r][k] * w[c * w_channel_stride + r * row_len + k] for the
   two pixels p < 2 (acc_0: acc_a, acc_1: acc_b) whose rows x_p[r] the widening helper wrote to the 4-byte
   aligned q, and the four channels c < 4 (strides and lengths in elements). */
static inline int32_t {mac}(int32_t *acc_a, int32_t *acc_b, const int32_t *q, const int8_t *w,
                                     int32_t w_channel_stride, int32_t rows, int32_t row_len)
{{
    const int32_t window = rows * {prefix}_q15_row_words(row_len);
    for (int32_t c = 0; c < 4; c += 2) {{
        int32_t a0 = acc_a[c], a1 = acc_a[c + 1], b0 = acc_b[c], b1 = acc_b[c + 1];
        const int8_t *w0 = w + c * w_channel_stride, *w1 = w0 + w_channel_stride;
        const int32_t *qa = q, *qb = q + window;
        for (int32_t r = 0; r < rows; ++r) {{
            int32_t k = 0;
            for (; k + 4 <= row_len; k += 4) {{
#if defined(__ARM_FEATURE_DSP)
                const int32_t weights0 = {prefix}_load_s8x4(w0 + k), weights1 = {prefix}_load_s8x4(w1 + k);
                int32_t a02, a13, b02, b13;
                qa = {prefix}_load_q15x2(qa, &a02, &a13);
                qb = {prefix}_load_q15x2(qb, &b02, &b13);
{smlad_2x2_tile_c(prefix, "                ")}#else
                a0 += {prefix}_dot_s16x2(qa[0], w0[k], w0[k + 2]) + {prefix}_dot_s16x2(qa[1], w0[k + 1], w0[k + 3]);
                a1 += {prefix}_dot_s16x2(qa[0], w1[k], w1[k + 2]) + {prefix}_dot_s16x2(qa[1], w1[k + 1], w1[k + 3]);
                b0 += {prefix}_dot_s16x2(qb[0], w0[k], w0[k + 2]) + {prefix}_dot_s16x2(qb[1], w0[k + 1], w0[k + 3]);
                b1 += {prefix}_dot_s16x2(qb[0], w1[k], w1[k + 2]) + {prefix}_dot_s16x2(qb[1], w1[k + 1], w1[k + 3]);
                qa += 2, qb += 2;
#endif
            }}
            for (int32_t left = row_len % 4; left > 0; --left, ++k) {{  /* a row's last inputs, a word each */
                const int32_t xa = *qa++, xb = *qb++;
                a0 += xa * w0[k], a1 += xa * w1[k];
                b0 += xb * w0[k], b1 += xb * w1[k];
            }}
            w0 += row_len, w1 += row_len;
        }}
{TILE_STORE_C}    }}
    return 0;
}}
"""
