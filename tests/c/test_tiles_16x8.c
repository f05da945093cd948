/* Unit test of the fused 16x8 channel tiles (backends/cortex_m/helpers/templates/tiles_16x8.h.in after the bundle's
 * 16x8 requantization and the dual MAC, with the prefix lp): lp_tiles_s16x4 against the plain sums of its contract
 * (int16 inputs, int8 weights) plus the bias, requantized by the 64-bit arithmetic the 16x8 helper stands for
 * ((sum * multiplier + 2^31) >> 32, saturated to int16) and clamped, over every window of the window MAC tests
 * (cortex_m_test_values.h: rows 0..3, row_len 0..35, three layouts, both 2-byte alignments, mixed and minimum values),
 * 0 to 12 channels (a last tile of fewer: its weights' rows read up to the whole tile, only its channels stored),
 * biases of +-2^20, drawn multipliers and three clamps (none, a ReLU's, a narrow one). Each call's buffers are
 * exactly what its contract lets it read and write (guarded_buffers.h). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C), for cortex-m4f under QEMU (the DSP
 * dual MAC) and for cortex-m55 under QEMU (the Helium loop). Prints "ok <cases> cases" and exits 0, or names the
 * first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "tiles_16x8.h"

#define CHANNELS_MAX 12
#define X_ELEMENTS 440 /* past the farthest input any window case reads (under 430) */

/* The contract's output of channel c: the window's plain sum plus the bias, requantized and clamped. */
static int16_t expected_out(const int16_t *x, const int8_t *w, const window_case *k, int32_t c, int32_t bias,
                            int32_t multiplier, int32_t act_min, int32_t act_max)
{
    int32_t sums[4] = {0, 0, 0, 0};
    plain_window_mac(sums, NULL, x, w + (c - c % 4) * k->w_channel_stride, k->x_row_stride, k->w_channel_stride,
                     k->rows, k->row_len);
    const int64_t product = (int64_t)(sums[c % 4] + bias) * multiplier + ((int64_t)1 << 31);
    int32_t value = (int32_t)(product >> 32);
    value = value < -32768 ? -32768 : (value > 32767 ? 32767 : value);
    value = value < act_min ? act_min : value;
    return (int16_t)(value > act_max ? act_max : value);
}

int main(void)
{
    static int16_t x_store[X_ELEMENTS + 1];
    static int8_t w_store[CHANNELS_MAX * 110 + 8];
    static const int32_t clamps[3][2] = {{-32768, 32767}, {0, 32767}, {-1000, 20000}};
    int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
    int16_t got[CHANNELS_MAX];
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case k = window_case_of(i);
        const int32_t channels = i % (CHANNELS_MAX + 1), tiles = (channels + 3) / 4;
        const int32_t act_min = clamps[i % 3][0], act_max = clamps[i % 3][1];
        fill_s16(x_store, X_ELEMENTS + 1, &state, k.all_min);
        fill_s8(w_store, (int32_t)sizeof w_store, &state, k.all_min);
        for (int32_t c = 0; c < channels; ++c) {
            bias[c] = (int32_t)(next_value(&state) << 5) - (1 << 20);
            multiplier[c] = (int32_t)(next_value(&state) << 14) + (1 << 28); /* below 2^31, as the lowering's */
        }
        const int16_t *x = x_store + k.x_offset % 2;
        const int8_t *w = w_store + k.w_offset;
        const int32_t x_bytes = guarded_span(k.rows, k.row_len, k.x_row_stride, 2);
        const int32_t w_bytes = guarded_span(4 * tiles, k.rows * k.row_len, k.w_channel_stride, 1);
        const int32_t returned = lp_tiles_s16x4(
            guarded_copy(0, got, 2 * channels), guarded_copy(1, x, x_bytes), guarded_copy(2, w, w_bytes),
            guarded_copy(3, bias, 4 * channels), guarded_copy(4, multiplier, 4 * channels), act_min, act_max,
            k.x_row_stride, k.w_channel_stride, k.rows, k.row_len, channels);
        guarded_back(0, got, 2 * channels);
        int wrong = returned != 0;
        for (int32_t c = 0; c < channels; ++c) {
            wrong |= got[c] != expected_out(x, w, &k, c, bias[c], multiplier[c], act_min, act_max);
        }
        if (wrong) {
            failures += 1;
            if (failures <= 8) {
                printf("wrong tiles_s16x4: case %ld (%ld channels)\n", (long)i, (long)channels);
            }
        }
        cases += 1;
    }
    return cases_verdict(cases, failures);
}
