/* Unit test of the Cortex-M backend's row dot product (backends/cortex_m/helpers/templates/row_dot_s8x4.h.in,
 * after dsp_words.h.in, with the prefix lp): for every row length up to 40, channel strides at, above and below
 * the row length (rows apart, padded, interleaved) and int8 values over their whole range (-128 and 127
 * included), each of the four accumulators gains its channel's dot product and keeps what it held.
 * Built by tests/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (SXTB16,
 * SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "row_dot.h"

#define ROW_MAX 40
#define STRIDE_MAX (ROW_MAX + 3)

/* The next int8 of the shared fixed sequence (the test is the same run to run). */
static int8_t value(uint32_t *state)
{
    return (int8_t)(int32_t)(next_value(state) % 256u - 128u);
}

int main(void)
{
    static int8_t x[4 * STRIDE_MAX], w[4 * STRIDE_MAX];
    uint32_t state = 1;
    int32_t cases = 0, failures = 0, row_len, extra;
    for (row_len = 0; row_len <= ROW_MAX; ++row_len) {
        for (extra = -1; extra <= 3; ++extra) {
            const int32_t x_stride = row_len + extra < 1 ? 1 : row_len + extra; /* below: channels interleave */
            const int32_t w_stride = row_len + (extra + 2) % 4;
            int32_t acc[4], expected[4], c, k, i;
            for (i = 0; i < 4 * STRIDE_MAX; ++i) {
                x[i] = i % 7 == 0 ? (int8_t)-128 : value(&state);
                w[i] = i % 11 == 0 ? (int8_t)127 : value(&state);
            }
            for (c = 0; c < 4; ++c) {
                acc[c] = expected[c] = start_value(c);
                for (k = 0; k < row_len; ++k) {
                    expected[c] += x[c * x_stride + k] * w[c * w_stride + k];
                }
            }
            cases += 1;
            /* every buffer exactly what the call reads and writes, against no-access memory */
            const int32_t returned = lp_row_dot_s8x4(guarded_copy(0, acc, 16),
                                                     guarded_copy(1, x, guarded_span(4, row_len, x_stride, 1)),
                                                     guarded_copy(2, w, guarded_span(4, row_len, w_stride, 1)),
                                                     x_stride, w_stride, row_len);
            guarded_back(0, acc, 16);
            if (returned != 0 || acc[0] != expected[0]
                || acc[1] != expected[1] || acc[2] != expected[2] || acc[3] != expected[3]) {
                failures += 1;
                printf("wrong: row_len %ld, strides %ld and %ld\n", (long)row_len, (long)x_stride, (long)w_stride);
            }
        }
    }
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
