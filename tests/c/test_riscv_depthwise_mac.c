/* Unit test of the RISC-V depthwise helpers (backends/riscv/helpers/templates/depthwise_mac_s8x8.h.in, with the
 * prefix lp): lp_depthwise_mac_s8x8 and the padding's lp_depthwise_pad_s8x8 (pads -128, 127 and 3) against the
 * plain loops of their contracts, for every window of 0 to 5 rows and 0 to 5 columns (the three-tap steps and the
 * one or two taps left), column strides of exactly eight channels and wider (an NHWC row of more channels), row
 * strides at and above a row's taps, inputs and weights at every byte alignment, values over the whole int8 range
 * (-128 and 127 forced in) and all at the minimum (the largest products); each of the eight accumulators gains its
 * sum and keeps what it held. Built by tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc
 * and rv32imafc, under QEMU virt. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "riscv_mac.h"

#define BUFFER 1024 /* elements: past the farthest one any case reads (under 800) */
#define SIDE 5 /* the most rows and columns of a window */
#define CHANNELS 8

/* The plain sums of the helper's contract: acc[c] += x[r * x_row_stride + k * x_col_stride + c]
   * w[r * w_row_stride + k * w_col_stride + c] over r < rows, k < cols, for c < 8. */
static void plain_depthwise(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride, int32_t x_col_stride,
                            int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols)
{
    for (int32_t c = 0; c < CHANNELS; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                acc[c] += x[r * x_row_stride + k * x_col_stride + c] * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

/* The plain sums of the padding helper's contract: acc[c] += pad * w[r * w_row_stride + k * w_col_stride + c] over
   r < rows, k < cols, for c < 8. */
static void plain_pad(int32_t *acc, const int8_t *w, int32_t pad, int32_t w_row_stride, int32_t w_col_stride,
                      int32_t rows, int32_t cols)
{
    for (int32_t c = 0; c < CHANNELS; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                acc[c] += pad * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

static const int32_t PADS[] = {-128, 127, 3};
#define HELPERS 4 /* the MAC, then the padding helper with each of PADS */

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 5;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 0; rows <= SIDE; ++rows) {
            for (int32_t cols = 0; cols <= SIDE; ++cols) {
                for (int32_t layout = 0; layout < 3; ++layout) {
                    const depthwise_layout l = depthwise_layout_of(CHANNELS, rows, cols, layout, 0);
                    const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                    fill_s8(x, BUFFER, &state, all_min);
                    fill_s8(w, BUFFER, &state, all_min);
                    for (int32_t helper = 0; helper < HELPERS; ++helper) {
                        int32_t acc[CHANNELS], expected[CHANNELS], returned;
                        for (int32_t c = 0; c < CHANNELS; ++c) {
                            acc[c] = expected[c] = start_value(c);
                        }
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        int32_t *const sums = guarded_copy(0, acc, 4 * CHANNELS);
                        const int8_t *const weights = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                                      l.w_col_stride, CHANNELS, 1));
                        if (helper == 0) {
                            plain_depthwise(expected, xo, wo, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                            l.w_col_stride, rows, cols);
                            returned = lp_depthwise_mac_s8x8(sums, guarded_copy(1, xo, guarded_box(rows, cols,
                                                             l.x_row_stride, l.x_col_stride, CHANNELS, 1)), weights,
                                                             l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                             l.w_col_stride, rows, cols);
                        } else {
                            plain_pad(expected, wo, PADS[helper - 1], l.w_row_stride, l.w_col_stride, rows, cols);
                            returned = lp_depthwise_pad_s8x8(sums, weights, l.w_row_stride, l.w_col_stride, rows, cols,
                                                             PADS[helper - 1], CHANNELS);
                        }
                        guarded_back(0, acc, 4 * CHANNELS);
                        cases += 1;
                        if (call_wrong(returned, acc, expected, CHANNELS)) {
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
