/* Unit test of the Cortex-M dual MAC over int16 weights (backends/cortex_m/helpers/templates/dual_mac_w16.h.in after
 * dsp_words.h.in, with the prefix lp): lp_dual_mac_s16x4_w16 against the plain loop of its contract, for 0 to 3 rows,
 * every row length up to 35 (whole pairs and an odd last input), row strides at and above the row length, weight
 * channel strides at and above a channel's weights, inputs and weights at both 2-byte alignments of a word, inputs
 * over the whole int16 range and weights over the int8 range widened (-32768, 32767, -128, 127 forced in: a 16x8
 * layer's), and all at the minimum (the largest products); each accumulator gains its sum and keeps what it held;
 * each call's buffers exactly what it reads and writes, against no-access memory. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (the portable C) and for cortex-m4f under QEMU
 * (SMLAD on the word pairs). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac_w16.h"

#define BUFFER 512 /* elements: past the farthest one any case reads (under 430) */

/* acc[c] += the contract's plain sums for c < 4. */
static void plain_w16(int32_t *acc, const int16_t *x, const int16_t *w, int32_t x_row_stride,
                      int32_t w_channel_stride, int32_t rows, int32_t row_len)
{
    for (int32_t c = 0; c < 4; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < row_len; ++k) {
                acc[c] += x[r * x_row_stride + k] * w[c * w_channel_stride + r * row_len + k];
            }
        }
    }
}

int main(void)
{
    static int8_t w8[BUFFER];
    static int16_t x[BUFFER], w[BUFFER];
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        fill_s16(x, BUFFER, &state, wc.all_min);
        fill_s8(w8, BUFFER, &state, wc.all_min);
        for (int32_t k = 0; k < BUFFER; ++k) {
            w[k] = w8[k];
        }
        const int16_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
        int32_t got[4], expected[4];
        for (int32_t c = 0; c < 4; ++c) {
            got[c] = expected[c] = start_value(c);
        }
        const int32_t x_bytes = guarded_span(wc.rows, wc.row_len, wc.x_row_stride, 2);
        const int32_t w_bytes = guarded_span(4, wc.rows * wc.row_len, wc.w_channel_stride, 2);
        plain_w16(expected, xo, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len);
        const int32_t returned = lp_dual_mac_s16x4_w16(guarded_copy(0, got, 16), guarded_copy(1, xo, x_bytes),
                                                       guarded_copy(2, wo, w_bytes), wc.x_row_stride,
                                                       wc.w_channel_stride, wc.rows, wc.row_len);
        guarded_back(0, got, 16);
        if (call_wrong(returned, got, expected, 4)) {
            failures += 1;
            printf("wrong s16x4_w16: case %ld\n", (long)i);
        }
        cases += 1;
    }
    return cases_verdict(cases, failures);
}
