/* Unit test of the Cortex-M backend's running int8 maximum (backends/cortex_m/helpers/templates/max_s8.h.in,
 * with the prefix lp): for every count up to 40 and every byte alignment of dst and src, on values covering
 * -128..127 (equal lanes, each sign, the extremes), the helper as a running maximum (dst, dst, src) leaves both
 * buffers as the element loop `for (i = 0; i < count; ++i) if (src[i] > dst[i]) dst[i] = src[i];` does, as a
 * copy (dst, src, src) as the copy loop does, and the same run into itself (dst, dst, dst) unchanged. Built by tests/test_cortex_m_helpers_c.py on the host (the byte loop) and for cortex-m4f under
 * QEMU (SSUB8 + SEL). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "max_s8.h"

#define BUFFER_BYTES 64 /* past the farthest run: 3 + 40 bytes */

static int check(int32_t count, int32_t dst_offset, int32_t src_offset, int32_t seed)
{
    int8_t expected[BUFFER_BYTES], actual[BUFFER_BYTES], source[BUFFER_BYTES];
    int32_t i;
    for (i = 0; i < BUFFER_BYTES; ++i) {
        expected[i] = (int8_t)(uint8_t)(i * 37 + seed);
        source[i] = (int8_t)(uint8_t)(i * 101 + 3 * seed + (i % 5 == 0 ? 0 : 128));
        if (i % 7 == 3) {
            source[i] = expected[i]; /* equal lanes */
        }
    }
    memcpy(actual, expected, sizeof actual);
    for (i = 0; i < count; ++i) {
        if (source[src_offset + i] > expected[dst_offset + i]) {
            expected[dst_offset + i] = source[src_offset + i];
        }
    }
    if (lp_max_s8(actual + dst_offset, actual + dst_offset, source + src_offset, count) != 0) {
        return 1;
    }
    if (memcmp(actual, expected, sizeof actual) != 0) {
        return 1;
    }
    (void)lp_max_s8(actual + dst_offset, actual + dst_offset, actual + dst_offset, count); /* unchanged */
    if (memcmp(actual, expected, sizeof actual) != 0) {
        return 1;
    }
    for (i = 0; i < count; ++i) { /* a copy: the maximum of a run with itself */
        expected[dst_offset + i] = source[src_offset + i];
    }
    (void)lp_max_s8(actual + dst_offset, source + src_offset, source + src_offset, count);
    return memcmp(actual, expected, sizeof actual) != 0;
}

int main(void)
{
    int32_t failures = 0, cases = 0, count, dst_offset, src_offset, seed;
    for (seed = 0; seed < 256; seed += 51) {
        for (count = 0; count <= 40; ++count) {
            for (dst_offset = 0; dst_offset < 4; ++dst_offset) {
                for (src_offset = 0; src_offset < 4; ++src_offset) {
                    cases += 1;
                    if (check(count, dst_offset, src_offset, seed)) {
                        failures += 1;
                        printf("wrong: count %ld, dst %ld, src %ld, seed %ld\n", (long)count, (long)dst_offset,
                               (long)src_offset, (long)seed);
                    }
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
