/* Unit test of the Cortex-M backend's ascending copy (backends/cortex_m/helpers/templates/copy_ascending.h.in,
 * with the prefix lp): for element sizes 1, 2 and 4 bytes, every count up to 40 elements and every distance
 * from dst below src (overlapping, as the SVDF state shifts in place) to separate runs, the helper leaves the
 * buffer as the element loop `for (i = 0; i < count; ++i) dst[i] = src[i]` does. Built by
 * tests/test_cortex_m_helpers_c.py on the host with and without __ARM_FEATURE_UNALIGNED (the 16-byte word
 * copies) and for cortex-m4f under QEMU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "copy_ascending.h"

#define BUFFER_BYTES 512 /* past the farthest run: 3 + (160 + 3) + 160 bytes */

static int check(int32_t element_bytes, int32_t count, int32_t dst_offset, int32_t src_offset)
{
    uint8_t expected[BUFFER_BYTES], actual[BUFFER_BYTES];
    int32_t i;
    for (i = 0; i < BUFFER_BYTES; ++i) {
        expected[i] = (uint8_t)(i * 37 + 11);
    }
    memcpy(actual, expected, sizeof actual);
    for (i = 0; i < count * element_bytes; ++i) { /* element by element ascending is byte by byte ascending */
        expected[dst_offset + i] = expected[src_offset + i];
    }
    if (lp_copy_ascending(actual + dst_offset, actual + src_offset, count, element_bytes) != 0) {
        return 1;
    }
    return memcmp(actual, expected, sizeof actual) != 0;
}

int main(void)
{
    static const int32_t sizes[] = {1, 2, 4};
    int32_t failures = 0, cases = 0;
    size_t s;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const int32_t element_bytes = sizes[s];
        int32_t count, distance;
        for (count = 0; count <= 40; ++count) {
            const int32_t bytes = count * element_bytes;
            for (distance = 0; distance <= bytes + 3; ++distance) { /* dst below src, then separate runs */
                int32_t dst_offset;
                for (dst_offset = 0; dst_offset < 4; ++dst_offset) { /* every word alignment of dst */
                    cases += 1;
                    if (check(element_bytes, count, dst_offset, dst_offset + distance)) {
                        failures += 1;
                        printf("wrong: %ld-byte elements, count %ld, dst %ld, src %ld\n", (long)element_bytes,
                               (long)count, (long)dst_offset, (long)(dst_offset + distance));
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
