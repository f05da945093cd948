/* Unit test of the Cortex-M backend's rows MAC on a Helium core
 * (backends/cortex_m/helpers/templates/helium_mac_rows.h.in, with the prefix lp, after helium_dual_mac.h.in): for one
 * to five tiles of four rows and every row length up to 40 (whole Helium vectors of 16, the eight lanes' step, every
 * rest) and some longer ones, inputs at each of four byte offsets, int8 values over their whole range (-128 and 127
 * included), each accumulator gets its start plus its row's sum x[k] * w[r * row_len + k]. Built by
 * tests/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU (VMLADAVA, VCTP tails). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "guarded_buffers.h"
#include "mac_rows.h"

#define ROW_LEN_MAX 97
#define ROWS_MAX 20

/* The next int8 of the shared fixed sequence (the test is the same run to run). */
static int8_t value(uint32_t *state)
{
    return (int8_t)(int32_t)(next_value(state) % 256u - 128u);
}

int main(void)
{
    static int8_t x_store[ROW_LEN_MAX + 4];
    static int8_t w[ROWS_MAX * ROW_LEN_MAX];
    static const int32_t beyond_40[] = {47, 48, 63, 64, 80, 96, ROW_LEN_MAX};
    uint32_t state = 1;
    int32_t cases = 0, failures = 0, rows, x_offset, n;
    for (n = 0; n < 41 + (int32_t)(sizeof beyond_40 / sizeof beyond_40[0]); ++n) {
        const int32_t row_len = n <= 40 ? n : beyond_40[n - 41];
        for (rows = 4; rows <= ROWS_MAX; rows += 4) {
            for (x_offset = 0; x_offset < 4; ++x_offset) {
                const int8_t *const x = x_store + x_offset;
                int32_t acc[ROWS_MAX], start[ROWS_MAX], expected[ROWS_MAX], r, k, i;
                for (i = 0; i < ROW_LEN_MAX + 4; ++i) {
                    x_store[i] = i % 7 == 0 ? (int8_t)-128 : value(&state);
                }
                for (i = 0; i < ROWS_MAX * ROW_LEN_MAX; ++i) {
                    w[i] = i % 11 == 0 ? (int8_t)127 : (i % 13 == 0 ? (int8_t)-128 : value(&state));
                }
                for (r = 0; r < rows; ++r) {
                    start[r] = expected[r] = start_value(r % 4) + r;
                    acc[r] = -7;
                    for (k = 0; k < row_len; ++k) {
                        expected[r] += x[k] * w[r * row_len + k];
                    }
                }
                cases += 1;
                /* every buffer exactly what the call reads and writes, against no-access memory */
                int32_t *const sums = guarded_copy(0, acc, 4 * rows);
                const int32_t returned = lp_dual_mac_rows_s8(sums, guarded_copy(1, start, 4 * rows),
                                                             guarded_copy(2, x, row_len),
                                                             guarded_copy(3, w, rows * row_len), row_len, rows);
                guarded_back(0, acc, 4 * rows);
                if (call_wrong(returned, acc, expected, rows)) {
                    failures += 1;
                    printf("wrong: row_len %ld, rows %ld, x offset %ld\n", (long)row_len, (long)rows,
                           (long)x_offset);
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
