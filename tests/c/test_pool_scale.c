/* Unit test of the int8 MEAN's rescaling of a 16-bit half (backends/cortex_m/helpers/templates/pool_scale.h.in, with
 * the prefix lp): for every int16 half h (in either half of a word whose other half is another value), multipliers
 * at both ends of TFLite's [2^30, 2^31) and between, and addends at both ends of their use, lp_pool_scale_low and
 * lp_pool_scale_high equal floor(multiplier * h / 2^16) + addend from the 64-bit product. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (SMLAWB,
 * SMLAWT). Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "pool_scale.h"

/* floor(multiplier * h / 2^16) + addend, without the helper's instructions. */
static int32_t expected(int32_t h, int32_t multiplier, int32_t addend)
{
    const int64_t product = (int64_t)multiplier * h;
    const int64_t floored = product >= 0 ? product / 65536 : -((-product + 65535) / 65536);
    return (int32_t)(floored + addend);
}

int main(void)
{
    static const int32_t multipliers[] = {1073741824, 1325759844, 1518500250, 2147483647, 12345};
    static const int32_t addends[] = {16384, -8339456, 16384 + 127 * 32768, 0};
    int32_t checks = 0, failures = 0, m, a, h;
    for (m = 0; m < (int32_t)(sizeof multipliers / sizeof multipliers[0]); ++m) {
        for (a = 0; a < (int32_t)(sizeof addends / sizeof addends[0]); ++a) {
            for (h = -32768; h <= 32767; ++h) {
                const int32_t other = h == 0 ? -1 : -h / 2;
                const int32_t low_word = (int32_t)(((uint32_t)h & 0xffffu) | ((uint32_t)other << 16));
                const int32_t high_word = (int32_t)(((uint32_t)other & 0xffffu) | ((uint32_t)h << 16));
                const int32_t want = expected(h, multipliers[m], addends[a]);
                const int32_t low = lp_pool_scale_low(low_word, multipliers[m], addends[a]);
                const int32_t high = lp_pool_scale_high(high_word, multipliers[m], addends[a]);
                checks += 2;
                if ((low != want || high != want) && failures++ == 0) {
                    printf("FAIL multiplier %d addend %d half %d: low %d high %d want %d\n", (int)multipliers[m],
                           (int)addends[a], (int)h, (int)low, (int)high, (int)want);
                }
            }
        }
    }
    if (failures) {
        return 1;
    }
    printf("ok %d\n", (int)checks);
    return 0;
}
