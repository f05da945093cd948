/* Unit test of the RISC-V per-tensor fully connected rows (backends/riscv/helpers/templates/fc_rows_s8x8.h.in, after
 * the paired MAC and the requantization epilogue, with the prefix lp): lp_fc_rows_s8x8 and lp_fc_rows_s8x8_b16
 * against the plain sums of their contract requantized by the bundle's scalar helpers (lp_requantize_double_small,
 * lp_saturate_int8), with the weights packed as tvm_ext.kernels.dense.pair_weights packs them (per tile of eight
 * channels, word 4k + p = w[2p][k] + 65536 * w[2p + 1][k]), over the cases of cortex_m_test_values.h's
 * fc_rows_test (row lengths 0..70: whole groups of two inputs and the odd last one, 0..4 tiles, values drawn and at
 * the minimum, int32 and int16 biases), multipliers of 2^30 and more and shifts -1, -8, -31 and -5 (the
 * "double_small" domain); then the longest rows the compile's bound admits (65,535 inputs of -128 or 127 against
 * weights -128 and 127, the biases at the bound's ends). Built by
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

/* The helper on guarded copies of exactly the buffers it reads and writes (guarded_buffers.h). */
static int32_t call(int8_t *out, const fc_rows_case *k, const int32_t *bias, const int16_t *bias16, int wide)
{
    int8_t *const g_out = guarded_copy(0, out, k->channels);
    const int8_t *const g_x = guarded_copy(1, k->x, k->row_len);
    const int32_t *const g_words = guarded_copy(2, words, 4 * 4 * k->row_len * k->tiles);
    const int32_t returned
        = wide ? lp_fc_rows_s8x8(g_out, g_x, g_words, guarded_copy(3, bias, 4 * k->channels), k->multiplier, k->shift,
                                 k->zero_point, k->row_len, k->tiles)
               : lp_fc_rows_s8x8_b16(g_out, g_x, g_words, guarded_copy(3, bias16, 2 * k->channels), k->multiplier,
                                     k->shift, k->zero_point, k->row_len, k->tiles);
    guarded_back(0, out, k->channels);
    return returned;
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

/* The longest rows the schedule emits: the compile bounds 128 * sum |w| + |bias| (the reach of the raw int8 inputs,
   tvm_ext.transform.int8.mac) below 2^30 for the "double_small" rounding, so a row of weights -128 is at most
   LONG_ROW inputs (with |bias| <= 16383). */
#define LONG_ROW 65535
#define SMALL_LIMIT 1073741824 /* 2^30 */
#define LONG_ROW_SHIFT (-24) /* sums near +-2^30 to outputs within int8, not saturated */

/* One tile over the longest rows, odd and even, every input -128 or every one 127, channel c's weights all
   (c % 2 ? 127 : -128), the biases at the bound's ends (+-(2^30 - 1 - 128 * row_len * |w|), int16 biases within
   int16): the largest sums of either sign, run on the host under the undefined-behaviour sanitizer (the helper's
   int32 additions must not overflow on the bound). Returns the number of wrong outputs (each printed). */
static int32_t long_row_failures(int32_t *cases)
{
    static int8_t x[LONG_ROW];
    static int32_t long_words[4 * LONG_ROW];
    int32_t failures = 0;
    for (int32_t p = 0; p < 4; ++p) {
        const uint32_t a = (uint32_t)-128, b = 127u;
        for (int32_t i = 0; i < LONG_ROW; ++i) {
            long_words[4 * i + p] = (int32_t)(a + (b << 16));
        }
    }
    for (int32_t form = 0; form < 8; ++form) {
        const int32_t row_len = LONG_ROW - form % 2, value = form / 2 % 2 ? 127 : -128;
        const int wide = form / 4;
        int32_t bias[8];
        int16_t bias16[8];
        int8_t out[8];
        for (int32_t i = 0; i < row_len; ++i) {
            x[i] = (int8_t)value;
        }
        for (int32_t c = 0; c < 8; ++c) {
            const int64_t room = SMALL_LIMIT - 1 - (int64_t)128 * row_len * (c % 2 ? 127 : 128);
            bias[c] = (int32_t)(c / 2 % 2 ? -room : room);
            bias16[c] = (int16_t)(room > 32767 ? (c / 2 % 2 ? -32767 : 32767) : bias[c]);
        }
        const int32_t returned =
            wide ? lp_fc_rows_s8x8(out, x, long_words, bias, 1518500250, LONG_ROW_SHIFT, 3, row_len, 1)
                 : lp_fc_rows_s8x8_b16(out, x, long_words, bias16, 1518500250, LONG_ROW_SHIFT, 3, row_len, 1);
        for (int32_t c = 0; c < 8; ++c, ++*cases) {
            const int32_t weight = c % 2 ? 127 : -128;
            const int64_t sum = (int64_t)(wide ? bias[c] : bias16[c]) + (int64_t)row_len * value * weight;
            const int32_t requantized = lp_requantize_double_small((int32_t)sum, 1518500250, LONG_ROW_SHIFT);
            const int8_t want = (int8_t)lp_saturate_int8(requantized + 3);
            if (returned != 0 || out[c] != want || sum < -SMALL_LIMIT || sum >= SMALL_LIMIT) {
                printf("wrong long row: row_len %ld, inputs %ld, channel %ld%s: %d, expected %d\n", (long)row_len,
                       (long)value, (long)c, wide ? "" : " (int16 biases)", out[c], want);
                failures += 1;
            }
        }
    }
    return failures;
}

int main(void)
{
    static const int32_t shifts[] = {-1, -8, -31, -5};
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, 1277447166, 2004318071};
    const fc_rows_helper helper = {8, shifts, 4, multipliers, 5, 0, weights, call, expected};
    int32_t cases = 0;
    const int32_t failures = long_row_failures(&cases);
    return failures != 0 ? cases_verdict(cases, failures) : fc_rows_test(&helper, cases);
}
