/* Unit test of the int8 average pool's packed averages (backends/cortex_m/helpers/templates/pool_average.h.in, with
 * the prefix lp): for every window of 2^shift taps (shift 1..8) and every sum s of that many int8 taps (-128 * 2^shift
 * .. 127 * 2^shift), in each of the four halves (the others other sums: the halves' signs and carries independent),
 * lp_pool_store_average writes TFLite's average, s / 2^shift rounded half away from zero, at an unaligned address,
 * its neighbours kept. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for
 * cortex-m4f under QEMU (SSUB16, SADD16). Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "pool_average.h"

/* TFLite's int8 average of the sum of count taps: the quotient rounded half away from zero. */
static int32_t tflite_average(int32_t total, int32_t count)
{
    return total >= 0 ? (total + count / 2) / count : -((-total + count / 2) / count);
}

/* The int16 halves of a word: low in bits 0-15. */
static int32_t halves(int32_t low, int32_t high)
{
    return (int32_t)(((uint32_t)low & 0xffffu) | ((uint32_t)high << 16));
}

int main(void)
{
    int8_t out[6];
    int32_t checks = 0, failures = 0, shift;
    for (shift = 1; shift <= 8; ++shift) {
        const int32_t count = 1 << shift, low = -128 * count, high = 127 * count;
        int32_t s;
        for (s = low; s <= high; ++s) {
            /* channel k's sum: s, then its mirror and two neighbours, so every channel sees every sum */
            const int32_t sums[4] = {s, low + high - s, s == high ? low : s + 1, s == low ? high : s - 1};
            int32_t k;
            out[0] = out[5] = 55;
            lp_pool_store_average(out + 1, halves(sums[0], sums[2]), halves(sums[1], sums[3]), shift);
            for (k = 0; k < 4; ++k) {
                ++checks;
                if (out[1 + k] != tflite_average(sums[k], count) && failures++ == 0) {
                    printf("FAIL shift %d sum %d channel %d: %d\n", (int)shift, (int)sums[k], (int)k, (int)out[1 + k]);
                }
            }
            ++checks;
            if ((out[0] != 55 || out[5] != 55) && failures++ == 0) {
                printf("FAIL shift %d sum %d: a neighbour written\n", (int)shift, (int)s);
            }
        }
    }
    if (failures) {
        return 1;
    }
    printf("ok %d\n", (int)checks);
    return 0;
}
