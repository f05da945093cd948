/* Unit test of the Cortex-M backend's row dot product over int16 rows
 * (backends/cortex_m/helpers/templates/row_dot_s16x4.h.in, with the prefix lp): for every row length up to 40,
 * channel strides at, above and below the row length (rows apart, padded, interleaved; even and odd: the
 * word-aligned path and the other), both rows word-aligned or not, and int16 values over their whole range (-32768
 * and 32767 included; products of -32768 by -32768 and by 32767 in turn in every channel of some cases), each of the
 * four accumulators gains its channel's dot product and keeps what it held. Built by tests/test_cortex_m_helpers_c.py on the host (portable C) and for
 * cortex-m4f under QEMU (LDRD, LDR, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "row_dot16.h"

#define ROW_MAX 40 /* past the LDRD rows' shortest, lp_ROW_DOT16_LDRD_MIN */
#define STRIDE_MAX (ROW_MAX + 3)
#define SPAN (4 * STRIDE_MAX + 1)

/* The next int16 of the shared fixed sequence in -2048..2047 (the test is the same run to run): small enough that
   the sums of 40 of them beside the extremes' stay within int32. */
static int16_t value16(uint32_t *state)
{
    return (int16_t)((int32_t)(next_value(state) % 4096u) - 2048);
}

int main(void)
{
    static int32_t x_words[SPAN / 2 + 1], w_words[SPAN / 2 + 1];  /* word-aligned storage of the rows */
    int16_t *const x_all = (int16_t *)(void *)x_words, *const w_all = (int16_t *)(void *)w_words;
    uint32_t state = 1;
    int32_t cases = 0, failures = 0, row_len, extra, shift;
    for (row_len = 0; row_len <= ROW_MAX; ++row_len) {
        for (extra = -1; extra <= 3; ++extra) {
            for (shift = 0; shift < 4; ++shift) { /* 0: both aligned; 1, 2: one of them not; 3: the extremes */
                const int32_t x_stride = row_len + extra < 1 ? 1 : row_len + extra; /* below: channels interleave */
                const int32_t w_stride = row_len + (extra + 2) % 4;
                int16_t *const x = x_all + (shift == 1), *const w = w_all + (shift == 2);
                int32_t acc[4], expected[4], c, k, i;
                for (i = 0; i < 4 * STRIDE_MAX; ++i) {
                    x[i] = shift == 3 ? (int16_t)-32768 : i % 7 == 0 ? (int16_t)-32768 : value16(&state);
                    w[i] = shift == 3 ? (int16_t)(i % 2 == 0 ? -32768 : 32767) /* products of alternate signs: in int32 */ : i % 11 == 0 ? (int16_t)32767 : value16(&state);
                }
                for (c = 0; c < 4; ++c) {
                    acc[c] = expected[c] = shift == 3 ? 0 : start_value(c);
                    for (k = 0; k < row_len; ++k) {
                        expected[c] += x[c * x_stride + k] * w[c * w_stride + k];
                    }
                }
                cases += 1;
                if (lp_row_dot_s16x4(acc, x, w, x_stride, w_stride, row_len) != 0 || acc[0] != expected[0]
                    || acc[1] != expected[1] || acc[2] != expected[2] || acc[3] != expected[3]) {
                    failures += 1;
                    printf("wrong: row_len %ld, strides %ld and %ld, shift %ld\n", (long)row_len, (long)x_stride,
                           (long)w_stride, (long)shift);
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
