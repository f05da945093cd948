/* Unit test of the Cortex-M backend's dual MAC over int16 interleaved weights
 * (backends/cortex_m/helpers/templates/dual_mac_interleaved16.h.in, with the prefix lp): group counts 0..24 and
 * around and beyond the widened chunk of 32 groups, one to three tiles, tile strides of a tile's weights and more
 * (an odd stride and a misaligned first tile: the portable path), inputs at each byte offset, int8 inputs and int16
 * weights over their whole ranges (-128, 127, -32768, 32767 included), the sums starting at acc itself or at another
 * array: each accumulator gets its start plus x[4j + k] * w[v * stride + 16j + 4c + k]. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (LDRD,
 * LDM, SXTB16, PKHBT/PKHTB, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac_interleaved16.h"

#define GROUPS_MAX 71
#define TILES_MAX 3
#define STRIDE_MAX (16 * GROUPS_MAX + 3)

int main(void)
{
    static int8_t inputs[4 * GROUPS_MAX + 4];
    static int32_t w_words[(TILES_MAX * STRIDE_MAX + 2) / 2 + 1]; /* word-aligned storage for the weights */
    int16_t *const weights = (int16_t *)w_words;
    static const int32_t long_counts[] = {31, 32, 33, 36, 63, 64, 65, GROUPS_MAX};
    const int32_t count_total = 25 + (int32_t)(sizeof long_counts / sizeof long_counts[0]);
    uint32_t state = 7;
    int32_t cases = 0, failures = 0;
    for (int32_t n = 0; n < count_total; ++n) {
        const int32_t groups = n < 25 ? n : long_counts[n - 25];
        for (int32_t tiles = 1; tiles <= TILES_MAX; ++tiles) {
            for (int32_t pad = 0; pad <= 3; ++pad) { /* 0, 2: aligned tiles; 1: odd stride; 3: first misaligned */
                for (int32_t offset = 0; offset < 4; ++offset) {
                    const int32_t stride = 16 * groups + (pad == 3 ? 0 : pad);
                    const int8_t *const x = inputs + offset;
                    const int16_t *const w = weights + (pad == 3 ? 1 : 0);
                    const int32_t own = offset & 1; /* the sums start at acc itself, or at another array */
                    int32_t acc[4 * TILES_MAX], start[4 * TILES_MAX], expected[4 * TILES_MAX];
                    int32_t wrong = 0;
                    for (int32_t i = 0; i < 4 * GROUPS_MAX + 4; ++i) {
                        inputs[i] = i % 5 == 0 ? (int8_t)(i % 2 ? 127 : -128)
                                               : (int8_t)(int32_t)(next_value(&state) % 256u - 128u);
                    }
                    for (int32_t i = 0; i < TILES_MAX * STRIDE_MAX + 2; ++i) {
                        weights[i] = i % 9 == 0 ? (int16_t)(i % 2 ? 32767 : -32768)
                                                : (int16_t)(int32_t)(next_value(&state) % 65536u - 32768u);
                    }
                    for (int32_t v = 0; v < tiles; ++v) {
                        for (int32_t c = 0; c < 4; ++c) {
                            int32_t sum = start_value(c) - v;
                            start[4 * v + c] = sum;
                            acc[4 * v + c] = own ? sum : 99;
                            for (int32_t j = 0; j < 4 * groups; ++j) {
                                sum += x[j] * w[v * stride + 16 * (j / 4) + 4 * c + j % 4];
                            }
                            expected[4 * v + c] = sum;
                        }
                    }
                    cases += 1;
                    /* every buffer exactly what the call reads and writes, against no-access memory */
                    int32_t *const sums = guarded_copy(0, acc, 16 * tiles);
                    wrong = lp_dual_mac_s16x4_interleaved(sums, own ? sums : guarded_copy(1, start, 16 * tiles),
                                                          guarded_copy(2, x, 4 * groups),
                                                          guarded_copy(3, w, guarded_span(tiles, 16 * groups, stride,
                                                                                          2)),
                                                          groups, tiles, stride) != 0;
                    guarded_back(0, acc, 16 * tiles);
                    for (int32_t i = 0; i < 4 * tiles; ++i) {
                        wrong |= acc[i] != expected[i];
                    }
                    if (wrong) {
                        failures += 1;
                        printf("wrong: groups %ld, tiles %ld, stride %ld, x offset %ld, first misaligned %d\n",
                               (long)groups, (long)tiles, (long)stride, (long)offset, pad == 3);
                    }
                }
            }
        }
    }
    printf("ok %ld cases\n", (long)cases);
    return failures != 0;
}
