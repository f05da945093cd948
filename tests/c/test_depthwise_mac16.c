/* Unit test of the Helium 16-channel depthwise helpers (backends/cortex_m/helpers/templates/helium_depthwise16.h.in
 * after helium_lanes.h.in, with the prefix lp): lp_depthwise_mac_s8x16, its out-of-line copy lp_depthwise_box_s8x16
 * and the padding's products lp_depthwise_pad_s8x16 against the plain loops of their contracts, for every channel
 * count 0..38 (the predicated tails of both halves; past 16, whole tiles of 16 and a tail: a layer no tile divides), windows of 0 to 4 rows and columns (the three-tap steps and
 * the one or two taps left), column strides of exactly the tile and wider, row strides at and above a row's taps,
 * inputs and weights at every element alignment, values over the whole int8 range (-128 and 127 forced in) and all
 * at the minimum (the largest products), pad values -128, 0, 127 and 1 (a window's sums): each accumulator below
 * the count gains its sum and keeps what it held, and the ones past it (guards) are never written. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VLDRB.S16, VMULLB/VMULLT, predicated gathers and scatters, VMLA). Prints "ok <cases>" and exits 0, or names
 * the failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_mac16.h"

#define BUFFER 2048 /* elements: past the farthest one any case reads (under 1,600) */
#define SIDE 4      /* the most rows and columns of a window */
#define TILE 38     /* the most channels of a call: two whole tiles of 16 and a tail of 6 */
#define GUARD 4     /* accumulators after the tile that must keep their value */

/* The plain sums of the contracts: acc[c] += (x ? x[..] : pad) * w[..] over r < rows, k < cols, c < channels. */
static void plain(int32_t *acc, const int8_t *x, int32_t pad, const int8_t *w, int32_t x_row_stride,
                  int32_t x_col_stride, int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols,
                  int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                const int32_t value = x != NULL ? x[r * x_row_stride + k * x_col_stride + c] : pad;
                acc[c] += value * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

int main(void)
{
    static const int32_t pads[] = {-128, 0, 127, 1}; /* 1: a window's sums (an average pool's) */
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 5;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t channels = 0; channels <= TILE; ++channels) {
            for (int32_t rows = 0; rows <= SIDE; ++rows) {
                for (int32_t cols = 0; cols <= SIDE; ++cols) {
                    for (int32_t layout = 0; layout < 2; ++layout) {
                        const depthwise_layout l = depthwise_layout_of(TILE, rows, cols, layout, channels);
                        const int32_t x_row_stride = l.x_row_stride, x_col_stride = l.x_col_stride;
                        const int32_t w_row_stride = l.w_row_stride, w_col_stride = l.w_col_stride;
                        const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                        fill_s8(x, BUFFER, &state, all_min);
                        fill_s8(w, BUFFER, &state, all_min);
                        for (int32_t helper = 0; helper < 6; ++helper) { /* mac, box, pad -128, 0, 127, 1 */
                            const int32_t pad = helper >= 2 ? pads[helper - 2] : 0;
                            int32_t acc[TILE + GUARD], expected[TILE + GUARD], returned;
                            for (int32_t c = 0; c < TILE + GUARD; ++c) {
                                acc[c] = expected[c] = start_value(c);
                            }
                            plain(expected, helper >= 2 ? NULL : xo, pad, wo, x_row_stride, x_col_stride,
                                  w_row_stride, w_col_stride, rows, cols, channels);
                            /* every buffer exactly what the call reads and writes, against no-access memory */
                            int32_t *const sums = guarded_copy(0, acc, 4 * channels);
                            const int8_t *const g_x = guarded_copy(1, xo, guarded_box(rows, cols, x_row_stride,
                                                                                      x_col_stride, channels, 1));
                            const int8_t *const g_w = guarded_copy(2, wo, guarded_box(rows, cols, w_row_stride,
                                                                                      w_col_stride, channels, 1));
                            if (helper == 0) {
                                returned = lp_depthwise_mac_s8x16(sums, g_x, g_w, x_row_stride, x_col_stride,
                                                                  w_row_stride, w_col_stride, rows, cols, channels);
                            } else if (helper == 1) {
                                returned = lp_depthwise_box_s8x16(sums, g_x, g_w, x_row_stride, x_col_stride,
                                                                  w_row_stride, w_col_stride, rows, cols, channels);
                            } else {
                                returned = lp_depthwise_pad_s8x16(sums, g_w, w_row_stride, w_col_stride, rows, cols,
                                                                  pad, channels);
                            }
                            guarded_back(0, acc, 4 * channels);
                            cases += 1;
                            if (call_wrong(returned, acc, expected, TILE + GUARD)) {
                                failures += 1;
                                if (failures <= 8) {
                                    printf("wrong helper %ld: channels %ld, rows %ld, cols %ld, layout %ld\n",
                                           (long)helper, (long)channels, (long)rows, (long)cols, (long)layout);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
