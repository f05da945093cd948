/* Unit test of the RISC-V per-tensor fully connected rows (backends/riscv/helpers/templates/fc_rows_s8x8.h.in, after
 * the paired MAC and the requantization epilogue, with the prefix lp): lp_fc_rows_s8x8 and lp_fc_rows_s8x8_b16
 * against the plain sums of their contract requantized by the bundle's scalar helpers (lp_requantize_double_small,
 * lp_saturate_int8), with the weights packed as tvm_ext.kernels.dense.pair_weights packs them (per tile of eight
 * channels, word 4k + p = w[2p][k] + 65536 * w[2p + 1][k]), over the cases of cortex_m_test_values.h's
 * fc_rows_test (row lengths 0..70: whole groups of two inputs and the odd last one, 0..4 tiles, values drawn and at
 * the minimum, int32 and int16 biases), multipliers of 2^30 and more and shifts -1, -8, -31 and -5 (the
 * "double_small" domain). Built by
 * tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc and rv32imafc, under QEMU virt. Prints
 * "ok <cases> cases" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_small.h"

#define CHANNELS_MAX (8 * FC_ROWS_TILES_MAX)

static int8_t w[CHANNELS_MAX][FC_ROWS_LEN_MAX];
static int32_t words[CHANNELS_MAX / 2 * FC_ROWS_LEN_MAX];

/* Case k's weights w, and packed: tile t's words from 4 * row_len * t, word 4k + p the channels 8t + 2p and
   8t + 2p + 1 (mod 2^32). */
static void weights(const fc_rows_case *k, uint32_t *state)
{
    for (int32_t c = 0; c < k->channels; ++c) {
        fill_s8(w[c], k->row_len, state, k->all_min);
    }
    for (int32_t t = 0; t < k->tiles; ++t) {
        for (int32_t i = 0; i < k->row_len; ++i) {
            for (int32_t p = 0; p < 4; ++p) {
                const uint32_t a = (uint32_t)(int32_t)w[8 * t + 2 * p][i];
                const uint32_t b = (uint32_t)(int32_t)w[8 * t + 2 * p + 1][i];
                words[4 * k->row_len * t + 4 * i + p] = (int32_t)(a + (b << 16));
            }
        }
    }
}

static int32_t call(int8_t *out, const fc_rows_case *k, const int32_t *bias, const int16_t *bias16, int wide)
{
    return wide ? lp_fc_rows_s8x8(out, k->x, words, bias, k->multiplier, k->shift, k->zero_point, k->row_len,
                                  k->tiles)
                : lp_fc_rows_s8x8_b16(out, k->x, words, bias16, k->multiplier, k->shift, k->zero_point, k->row_len,
                                      k->tiles);
}

/* What the scalar loops the helper replaces store for output channel c. */
static int8_t expected(const fc_rows_case *k, int32_t c, int32_t bias)
{
    int32_t sum = bias;
    for (int32_t i = 0; i < k->row_len; ++i) {
        sum += k->x[i] * w[c][i];
    }
    const int32_t requantized = lp_requantize_double_small(sum, k->multiplier, k->shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)k->zero_point));
}

int main(void)
{
    static const int32_t shifts[] = {-1, -8, -31, -5};
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, 1277447166, 2004318071};
    const fc_rows_helper helper = {8, shifts, 4, multipliers, 5, 0, weights, call, expected};
    return fc_rows_test(&helper);
}
