/* Unit test of the RISC-V depthwise helpers (backends/riscv/helpers/templates/depthwise_mac_s8x8.h.in, with the
 * prefix lp): lp_depthwise_mac_s8x8 and the padding's lp_depthwise_pad_s8x8 (pads -128, 127 and 3) against the
 * plain loops of their contracts, for every window of 0 to 5 rows and 0 to 5 columns (the three-tap steps and the
 * one or two taps left), column strides of exactly eight channels and wider (an NHWC row of more channels), row
 * strides at and above a row's taps, inputs and weights at every byte alignment, values over the whole int8 range
 * (-128 and 127 forced in) and all at the minimum (the largest products); each of the eight accumulators gains its
 * sum and keeps what it held. Then the same of their forms of any channel count, lp_depthwise_mac_s8xn and
 * lp_depthwise_pad_s8xn, on 0, 1, 7, 8, 13 and 19 channels (whole tiles of eight, then one channel at a time), each
 * accumulator of those channels. Built by tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc
 * and rv32imafc, under QEMU virt. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "riscv_mac.h"

#define BUFFER 2048 /* elements: past the farthest one any case reads (under 1,100) */
#define SIDE 5 /* the most rows and columns of a window */
#define CHANNELS 8 /* the fixed helpers' */
#define MAX_CHANNELS 19 /* the sized helpers' most */

/* The plain sums of the helper's contract: acc[c] += x[r * x_row_stride + k * x_col_stride + c]
   * w[r * w_row_stride + k * w_col_stride + c] over r < rows, k < cols, for c < channels. */
static void plain_depthwise(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride, int32_t x_col_stride,
                            int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                acc[c] += x[r * x_row_stride + k * x_col_stride + c] * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

/* The plain sums of the padding helper's contract: acc[c] += pad * w[r * w_row_stride + k * w_col_stride + c] over
   r < rows, k < cols, for c < channels. */
static void plain_pad(int32_t *acc, const int8_t *w, int32_t pad, int32_t w_row_stride, int32_t w_col_stride,
                      int32_t rows, int32_t cols, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                acc[c] += pad * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

static const int32_t PADS[] = {-128, 127, 3};
#define HELPERS 8 /* the MAC, then the padding helper with each of PADS; then their sized forms alike */
static const int32_t SIZED[] = {0, 1, 7, 8, 13, 19};

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 5;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 0; rows <= SIDE; ++rows) {
            for (int32_t cols = 0; cols <= SIDE; ++cols) {
                for (int32_t layout = 0; layout < 3; ++layout) {
                    const int32_t n = SIZED[(rows + cols + layout + all_min) % 6];
                    const depthwise_layout l = depthwise_layout_of(MAX_CHANNELS, rows, cols, layout, 0);
                    const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                    fill_s8(x, BUFFER, &state, all_min);
                    fill_s8(w, BUFFER, &state, all_min);
                    for (int32_t helper = 0; helper < HELPERS; ++helper) {
                        const int sized = helper >= HELPERS / 2, kind = helper % (HELPERS / 2);
                        const int32_t channels = sized ? n : CHANNELS;
                        int32_t acc[MAX_CHANNELS], expected[MAX_CHANNELS], returned;
                        for (int32_t c = 0; c < channels; ++c) {
                            acc[c] = expected[c] = start_value(c);
                        }
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        int32_t *const sums = guarded_copy(0, acc, 4 * channels);
                        const int8_t *const weights = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                                      l.w_col_stride, channels, 1));
                        if (kind == 0) {
                            const int8_t *const inputs = guarded_copy(1, xo, guarded_box(rows, cols, l.x_row_stride,
                                                                                        l.x_col_stride, channels, 1));
                            plain_depthwise(expected, xo, wo, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                            l.w_col_stride, rows, cols, channels);
                            returned = sized
                                ? lp_depthwise_mac_s8xn(sums, inputs, weights, l.x_row_stride, l.x_col_stride,
                                                        l.w_row_stride, l.w_col_stride, rows, cols, channels)
                                : lp_depthwise_mac_s8x8(sums, inputs, weights, l.x_row_stride, l.x_col_stride,
                                                        l.w_row_stride, l.w_col_stride, rows, cols);
                        } else {
                            plain_pad(expected, wo, PADS[kind - 1], l.w_row_stride, l.w_col_stride, rows, cols,
                                      channels);
                            returned = (sized ? lp_depthwise_pad_s8xn : lp_depthwise_pad_s8x8)(
                                sums, weights, l.w_row_stride, l.w_col_stride, rows, cols, PADS[kind - 1], channels);
                        }
                        guarded_back(0, acc, 4 * channels);
                        cases += 1;
                        if (call_wrong(returned, acc, expected, channels)) {
                            failures += 1;
                            printf("wrong helper %ld: rows %ld, cols %ld, layout %ld, channels %ld\n", (long)helper,
                                   (long)rows, (long)cols, (long)layout, (long)channels);
                        }
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
