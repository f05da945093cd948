/* Unit test of the DSP cores' fused FULLY_CONNECTED channel tiles over stacked weights (backends/cortex_m/helpers/
 * templates/fc_tiles_s8x4.h.in after dsp_words.h.in, stacked_mac.h.in and requantize_small.h.in, with the prefix
 * lp): lp_fc_tiles_s8x4, lp_fc_tiles_s8x4_b16 and the per-tensor lp_fc_rows_s8x4, lp_fc_rows_s8x4_b16 against the plain sums of their contract from the bias,
 * and their twins over widened weights (lp_fc_tiles_w16x4, lp_fc_rows_w16x4 and the _b16 ones, after wide_mac.h.in:
 * the weights laid out here as tvm_ext/kernels/dense.py's widen_rows does, the lengths the even ones),
 * requantized by the bundle's scalar helpers (lp_requantize_double_small, lp_saturate_int8), the weights stacked
 * here as tvm_ext/kernels/dense.py's stack_rows stacks them: every row length that is a multiple of 4 up to 64 and
 * the lengths about the stacked MAC's chunks of 508 inputs, inputs at every byte alignment, 0 to 3 tiles of four
 * channels, values over the whole int8 range (the layout's bound kept) and all at the minimum, biases of +-2^12
 * and (a tile's last) +-2^24 (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points; the
 * bytes after the outputs must keep their value. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on
 * the host (portable C) and for cortex-m4f under QEMU (SXTB16, LDM, SMLAD, SMMULR). Prints "ok <cases> cases" and
 * exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "fc_tiles_s8x4.h"

#define CHANNELS_MAX 12
#define GUARD 4 /* bytes after the outputs that must keep their value */
#define LEN_MAX 1024
#define SWEEP_LEN_MAX 64 /* every multiple of 4 up to it; then LONG_LENGTHS */
static const int32_t LONG_LENGTHS[] = {504, 508, 512, 1016, LEN_MAX};
#define LENGTHS (SWEEP_LEN_MAX / 4 + 1 + (int32_t)(sizeof LONG_LENGTHS / sizeof LONG_LENGTHS[0]))

/* The weights weight[c * len + k] of `channels` channels stacked tile by tile (stack_rows: per tile and group of
   four inputs, word 2p + j holds (lo, hi) of inputs 4g + j and 4g + j + 2 of the tile's pair p). */
static void stack(int8_t *stacked, const int8_t *weight, int32_t len, int32_t channels)
{
    for (int32_t t = 0; t < channels / 4; ++t) {
        for (int32_t k = 0; k < len; ++k) {
            for (int32_t p = 0; p < 2; ++p) {
                const int32_t r = weight[(4 * t + 2 * p) * len + k], s = weight[(4 * t + 2 * p + 1) * len + k];
                int8_t *half = stacked + 4 * t * len + 16 * (k / 4) + 4 * (2 * p + k % 2) + 2 * (k % 4 / 2);
                half[0] = (int8_t)r;
                half[1] = (int8_t)(s - (r < 0 ? 1 : 0));
            }
        }
    }
}

/* The weights weight[c * len + k] of `channels` channels widened tile by tile (widen_rows: per tile and group g of
   four inputs, word 2c + j holds the weights of inputs 4g + j and 4g + j + 2 of the tile's channel c). */
static void widen(int16_t *wide, const int8_t *weight, int32_t len, int32_t channels)
{
    for (int32_t c = 0; c < channels; ++c) {
        for (int32_t k = 0; k < len; ++k) {
            wide[c / 4 * 4 * len + 16 * (k / 4) + 2 * (2 * (c % 4) + k % 2) + k % 4 / 2] = weight[c * len + k];
        }
    }
}

int main(void)
{
    static int8_t x_store[LEN_MAX + 4], weight[CHANNELS_MAX * LEN_MAX];
    static int8_t stacked[CHANNELS_MAX * LEN_MAX] __attribute__((aligned(4)));
    static int16_t wide[CHANNELS_MAX * LEN_MAX] __attribute__((aligned(4)));
    uint32_t state = 11;
    int32_t failures = 0, cases = 0;
    /* each length with int32 biases, then int16 ones, per channel then per tensor, stacked then widened (the length
       a multiple of 8 there); two fills each */
    for (int32_t i = 0; i < 2 * 4 * 2 * LENGTHS; ++i) {
        const int narrow = i / (2 * LENGTHS) % 2, per_tensor = i / (4 * LENGTHS) % 2, all_min = i % 2;
        const int widened = i >= 8 * LENGTHS;
        const int32_t at = i / 2 % LENGTHS;
        const int32_t any_len = at <= SWEEP_LEN_MAX / 4 ? 4 * at : LONG_LENGTHS[at - SWEEP_LEN_MAX / 4 - 1];
        const int32_t len = widened ? any_len / 8 * 8 : any_len;
        const int32_t channels = 4 * (i % (CHANNELS_MAX / 4 + 1)), zero_point = i % 3 == 0 ? -128 : 127 - i % 200;
        const int8_t *x = x_store + i % 4;
        int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
        int16_t bias16[CHANNELS_MAX];
        int8_t shift[CHANNELS_MAX], out[CHANNELS_MAX + GUARD], want[CHANNELS_MAX + GUARD];
        fill_s8(x_store, (int32_t)sizeof x_store, &state, all_min);
        fill_s8(weight, channels * len, &state, all_min);
        for (int32_t c = 1; !widened && c < channels; c += 2) { /* the stacked layout's bound: no borrow below -128 */
            for (int32_t k = 0; k < len; ++k) {
                if (weight[(c - 1) * len + k] < 0 && weight[c * len + k] == -128) {
                    weight[c * len + k] = (int8_t)-127;
                }
            }
        }
        stack(stacked, weight, len, channels);
        widen(wide, weight, len, channels);
        draw_tile_constants(bias, bias16, multiplier, shift, CHANNELS_MAX, i, &state);
        for (int32_t c = 1; per_tensor && c < CHANNELS_MAX; ++c) { /* one multiplier and shift: channel 0's */
            multiplier[c] = multiplier[0];
            shift[c] = shift[0];
        }
        for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
            out[c] = want[c] = (int8_t)0x5a;
        }
        for (int32_t c = 0; c < channels; ++c) {
            int32_t sum = narrow ? bias16[c] : bias[c];
            for (int32_t k = 0; k < len; ++k) {
                sum += x[k] * weight[c * len + k];
            }
            const int32_t requantized = lp_requantize_double_small(sum, multiplier[c], shift[c]);
            want[c] = (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
        }
        /* every buffer exactly what the call reads and writes, against no-access memory */
        int8_t *const g_out = guarded_copy(0, out, channels);
        const int8_t *const g_x = guarded_copy(1, x, len);
        const int8_t *const g_stacked = widened ? NULL : guarded_copy(2, stacked, channels * len);
        const int16_t *const g_wide = widened ? guarded_copy(2, wide, 2 * channels * len) : NULL;
        const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
        const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
        const int32_t *const g_multiplier = guarded_copy(5, multiplier, per_tensor ? 4 : 4 * channels);
        const int8_t *const g_shift = guarded_copy(6, shift, per_tensor ? 1 : channels);
        int32_t returned;
        if (widened && per_tensor) {
            returned = narrow
                ? lp_fc_rows_w16x4_b16(g_out, g_x, g_wide, g_bias16, g_multiplier[0], g_shift[0],
                                       zero_point, len, channels / 4)
                : lp_fc_rows_w16x4(g_out, g_x, g_wide, g_bias, g_multiplier[0], g_shift[0],
                                   zero_point, len, channels / 4);
        } else if (widened) {
            returned = narrow
                ? lp_fc_tiles_w16x4_b16(g_out, g_x, g_wide, g_bias16, g_multiplier, g_shift, zero_point, len, channels)
                : lp_fc_tiles_w16x4(g_out, g_x, g_wide, g_bias, g_multiplier, g_shift, zero_point, len, channels);
        } else if (per_tensor) {
            returned = narrow
                ? lp_fc_rows_s8x4_b16(g_out, g_x, g_stacked, g_bias16, g_multiplier[0], g_shift[0],
                                      zero_point, len, channels / 4)
                : lp_fc_rows_s8x4(g_out, g_x, g_stacked, g_bias, g_multiplier[0], g_shift[0],
                                  zero_point, len, channels / 4);
        } else {
            returned = narrow
                ? lp_fc_tiles_s8x4_b16(g_out, g_x, g_stacked, g_bias16, g_multiplier, g_shift,
                                       zero_point, len, channels)
                : lp_fc_tiles_s8x4(g_out, g_x, g_stacked, g_bias, g_multiplier, g_shift, zero_point, len, channels);
        }
        guarded_back(0, out, channels);
        int wrong = returned != 0;
        for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
            wrong |= out[c] != want[c];
        }
        if (wrong && failures++ < 8) {
            printf("wrong case %ld (%s biases, per %s, %s): %ld channels, length %ld, all at the minimum %d\n", (long)i,
                   narrow ? "int16" : "int32", per_tensor ? "tensor" : "channel", widened ? "widened" : "stacked",
                   (long)channels, (long)len, all_min);
        }
        ++cases;
    }
    return cases_verdict(cases, failures);
}
