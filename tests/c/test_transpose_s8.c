/* Unit test of the Cortex-M backend's int8 block transpose (backends/cortex_m/helpers/templates/transpose_s8.h.in,
 * with the prefix lp): for every rows and cols up to 13 (whole 4 x 4 blocks, and rows and columns past them), strides
 * of the matrices' own widths and wider, and every word alignment of dst and src, the helper leaves the destination
 * buffer as the element loop `dst[i * dst_stride + j] = src[j * src_stride + i]` does, the elements between the rows
 * untouched. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host with and without
 * __ARM_FEATURE_UNALIGNED (the word blocks) and for cortex-m4f under QEMU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "transpose_s8.h"

enum { MOST = 13, SPACE = 4 + MOST * (MOST + 3) + 4 };

/* Whether the helper's transpose of one case equals the element loop's (the whole destination buffer compared). */
static int transpose_case(int32_t rows, int32_t cols, int32_t dst_stride, int32_t src_stride, int32_t dst_offset,
                          int32_t src_offset)
{
    int8_t src[SPACE], got[SPACE], want[SPACE];
    int32_t n, i, j;
    for (n = 0; n < SPACE; ++n) {
        src[n] = (int8_t)(n * 37 + 11);
        got[n] = want[n] = (int8_t)(n * 13 - 100);
    }
    for (i = 0; i < rows; ++i) {
        for (j = 0; j < cols; ++j) {
            want[dst_offset + i * dst_stride + j] = src[src_offset + j * src_stride + i];
        }
    }
    if (lp_transpose_s8(got + dst_offset, src + src_offset, rows, cols, dst_stride, src_stride) != 0) {
        return 1;
    }
    return memcmp(got, want, sizeof got) != 0;
}

int main(void)
{
    int32_t cases = 0, failures = 0, rows, cols, wider, offset;
    for (rows = 0; rows <= MOST; ++rows) {
        for (cols = 0; cols <= MOST; ++cols) {
            for (wider = 0; wider <= 3; wider += 3) {
                for (offset = 0; offset < 4; ++offset) { /* dst's alignment offset; src's the next one */
                    const int32_t dst_stride = cols + wider, src_stride = rows + 3 - wider;
                    ++cases;
                    if (transpose_case(rows, cols, dst_stride, src_stride, offset, (offset + 1) % 4)) {
                        failures += 1;
                        printf("wrong: rows %ld, cols %ld, strides %ld %ld, dst offset %ld\n", (long)rows,
                               (long)cols, (long)dst_stride, (long)src_stride, (long)offset);
                    }
                }
            }
        }
    }
    if (failures) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
