/* Unit test of the Cortex-M depthwise MAC helpers (backends/cortex_m/helpers/templates/depthwise_mac.h.in after
 * dsp_words.h.in, with the prefix lp): lp_depthwise_mac_s8x4, lp_depthwise_mac_s16x4 and their out-of-line
 * copies lp_depthwise_box_s8x4 and lp_depthwise_box_s16x4 against the plain loop of their contract, for every
 * window of 0 to 5 rows and 0 to 5 columns (the three-tap steps and the one or two taps left), column strides
 * of exactly four channels and wider (an NHWC row of more channels), row strides at and above a row's taps,
 * inputs and weights at every element alignment, values over the whole int8 and int16 ranges (-128, 127,
 * -32768, 32767 forced in) and all at the minimum (the largest products); each accumulator gains its sum and
 * keeps what it held. Built by tests/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f
 * under QEMU (SXTB16, SMLABB/SMLABT/SMLATB/SMLATT). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_mac.h"

#define BUFFER 1024 /* elements: past the farthest one any case reads (under 700) */
#define SIDE 5 /* the most rows and columns of a window */

/* The plain sums of the helpers' contract: acc[c] += x[r * x_row_stride + k * x_col_stride + c]
   * w[r * w_row_stride + k * w_col_stride + c] over r < rows, k < cols, for c < 4 (x8 or x16 the inputs). */
static void plain_depthwise(int32_t *acc, const int8_t *x8, const int16_t *x16, const int8_t *w, int32_t x_row_stride,
                            int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols)
{
    for (int32_t c = 0; c < 4; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                const int32_t at = r * x_row_stride + k * x_col_stride + c;
                acc[c] += (x8 != NULL ? x8[at] : x16[at]) * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

int main(void)
{
    static int8_t x8[BUFFER], w[BUFFER];
    static int16_t x16[BUFFER];
    uint32_t state = 3;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 0; rows <= SIDE; ++rows) {
            for (int32_t cols = 0; cols <= SIDE; ++cols) {
                for (int32_t layout = 0; layout < 3; ++layout) {
                    const depthwise_layout l = depthwise_layout_of(4, rows, cols, layout, 0);
                    const int8_t *x8o = x8 + l.x_offset, *wo = w + l.w_offset;
                    const int16_t *x16o = x16 + l.x_offset;
                    fill_s8(x8, BUFFER, &state, all_min);
                    fill_s8(w, BUFFER, &state, all_min);
                    fill_s16(x16, BUFFER, &state, all_min);
                    for (int32_t helper = 0; helper < 4; ++helper) { /* s8 mac, s8 box, s16 mac, s16 box */
                        const int wide = helper >= 2;
                        int32_t acc[4], expected[4], returned;
                        for (int32_t c = 0; c < 4; ++c) {
                            acc[c] = expected[c] = start_value(c);
                        }
                        plain_depthwise(expected, wide ? NULL : x8o, wide ? x16o : NULL, wo, l.x_row_stride,
                                        l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols);
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        const int32_t x_bytes = guarded_box(rows, cols, l.x_row_stride, l.x_col_stride, 4, 1);
                        int32_t *const sums = guarded_copy(0, acc, 16);
                        const int8_t *const weights = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                                      l.w_col_stride, 4, 1));
                        switch (helper) {
                        case 0:
                            returned = lp_depthwise_mac_s8x4(sums, guarded_copy(1, x8o, x_bytes * 1), weights,
                                                             l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                             l.w_col_stride, rows, cols);
                            break;
                        case 1:
                            returned = lp_depthwise_box_s8x4(sums, guarded_copy(1, x8o, x_bytes * 1), weights,
                                                             l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                             l.w_col_stride, rows, cols);
                            break;
                        case 2:
                            returned = lp_depthwise_mac_s16x4(sums, guarded_copy(1, x16o, x_bytes * 2), weights,
                                                              l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                              l.w_col_stride, rows, cols);
                            break;
                        default:
                            returned = lp_depthwise_box_s16x4(sums, guarded_copy(1, x16o, x_bytes * 2), weights,
                                                              l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                              l.w_col_stride, rows, cols);
                            break;
                        }
                        guarded_back(0, acc, 16);
                        cases += 1;
                        if (call_wrong(returned, acc, expected, 4)) {
                            failures += 1;
                            printf("wrong helper %ld: rows %ld, cols %ld, layout %ld\n", (long)helper, (long)rows,
                                   (long)cols, (long)layout);
                        }
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
