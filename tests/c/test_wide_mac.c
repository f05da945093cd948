/* Unit test of the Cortex-M widened-rows MAC (backends/cortex_m/helpers/templates/wide_mac.h.in after
 * stacked_mac.h.in, with the prefix lp): lp_wide_mac_s8x4 against the plain sums of four channels' int8 weights,
 * widened to int16 pairs here as tvm_ext/kernels/dense.py's widen_rows lays them out, for every length that is a
 * multiple of 8 up to 160 and a few long ones (past the stacked MAC's chunk of 508: the widened sums need none),
 * inputs at every byte alignment, values over the whole int8 range (-128 and 127 forced in), and all at the minimum
 * (the largest products); each accumulator gains its sum and keeps what it held. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (the portable C) and for cortex-m4f under QEMU
 * (SXTB16, LDM, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "wide_mac.h"

#define LEN_MAX 2040
#define SWEEP_LEN_MAX 160 /* every multiple of 8 up to it; then LONG_LENGTHS */
static const int32_t LONG_LENGTHS[] = {504, 512, 1016, LEN_MAX};
#define CASES_PER_VALUES (SWEEP_LEN_MAX / 8 + 1 + (int32_t)(sizeof LONG_LENGTHS / sizeof LONG_LENGTHS[0]))

/* The four channels' weights weight[c * len + k] widened (the template's contract): per group g of four inputs,
   word 2c + j holds the weights of inputs 4g + j (low half) and 4g + j + 2 (high half) of channel c. */
static void widen(int16_t *wide, const int8_t *weight, int32_t len)
{
    for (int32_t k = 0; k < len; ++k) {
        for (int32_t c = 0; c < 4; ++c) {
            wide[16 * (k / 4) + 2 * (2 * c + k % 2) + k % 4 / 2] = weight[c * len + k];
        }
    }
}

int main(void)
{
    static int8_t x[LEN_MAX + 4], weight[4 * LEN_MAX];
    static int16_t wide[4 * LEN_MAX] __attribute__((aligned(4)));
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t all_min = 0; all_min < 2; ++all_min) {
        for (int32_t i = 0; i < CASES_PER_VALUES; ++i) {
            const int32_t len = i <= SWEEP_LEN_MAX / 8 ? 8 * i : LONG_LENGTHS[i - SWEEP_LEN_MAX / 8 - 1];
            const int32_t x_offset = i % 4;
            fill_s8(x, LEN_MAX + 4, &state, all_min);
            fill_s8(weight, 4 * LEN_MAX, &state, all_min);
            widen(wide, weight, len);
            int32_t got[4], expected[4];
            for (int32_t c = 0; c < 4; ++c) {
                got[c] = expected[c] = start_value(c);
            }
            plain_window_mac(expected, x + x_offset, NULL, weight, len, len, 1, len);
            /* every buffer exactly what the call reads and writes, against no-access memory */
            const int32_t returned = lp_wide_mac_s8x4(guarded_copy(0, got, 16), guarded_copy(1, x + x_offset, len),
                                                      guarded_copy(2, wide, 8 * len), len);
            guarded_back(0, got, 16);
            if (call_wrong(returned, got, expected, 4)) {
                failures += 1;
                printf("wrong widened MAC: length %ld, all at the minimum %ld\n", (long)len, (long)all_min);
            }
            cases += 1;
        }
    }
    return cases_verdict(cases, failures);
}
