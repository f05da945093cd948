/* Unit test of the Cortex-M two-pixel dual MAC on widened inputs (backends/cortex_m/helpers/templates/
 * dual_mac_q15.h.in after dsp_words.h.in, with the prefix lp): lp_widen_s8x2_q15 writes exactly
 * 2 * rows * lp_q15_row_words(row_len) words (the next word untouched), and lp_dual_mac_q15x2x4 on them adds the
 * plain sums of both pixels' windows, for 0 to 3 rows, every row length up to 13 (whole groups of four and
 * every remainder), row strides at and above the row length, pixels apart or overlapping, weight channel
 * strides at and above a channel's weights (odd ones included), inputs and weights at every byte alignment and
 * values over the whole int8 range (-128 and 127 forced in) or all -128 (the largest products). Built by
 * tests/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (SXTB16, LDRD, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac_q15.h"

#define BUFFER 512 /* elements: past the farthest one any case reads (under 200) */
#define SCRATCH_WORDS (2 * 3 * (13 / 4 * 2 + 13 % 4) + 1) /* the widest two windows' words and one past them */
#define UNTOUCHED 0x5A5A5A5A

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    static int32_t q[SCRATCH_WORDS];
    uint32_t state = 7;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 0; rows <= 3; ++rows) {
            for (int32_t row_len = 0; row_len <= 13; ++row_len) {
                for (int32_t layout = 0; layout < 3; ++layout) {
                    const int32_t x_row_stride = row_len + (layout == 0 ? 0 : 2 * layout + 1);
                    const int32_t w_channel_stride = rows * row_len + layout;
                    const int32_t x_pixel_stride = layout == 1 ? 3 : rows * x_row_stride + layout; /* 3: overlapping */
                    const int32_t offset = (rows + row_len + layout) % 4; /* every byte alignment of x and w */
                    const int8_t *xo = x + offset, *wo = w + (offset + 3) % 4;
                    const int32_t words = 2 * rows * lp_q15_row_words(row_len);
                    int32_t acc[8], expected[8];
                    fill_s8(x, BUFFER, &state, all_min);
                    fill_s8(w, BUFFER, &state, all_min);
                    for (int32_t i = 0; i < SCRATCH_WORDS; ++i) {
                        q[i] = UNTOUCHED;
                    }
                    for (int32_t i = 0; i < 8; ++i) {
                        acc[i] = expected[i] = start_value(i);
                    }
                    for (int32_t p = 0; p < 2; ++p) {
                        for (int32_t c = 0; c < 4; ++c) {
                            for (int32_t r = 0; r < rows; ++r) {
                                for (int32_t k = 0; k < row_len; ++k) {
                                    expected[4 * p + c] += xo[p * x_pixel_stride + r * x_row_stride + k]
                                                           * wo[c * w_channel_stride + r * row_len + k];
                                }
                            }
                        }
                    }
                    cases += 1;
                    if (lp_widen_s8x2_q15(q, xo, x_row_stride, rows, row_len, x_pixel_stride) != 0
                        || q[words] != UNTOUCHED
                        || lp_dual_mac_q15x2x4(acc, acc + 4, q, wo, w_channel_stride, rows, row_len) != 0) {
                        failures += 1;
                        printf("wrong words: rows %ld, row_len %ld, layout %ld\n", (long)rows, (long)row_len, (long)layout);
                        continue;
                    }
                    for (int32_t i = 0; i < 8; ++i) {
                        if (acc[i] != expected[i]) {
                            failures += 1;
                            printf("wrong sum %ld: rows %ld, row_len %ld, layout %ld\n", (long)i, (long)rows,
                                   (long)row_len, (long)layout);
                            break;
                        }
                    }
                }
            }
        }
    }
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
