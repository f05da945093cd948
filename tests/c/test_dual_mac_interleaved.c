/* Unit test of the Cortex-M backend's dual MAC over interleaved weights
 * (backends/cortex_m/helpers/templates/dual_mac_interleaved.h.in, with the prefix lp): for every group count up
 * to 24 and counts around and beyond the widened chunk of 32 groups (two and three chunks, a chunk's groups % 4
 * left over), one to three tiles, tile strides of a tile's weights and more (word-aligned and not: the portable path
 * for a tile whose weights are not), inputs at each byte offset, int8 values over their whole range (-128 and
 * 127 included), each accumulator gets its start (its own value, or another array's) plus its channel's sums
 * x[4j + k] * w[v * stride + 16j + 4c + k]. Built by tests/test_cortex_m_helpers_c.py on the host (portable C)
 * and for cortex-m4f under QEMU (LDRD, SXTB16, SMLAD); the RISC-V helper of the same contract and name
 * (backends/riscv/helpers/templates/mac_s8x4_interleaved.h.in) by tests/backends/riscv/test_riscv_helpers_c.py on
 * the host and under QEMU virt. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac_interleaved.h"

#define GROUPS_MAX 71
#define TILES_MAX 3
#define STRIDE_MAX (16 * GROUPS_MAX + 5)

/* The next int8 of the shared fixed sequence (the test is the same run to run). */
static int8_t value(uint32_t *state)
{
    return (int8_t)(int32_t)(next_value(state) % 256u - 128u);
}

int main(void)
{
    static int8_t x_store[4 * GROUPS_MAX + 4];
    static int32_t w_words[(TILES_MAX * STRIDE_MAX + 4) / 4 + 1]; /* word-aligned storage for the weights */
    int8_t *const w_store = (int8_t *)w_words;
    static const int32_t beyond_24[] = {31, 32, 33, 36, 63, 64, 65, GROUPS_MAX};
    uint32_t state = 1;
    int32_t cases = 0, failures = 0, tiles, extra, x_offset, own, g;
    for (g = 0; g < 25 + (int32_t)(sizeof beyond_24 / sizeof beyond_24[0]); ++g) {
        const int32_t groups = g < 25 ? g : beyond_24[g - 25];
        for (tiles = 1; tiles <= TILES_MAX; ++tiles) {
            for (extra = 0; extra <= 5; ++extra) { /* 0 and 4: aligned tiles; the others: later tiles not */
                for (x_offset = 0; x_offset < 4; x_offset += 1 + (extra & 1)) {
                    for (own = 0; own < 2; ++own) { /* the sums start at acc itself, then at another array */
                        const int32_t stride = 16 * groups + extra;
                        const int8_t *const x = x_store + x_offset;
                        const int8_t *const w = w_store + (extra == 5 ? 1 : 0); /* 5: every tile misaligned */
                        int32_t acc[4 * TILES_MAX], start[4 * TILES_MAX], expected[4 * TILES_MAX], c, j, k, i, v;
                        int32_t wrong = 0;
                        for (i = 0; i < 4 * GROUPS_MAX + 4; ++i) {
                            x_store[i] = i % 7 == 0 ? (int8_t)-128 : value(&state);
                        }
                        for (i = 0; i < TILES_MAX * STRIDE_MAX + 4; ++i) {
                            w_store[i] = i % 11 == 0 ? (int8_t)127 : (i % 13 == 0 ? (int8_t)-128 : value(&state));
                        }
                        for (v = 0; v < tiles; ++v) {
                            for (c = 0; c < 4; ++c) {
                                start[4 * v + c] = expected[4 * v + c] = start_value(c) + v;
                                acc[4 * v + c] = own ? start[4 * v + c] : -7;
                                for (j = 0; j < groups; ++j) {
                                    for (k = 0; k < 4; ++k) {
                                        expected[4 * v + c] += x[4 * j + k] * w[v * stride + 16 * j + 4 * c + k];
                                    }
                                }
                            }
                        }
                        cases += 1;
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        int32_t *const sums = guarded_copy(0, acc, 16 * tiles);
                        if (lp_dual_mac_s8x4_interleaved(sums, own ? sums : guarded_copy(1, start, 16 * tiles),
                                                         guarded_copy(2, x, 4 * groups),
                                                         guarded_copy(3, w, guarded_span(tiles, 16 * groups, stride,
                                                                                         1)),
                                                         groups, tiles, stride) != 0) {
                            wrong = 1;
                        }
                        guarded_back(0, acc, 16 * tiles);
                        for (i = 0; i < 4 * tiles; ++i) {
                            wrong |= acc[i] != expected[i];
                        }
                        if (wrong) {
                            failures += 1;
                            printf("wrong: groups %ld, tiles %ld, stride %ld, x offset %ld, own start %ld\n",
                                   (long)groups, (long)tiles, (long)stride, (long)x_offset, (long)own);
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
