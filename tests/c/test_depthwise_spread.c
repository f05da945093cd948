/* Unit test of the DSP cores' depthwise MAC of a depth multiplier above 1
 * (backends/cortex_m/helpers/templates/depthwise_spread.h.in after dsp_words.h.in, with the prefix lp):
 * lp_depthwise_spread_s8x4m4 (every channel of the tile reads the tap's one input) and lp_depthwise_spread_s8x4m2
 * (channels 0 and 1 its first input, 2 and 3 its second), and their inlined forms (_inline_), against the plain loop
 * of their contract, for every window
 * of 0 to 7 rows and 0 to 7 columns, column strides of the tile's inputs and wider (an NHWC row of more channels),
 * row strides at and above a row's taps, inputs and weights at every element alignment, values over the whole int8
 * range (-128 and 127 forced in) and all at the minimum (the largest products); each accumulator gains its sum and
 * keeps what it held. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for
 * cortex-m4f under QEMU (SXTB16, SMLABB/SMLABT). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_spread.h"

#define BUFFER 1024 /* elements: past the farthest one any case reads (under 800) */
#define SIDE 7 /* the most rows and columns of a window */

/* The plain sums of the helpers' contract: acc[c] += x[r * x_row_stride + k * x_col_stride + c / (4 / inputs)]
   * w[r * w_row_stride + k * w_col_stride + c] over r < rows, k < cols, for c < 4. */
static void plain_spread(int32_t *acc, const int8_t *x, const int8_t *w, int32_t x_row_stride, int32_t x_col_stride,
                         int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t inputs)
{
    for (int32_t c = 0; c < 4; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < cols; ++k) {
                acc[c] += x[r * x_row_stride + k * x_col_stride + c / (4 / inputs)]
                          * w[r * w_row_stride + k * w_col_stride + c];
            }
        }
    }
}

typedef int32_t (*spread_helper)(int32_t *, const int8_t *, const int8_t *, int32_t, int32_t, int32_t, int32_t,
                                 int32_t, int32_t);
/* Per inputs a tap (1, 2): the out-of-line copy, then the inlined sums. */
static const spread_helper HELPERS[2][2] = {
    {lp_depthwise_spread_s8x4m4, lp_depthwise_spread_inline_s8x4m4},
    {lp_depthwise_spread_s8x4m2, lp_depthwise_spread_inline_s8x4m2},
};

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 5;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 0; rows <= SIDE; ++rows) {
            for (int32_t cols = 0; cols <= SIDE; ++cols) {
                for (int32_t layout = 0; layout < 3; ++layout) {
                    for (int32_t inputs = 1; inputs <= 2; ++inputs) {
                        depthwise_layout l = depthwise_layout_of(4, rows, cols, layout, inputs);
                        l.x_col_stride = inputs + 5 * layout; /* the inputs a tap reads, or wider */
                        l.x_row_stride = cols * l.x_col_stride + layout * 7;
                        const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                        int32_t acc[4], expected[4], returned = -1;
                        fill_s8(x, BUFFER, &state, all_min);
                        fill_s8(w, BUFFER, &state, all_min);
                        for (int32_t c = 0; c < 4; ++c) {
                            acc[c] = expected[c] = start_value(c);
                        }
                        plain_spread(expected, xo, wo, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                     l.w_col_stride, rows, cols, inputs);
                        for (int inlined = 0; inlined <= 1; ++inlined) { /* the copy, then the inlined sums */
                            int32_t sums[4] = {acc[0], acc[1], acc[2], acc[3]};
                            /* every buffer exactly what the call reads and writes, against no-access memory */
                            returned = HELPERS[inputs - 1][inlined](
                                guarded_copy(0, sums, 16),
                                guarded_copy(1, xo, guarded_box(rows, cols, l.x_row_stride, l.x_col_stride, inputs, 1)),
                                guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride, l.w_col_stride, 4, 1)),
                                l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols);
                            guarded_back(0, sums, 16);
                            cases += 1;
                            if (call_wrong(returned, sums, expected, 4)) {
                                failures += 1;
                                printf("wrong: inputs %ld, inlined %d, rows %ld, cols %ld, layout %ld\n",
                                       (long)inputs, inlined, (long)rows, (long)cols, (long)layout);
                            }
                        }
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
