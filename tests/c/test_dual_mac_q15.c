/* Unit test of the Cortex-M two-pixel dual MAC on widened inputs (backends/cortex_m/helpers/templates/
 * dual_mac_q15.h.in after dsp_words.h.in, with the prefix lp): lp_widen_s8x2_q15 writes exactly
 * 2 * rows * lp_q15_row_words(row_len) words (the next word untouched), and lp_dual_mac_q15x2x4 on them adds the
 * plain sums of both pixels' windows, for 0 to 3 rows, every row length up to 35 (whole groups of four and
 * every remainder), row strides at and above the row length, pixels apart or overlapping, weight channel
 * strides at and above a channel's weights (odd ones included), inputs and weights at every byte alignment and
 * values over the whole int8 range (-128 and 127 forced in) or all -128 (the largest products). Built by
 * tests/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (SXTB16, LDRD, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac_q15.h"

#define BUFFER 512 /* elements: past the farthest one any case reads (under 430) */
#define SCRATCH_WORDS (2 * WINDOW_ROWS_MAX * (WINDOW_ROW_LEN_MAX / 4 * 2 + WINDOW_ROW_LEN_MAX % 4) + 1) /* and one past */
#define UNTOUCHED 0x5A5A5A5A

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    static int32_t q[SCRATCH_WORDS];
    uint32_t state = 7;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int8_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
        const int32_t words = 2 * wc.rows * lp_q15_row_words(wc.row_len);
        int32_t acc[8], expected[8];
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        for (int32_t j = 0; j < SCRATCH_WORDS; ++j) {
            q[j] = UNTOUCHED;
        }
        for (int32_t j = 0; j < 8; ++j) {
            acc[j] = expected[j] = start_value(j);
        }
        for (int32_t p = 0; p < 2; ++p) {
            plain_window_mac(expected + 4 * p, xo + p * wc.x_pixel_stride, NULL, wo, wc.x_row_stride,
                             wc.w_channel_stride, wc.rows, wc.row_len);
        }
        cases += 1;
        /* each call's buffers exactly what it reads and writes, against no-access memory */
        const int32_t x_bytes = guarded_span(wc.rows, wc.row_len, wc.x_row_stride, 1);
        int32_t *const words_at = guarded_copy(0, q, 4 * words);
        int32_t returned = lp_widen_s8x2_q15(words_at, guarded_copy(1, xo, x_bytes == 0 ? 0 : wc.x_pixel_stride
                                                                                          + x_bytes),
                                             wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride);
        returned |= lp_dual_mac_q15x2x4(guarded_copy(2, acc, 16), guarded_copy(3, acc + 4, 16), words_at,
                                        guarded_copy(4, wo, guarded_span(4, wc.rows * wc.row_len,
                                                                         wc.w_channel_stride, 1)),
                                        wc.w_channel_stride, wc.rows, wc.row_len);
        guarded_back(0, q, 4 * words);
        guarded_back(2, acc, 16);
        guarded_back(3, acc + 4, 16);
        if (returned != 0 || q[words] != UNTOUCHED) {
            failures += 1;
            printf("wrong words: case %ld\n", (long)i);
            continue;
        }
        for (int32_t j = 0; j < 8; ++j) {
            if (acc[j] != expected[j]) {
                failures += 1;
                printf("wrong sum %ld: case %ld\n", (long)j, (long)i);
                break;
            }
        }
    }
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
