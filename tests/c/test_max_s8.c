/* Unit test of the Cortex-M backend's running int8 maximum (backends/cortex_m/helpers/templates/max_s8.h.in,
 * with the prefix lp): for every count up to 40 and every byte alignment of dst and src, on values covering
 * -128..127 (equal lanes, each sign, the extremes), the helper as a running maximum (dst, dst, src) leaves both
 * buffers as the element loop `for (i = 0; i < count; ++i) if (src[i] > dst[i]) dst[i] = src[i];` does, as a
 * copy (dst, src, src) as the copy loop does, and the same run into itself (dst, dst, dst) unchanged; and the
 * window maximum lp_max_s8_window for windows of 1 to 3 rows and columns, counts up to 40 (whole vectors of 16
 * lanes and tails), every alignment of src, column strides of one pixel of 5 to 7 channels, against the loops of
 * its contract. Built by tests/test_cortex_m_helpers_c.py on the host (the byte loop) and for cortex-m4f under
 * QEMU (SSUB8 + SEL); the Helium twin (helium_max_s8.h.in) on the host and for cortex-m55 under QEMU (VMAX.S8). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guarded_buffers.h"
#include "max_s8.h"

#define BUFFER_BYTES 64 /* past the farthest run: 3 + 40 bytes */
#define WINDOW_BYTES 128 /* past the farthest window tap: 3 + 2 * 22 + 2 * 7 + 40 bytes */
#define WINDOW_OUTPUTS 48 /* past the largest count: 40 */

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
    /* the runs handed over exactly, against no-access memory */
    int8_t *dst = guarded_copy(0, actual + dst_offset, count);
    if (lp_max_s8(dst, dst, guarded_copy(1, source + src_offset, count), count) != 0) {
        return 1;
    }
    guarded_back(0, actual + dst_offset, count);
    if (memcmp(actual, expected, sizeof actual) != 0) {
        return 1;
    }
    dst = guarded_copy(0, actual + dst_offset, count);
    (void)lp_max_s8(dst, dst, dst, count); /* unchanged */
    guarded_back(0, actual + dst_offset, count);
    if (memcmp(actual, expected, sizeof actual) != 0) {
        return 1;
    }
    for (i = 0; i < count; ++i) { /* a copy: the maximum of a run with itself */
        expected[dst_offset + i] = source[src_offset + i];
    }
    const int8_t *const run = guarded_copy(1, source + src_offset, count);
    (void)lp_max_s8(guarded_copy(0, actual + dst_offset, count), run, run, count);
    guarded_back(0, actual + dst_offset, count);
    return memcmp(actual, expected, sizeof actual) != 0;
}

static int check_window(int32_t count, int32_t rows, int32_t cols, int32_t col_stride, int32_t src_offset)
{
    int8_t source[WINDOW_BYTES], actual[WINDOW_OUTPUTS], expected[WINDOW_OUTPUTS];
    const int32_t row_stride = 3 * col_stride + 1;
    int32_t i, r, c;
    for (i = 0; i < WINDOW_BYTES; ++i) {
        source[i] = (int8_t)(uint8_t)(i * 73 + rows * 29 + cols * 5 + (i % 3 == 0 ? 128 : 0));
    }
    for (i = 0; i < WINDOW_OUTPUTS; ++i) {
        actual[i] = expected[i] = (int8_t)(i - 40);
    }
    for (i = 0; i < count; ++i) {
        int8_t peak = source[src_offset + i];
        for (r = 0; r < rows; ++r) {
            for (c = 0; c < cols; ++c) {
                const int8_t tap = source[src_offset + r * row_stride + c * col_stride + i];
                if (tap > peak) {
                    peak = tap;
                }
            }
        }
        expected[i] = peak;
    }
    const int32_t span = count == 0 ? 0 : (rows - 1) * row_stride + (cols - 1) * col_stride + count;
    const int32_t returned = lp_max_s8_window(guarded_copy(0, actual, count), guarded_copy(1, source + src_offset, span),
                                              count, rows, cols, row_stride, col_stride);
    guarded_back(0, actual, count);
    if (returned != 0) {
        return 1;
    }
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
    for (count = 0; count <= 40; ++count) {
        int32_t rows, cols, col_stride;
        for (rows = 1; rows <= 3; ++rows) {
            for (cols = 1; cols <= 3; ++cols) {
                for (col_stride = 5; col_stride <= 7; ++col_stride) {
                    for (src_offset = 0; src_offset < 4; ++src_offset) {
                        cases += 1;
                        if (check_window(count, rows, cols, col_stride, src_offset)) {
                            failures += 1;
                            printf("wrong window: count %ld, %ld x %ld, column stride %ld, src %ld\n", (long)count,
                                   (long)rows, (long)cols, (long)col_stride, (long)src_offset);
                        }
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
