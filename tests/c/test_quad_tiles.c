/* Unit test of the DSP cores' fused channel tiles of two pixel pairs (backends/cortex_m/helpers/templates/
 * quad_tiles.h.in after dsp_words.h.in, dual_mac_q15.h.in, requantize_small.h.in and pair_tiles.h.in, with the
 * prefix lp): lp_quad_tiles_s8 and _s8_b16 against the plain sums of the four pixels' windows from the bias and the
 * bundle's scalar requantization (lp_requantize_double_small and lp_saturate_int8), for the window MAC tests'
 * windows whose rows are whole groups of four (0 to 3 rows, row lengths 0 to 32; row strides at and above the row
 * length; pixels apart or overlapping; inputs and weights
 * at every byte alignment; values over the whole int8 range or all at the minimum), four pixels evenly spaced, 0 to 13 channels (not only whole
 * tiles), biases up to +-2^28 (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points; the
 * scratch written within 2 * rows * row_len words, nothing written between or past the pixels' channels. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (the
 * assembly groups). Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "quad_tiles.h"

#define BUFFER 2048 /* elements: past the farthest input (under 430 + 2 pixels' 430) and weight (under 1400) any case reads */
#define MAX_CHANNELS 13
_Static_assert(MAX_CHANNELS <= PAIR_CHANNELS_MAX, "draw_pair_constants draws at most PAIR_CHANNELS_MAX channels");
#define SCRATCH_WORDS (2 * WINDOW_ROWS_MAX * WINDOW_ROW_LEN_MAX + 1) /* the most words a case's scratch takes, and one */
#define UNTOUCHED 0x5A5A5A5A
#define QUAD_BYTES (4 * (MAX_CHANNELS + PAIR_GUARD)) /* four pixels' outputs and guards */

/* Whether the outputs out (bytes < 4 * (max_channels + PAIR_GUARD)) of a call on four pixels of `channels` channels,
   out_pixel_stride = channels + PAIR_GUARD apart, differ from pair_expected_out's, or a byte beyond them from
   PAIR_UNTOUCHED. */
static int quad_outputs_wrong(const int8_t *out, int32_t channels, const int8_t *x, const int8_t *w,
                              const window_case *wc, const pair_epilogue *e)
{
    const int32_t out_pixel_stride = channels + PAIR_GUARD;
    int wrong = 0;
    for (int32_t j = 0; j < QUAD_BYTES; ++j) {
        const int32_t p = j / out_pixel_stride, c = j % out_pixel_stride;
        const int8_t want = p < 4 && c < channels ? pair_expected_out(x, w, wc->w_channel_stride, wc, p, c, e)
                                                  : PAIR_UNTOUCHED;
        wrong |= out[j] != want;
    }
    return wrong;
}

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    static int32_t q[SCRATCH_WORDS];
    pair_constants k;
    uint32_t state = 11;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        if (wc.row_len % 4 != 0) {
            continue;
        }
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        for (int32_t variant = 0; variant < 4; ++variant) {
            const int32_t channels = (i + 5 * variant) % (MAX_CHANNELS + 1);
            const int narrow = variant % 2 == 1;
            const int8_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
            draw_pair_constants(&k, MAX_CHANNELS, 0, 0, cases, &state);
            const int32_t out_pixel_stride = channels + PAIR_GUARD;
            int8_t out[QUAD_BYTES];
            for (int32_t j = 0; j < SCRATCH_WORDS; ++j) {
                q[j] = UNTOUCHED;
            }
            for (int32_t j = 0; j < QUAD_BYTES; ++j) {
                out[j] = PAIR_UNTOUCHED;
            }
            /* every buffer exactly what the call reads and writes, against no-access memory */
            const pair_guarded g = pair_guard(out, out_pixel_stride, 4, channels, xo, &wc, q, 2 * wc.rows * wc.row_len,
                                              wo, guarded_span(channels, wc.rows * wc.row_len, wc.w_channel_stride,
                                                               1), &k, narrow);
            const int32_t returned = narrow
                ? lp_quad_tiles_s8_b16(g.out, g.x, g.q, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                       wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride, out_pixel_stride,
                                       wc.w_channel_stride, channels)
                : lp_quad_tiles_s8(g.out, g.x, g.q, g.w, g.bias, g.multiplier, g.shift, k.zero_point, wc.x_row_stride,
                                   wc.rows, wc.row_len, wc.x_pixel_stride, out_pixel_stride, wc.w_channel_stride,
                                   channels);
            pair_unguard(&g, out, q);
            const pair_epilogue epilogue = {&k, narrow, lp_requantize_double_small};
            const int wrong = returned != 0 || q[2 * wc.rows * wc.row_len] != UNTOUCHED
                || quad_outputs_wrong(out, channels, xo, wo, &wc, &epilogue);
            cases += 1;
            if (wrong) {
                failures += 1;
                if (failures <= 5) {
                    printf("wrong case %ld: rows %ld, row_len %ld, channels %ld, narrow %d\n", (long)i, (long)wc.rows,
                           (long)wc.row_len, (long)channels, narrow);
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
