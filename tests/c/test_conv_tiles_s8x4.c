/* Unit test of the DSP cores' fused convolution channel tiles (backends/cortex_m/helpers/templates/
 * conv_tiles_s8x4.h.in after dsp_words.h.in, dual_mac.h.in and requantize_small.h.in, with the prefix lp):
 * lp_conv_tiles_s8x4 and lp_conv_tiles_s8x4_b16 against the plain sums of their contract from the bias,
 * requantized by the bundle's scalar helpers (lp_requantize_double_small, lp_saturate_int8), over every window of
 * the window MAC tests (cortex_m_test_values.h: rows 0..3, row_len 0..35, three layouts, every byte alignment,
 * mixed and minimum values), 0 to 3 tiles of four channels, biases up to +-2^24 (int16 ones for _b16), every
 * shift -31..-1, drawn multipliers, zero points at either end; the bytes after the outputs must keep their value.
 * Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under
 * QEMU (SXTB16, SMLAD, SMMULR). Prints "ok <cases> cases" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "conv_tiles_s8x4.h"

#define CHANNELS_MAX 12
#define GUARD 4 /* bytes after the outputs that must keep their value */

/* What the kernel's loops store for output channel c: the plain window sum from the bias, requantized. */
static int8_t expected_out(const int8_t *x, const int8_t *w, const window_case *k, int32_t c, int32_t bias,
                           int32_t multiplier, int32_t shift, int32_t zero_point)
{
    int32_t sum = bias;
    for (int32_t r = 0; r < k->rows; ++r) {
        for (int32_t i = 0; i < k->row_len; ++i) {
            sum += x[r * k->x_row_stride + i] * w[c * k->w_channel_stride + r * k->row_len + i];
        }
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

int main(void)
{
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    static int8_t x_store[440], w_store[CHANNELS_MAX * 110 + 8];
    uint32_t state = 7;
    int32_t failures = 0, cases = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case k = window_case_of(i);
        const int32_t channels = 4 * (i % (CHANNELS_MAX / 4 + 1)), zero_point = zero_points[i % 4];
        const int8_t *x = x_store + k.x_offset, *w = w_store + k.w_offset;
        int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
        int16_t bias16[CHANNELS_MAX];
        int8_t shift[CHANNELS_MAX];
        fill_s8(x_store, (int32_t)sizeof x_store, &state, k.all_min);
        fill_s8(w_store, (int32_t)sizeof w_store, &state, k.all_min);
        for (int32_t c = 0; c < CHANNELS_MAX; ++c) {
            bias[c] = (int32_t)(next_value(&state) >> 7) - (1 << 24);
            bias16[c] = (int16_t)(int32_t)(next_value(&state) % 65536u - 32768u);
            multiplier[c] = (int32_t)((next_value(&state) % 32768u) << 15) + (1 << 30);
            shift[c] = (int8_t)(-1 - (i + c) % 31);
        }
        for (int narrow = 0; narrow <= 1; ++narrow) {
            int8_t out[CHANNELS_MAX + GUARD];
            for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                out[c] = (int8_t)0x5a;
            }
            const int32_t returned = narrow
                ? lp_conv_tiles_s8x4_b16(out, x, w, bias16, multiplier, shift, zero_point, k.x_row_stride,
                                         k.w_channel_stride, k.rows, k.row_len, channels)
                : lp_conv_tiles_s8x4(out, x, w, bias, multiplier, shift, zero_point, k.x_row_stride,
                                     k.w_channel_stride, k.rows, k.row_len, channels);
            int wrong = returned != 0;
            for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                const int8_t want = c < channels
                    ? expected_out(x, w, &k, c, narrow ? bias16[c] : bias[c], multiplier[c], shift[c], zero_point)
                    : (int8_t)0x5a;
                wrong |= out[c] != want;
            }
            if (wrong && failures++ < 8) {
                printf("FAIL case %ld (%s): %ld channels, rows %ld, row_len %ld\n", (long)i, narrow ? "b16" : "b32",
                       (long)channels, (long)k.rows, (long)k.row_len);
            }
            ++cases;
        }
    }
    return cases_verdict(cases, failures);
}
