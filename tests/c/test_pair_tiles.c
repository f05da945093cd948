/* Unit test of the DSP cores' fused pixel-pair channel tiles (backends/cortex_m/helpers/templates/pair_tiles.h.in
 * after dsp_words.h.in, dual_mac_q15.h.in and requantize_small.h.in, with the prefix lp): lp_pair_tiles_s8,
 * _s8_b16, _double_s8 and _double_s8_b16 against the plain sums of both pixels' windows from the bias and the
 * bundle's scalar requantization (lp_requantize_double_small, or lp_requantize_double for _double, and
 * lp_saturate_int8), for the window MAC tests' windows (0 to 3 rows, every row
 * length up to 35: whole groups of four, every remainder, and groups of four a multiple of four or not; row
 * strides at and above the row length; pixels apart or overlapping; inputs and weights at every byte alignment;
 * values over the whole int8 range or all at the minimum), 0 to 3 tiles of four channels, biases up to +-2^28
 * (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points; for _double also biases up to
 * +-2^30 (sums beyond the small epilogue's domain), every shift -31..30 and multipliers of any sign, INT32_MIN
 * among them (its square saturates); the scratch written within
 * 2 * rows * lp_q15_row_words(row_len) words, nothing written between or past the pixels' channels. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU
 * (the assembly groups). Windows of eight inputs in two whole groups also run lp_pair_tiles_eight_any (their
 * inputs held in registers), half the variants each. Every case also runs lp_pair_tiles_direct_s8
 * (pair_tiles_direct.h.in: no scratch, the inputs widened on the fly; q left untouched), and every "double_small"
 * case lp_pair_tiles_part_s8 (_b16; pair_tiles_part.h.in) on a channel count that is not a multiple of four (1 to 12:
 * an odd last channel, or a last tile of two), and lp_pair_tiles_lut_s8 (_b16; lp_pair_tiles_eight_any with the table on
 * eight-input windows) and lp_pair_tiles_part_lut_s8 (_b16) with a table permuting the int8 values, its outputs mapped
 * back by the inverse permutation before the check. Prints "ok <count>" and exits 0, or names the first failures and
 * exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "pair_tiles.h"

#define BUFFER 2048 /* elements: past the farthest input (under 430) and weight (under 1400) any case reads */
#define MAX_CHANNELS 12
_Static_assert(MAX_CHANNELS <= PAIR_CHANNELS_MAX, "draw_pair_constants draws at most PAIR_CHANNELS_MAX channels");
/* the most words a case's scratch takes, and one past */
#define SCRATCH_WORDS (2 * WINDOW_ROWS_MAX * (WINDOW_ROW_LEN_MAX / 4 * 2 + WINDOW_ROW_LEN_MAX % 4) + 1)
#define UNTOUCHED 0x5A5A5A5A
#define LUT_STEP 37 /* odd: i -> i * LUT_STEP + LUT_SHIFT (mod 256) permutes the table's 256 entries */
#define LUT_SHIFT 11

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    static int32_t q[SCRATCH_WORDS];
    pair_constants k;
    uint32_t state = 7;
    int32_t cases = 0, failures = 0;
    int8_t table[256], inverse[256]; /* entry v + 128 for the value v */
    for (int32_t i = 0; i < 256; ++i) {
        const int32_t mapped = (i * LUT_STEP + LUT_SHIFT) % 256;
        table[i] = (int8_t)(mapped - 128);
        inverse[mapped] = (int8_t)(i - 128);
    }
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int8_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
        const int32_t words = 2 * wc.rows * lp_q15_row_words(wc.row_len);
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        for (int32_t variant = 0; variant < 8; ++variant) {
            const int32_t channels = variant % 4 * 4;
            const int rounding_any = variant >= 4;
            const int narrow = (i + channels / 4) % 2 == 1;
            /* the sums must stay within int32 (the contract): _double's wide biases within +-2^30 */
            draw_pair_constants(&k, MAX_CHANNELS, rounding_any, 0, cases, &state);
            int8_t out[2 * (MAX_CHANNELS + PAIR_GUARD)];
            int32_t returned, wrong;
            for (int direct = 0; direct < (rounding_any ? 2 : 5); ++direct) {
                /* 2: the partial tiles, 3: the table, 4: the partial tiles and the table */
                const int part = direct == 2 || direct == 4, lut = direct >= 3;
                const int eight = wc.rows * wc.row_len == 8 && wc.row_len % 4 == 0 && variant % 2 == 1;
                const int32_t count = part ? variant % 4 * 3 + 1 + i % 3 : channels;
                const int32_t out_pixel_stride = count + PAIR_GUARD;
                for (int32_t j = 0; j < SCRATCH_WORDS; ++j) {
                    q[j] = UNTOUCHED;
                }
                for (int32_t j = 0; j < 2 * (MAX_CHANNELS + PAIR_GUARD); ++j) {
                    out[j] = PAIR_UNTOUCHED;
                }
                /* every buffer exactly what the call reads and writes, against no-access memory */
                const int32_t w_channels = part ? (count + 3) / 4 * 4 : count; /* the partial tiles: whole tiles */
                const pair_guarded g = pair_guard(out, out_pixel_stride, 2, count, xo, &wc, q, direct == 1 ? 0 : words,
                                                  wo, guarded_span(w_channels, wc.rows * wc.row_len,
                                                                   wc.w_channel_stride, 1), &k, narrow);
                if (lut && part && narrow) {
                    returned = lp_pair_tiles_part_lut_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift,
                                                             k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                             wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                                             count, table);
                } else if (lut && part) {
                    returned = lp_pair_tiles_part_lut_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift,
                                                         k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                         wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                                         count, table);
                } else if (lut && eight) {
                    returned = lp_pair_tiles_eight_any(g.out, g.x, g.w,
                                                       narrow ? (const void *)g.bias16 : (const void *)g.bias,
                                                       narrow ? 2 : 4, 0, g.multiplier, g.shift, k.zero_point,
                                                       wc.x_row_stride, wc.rows, wc.x_pixel_stride, out_pixel_stride,
                                                       wc.w_channel_stride, channels, table + 128);
                } else if (lut && narrow) {
                    returned = lp_pair_tiles_lut_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift,
                                                        k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                        wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                                        channels, table);
                } else if (lut) {
                    returned = lp_pair_tiles_lut_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                    wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                    out_pixel_stride, wc.w_channel_stride, channels, table);
                } else if (part && narrow) {
                    returned = lp_pair_tiles_part_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift,
                                                         k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                         wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                                         count);
                } else if (part) {
                    returned = lp_pair_tiles_part_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                     wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                     out_pixel_stride, wc.w_channel_stride, count);
                } else if (direct) {  /* no scratch: the inputs widened on the fly */
                    returned = lp_pair_tiles_direct_s8(g.out, g.x, g.w,
                                                       narrow ? (const void *)g.bias16 : (const void *)g.bias,
                                                       narrow ? 2 : 4, rounding_any, g.multiplier, g.shift,
                                                       k.zero_point,
                                                       wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                       out_pixel_stride, wc.w_channel_stride, channels);
                } else if (eight) {
                    /* the eight-input path, which the entry points take for sizes constant at the call */
                    returned = lp_pair_tiles_eight_any(g.out, g.x, g.w,
                                                       narrow ? (const void *)g.bias16 : (const void *)g.bias,
                                                       narrow ? 2 : 4, rounding_any, g.multiplier, g.shift,
                                                       k.zero_point,
                                                       wc.x_row_stride, wc.rows, wc.x_pixel_stride, out_pixel_stride,
                                                       wc.w_channel_stride, channels, NULL);
                } else if (narrow && rounding_any) {
                    returned = lp_pair_tiles_double_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift,
                                                           k.zero_point,
                                                           wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                           out_pixel_stride, wc.w_channel_stride, channels);
                } else if (rounding_any) {
                    returned = lp_pair_tiles_double_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift,
                                                       k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                       wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                                       channels);
                } else if (narrow) {
                    returned = lp_pair_tiles_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                                    wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                    out_pixel_stride, wc.w_channel_stride, channels);
                } else {
                    returned = lp_pair_tiles_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                out_pixel_stride, wc.w_channel_stride, channels);
                }
                pair_unguard(&g, out, q);
                for (int32_t p = 0; lut && p < 2; ++p) { /* the table's entries back to the values looked up */
                    for (int32_t c = 0; c < count; ++c) {
                        out[p * out_pixel_stride + c] = inverse[out[p * out_pixel_stride + c] + 128];
                    }
                }
                const pair_epilogue epilogue = {&k, narrow,
                                                 rounding_any ? lp_requantize_double : lp_requantize_double_small};
                wrong = returned != 0 || q[direct == 1 ? 0 : words] != UNTOUCHED
                    || pair_outputs_wrong(out, MAX_CHANNELS, 2, count, xo, wo, wc.w_channel_stride, &wc, &epilogue);
                cases += 1;
                if (wrong) {
                    failures += 1;
                    if (failures <= 5) {
                        printf("wrong case %ld: rows %ld, row_len %ld, channels %ld, narrow %d, double %d, "
                               "direct %d, part %d, table %d\n", (long)i, (long)wc.rows, (long)wc.row_len, (long)count,
                               narrow, rounding_any, direct == 1, part, lut);
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
