/* Unit test of the scalar FPU's float helpers (backends/cortex_m/helpers/templates/fpu_float.h.in, with the prefix
 * lp): lp_fmac_f32 and lp_fmac_f32x2 against the plain loops of their contract (the product rounded, then the sum,
 * in the contract's order), bit for bit, over windows of rows 0..3 and row_len 0..9, channel counts 8, 16 and 24
 * (whole groups of eight, the helpers' contract), weight tap strides at and past the channel count, padded input
 * rows, values of mixed signs and magnitudes 2^-20..2^20 with zeros, and starting accumulators of their own; the
 * floats after each pixel's accumulators must keep their value. Then the tile epilogues lp_bias_act_f32 and
 * lp_bias_res_act_f32 (bias, residual, ReLU / ReLU6 bounds) against the scalar kernel's expressions, NaN and -0
 * included, and the fused lp_fmac_tiles_f32 against the contract's sums from +0.0 and that epilogue. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (VLDM,
 * VMUL, VADD). Prints "ok <cases> cases" and exits 0, or names the first failures and exits 1. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cortex_m_test_values.h"
#include "fpu_fmac_f32.h"

#define CHANNELS_MAX 24
#define GUARD 3 /* floats after the outputs that must keep their value */
#define X_FLOATS 1024
#define W_FLOATS 1024

/* Whether out[0..channels) differs from want[] in its bits, or one of the GUARD floats after it from the same of
   `before` (what out held before the call; NULL: 1.5). */
static int differs(const float *out, const float *want, int32_t channels, const float *before)
{
    int wrong = 0;
    for (int32_t c = 0; c < channels + GUARD; ++c) {
        const float expect = c < channels ? want[c] : before != NULL ? before[c] : 1.5f;
        wrong |= memcmp(&out[c], &expect, sizeof expect) != 0;
    }
    return wrong;
}

/* The MACs (one and two pixels) and the fused tiles over the windows: the number of wrong cases. */
static int32_t mac_failures(const float *x, const float *w, uint32_t *state, int32_t *cases)
{
    int32_t failures = 0;
    for (int32_t channels = 8; channels <= CHANNELS_MAX; channels += 8) {
        for (int32_t rows = 0; rows <= 3; ++rows) {
            for (int32_t row_len = 0; row_len <= 9; row_len += 1 + (rows == 3)) {
                const float_window g = float_window_of(channels, rows, row_len);
                if (rows * g.w_row_stride + channels > W_FLOATS
                        || g.x_first + g.x_pixel_stride + rows * g.x_row_stride > X_FLOATS) {
                    continue;
                }
                float start_a[CHANNELS_MAX + GUARD], start_b[CHANNELS_MAX + GUARD], bias[CHANNELS_MAX];
                float one[CHANNELS_MAX + GUARD], acc_a[CHANNELS_MAX + GUARD], acc_b[CHANNELS_MAX + GUARD];
                float tiles[CHANNELS_MAX + GUARD];
                float want_one[CHANNELS_MAX], want_b[CHANNELS_MAX], want_tiles[CHANNELS_MAX];
                for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                    start_a[c] = next_float(state);
                    start_b[c] = next_float(state);
                    tiles[c] = 1.5f;
                }
                for (int32_t c = 0; c < CHANNELS_MAX; ++c) {
                    bias[c] = next_float(state);
                }
                memcpy(one, start_a, sizeof one);
                memcpy(acc_a, start_a, sizeof acc_a);
                memcpy(acc_b, start_b, sizeof acc_b);
                const float *xp = x + g.x_first;
                const int32_t clamp = (rows + row_len) % 4;
                for (int32_t c = 0; c < channels; ++c) {
                    want_one[c] = expected_float_sum(xp, w, start_a[c], g.x_row_stride, g.w_row_stride,
                                                     g.w_tap_stride, rows, row_len, c);
                    want_b[c] = expected_float_sum(xp + g.x_pixel_stride, w, start_b[c], g.x_row_stride,
                                                   g.w_row_stride, g.w_tap_stride, rows, row_len, c);
                    want_tiles[c] = expected_act(expected_float_sum(xp, w, 0.0f, g.x_row_stride, g.w_row_stride,
                                                                    g.w_tap_stride, rows, row_len, c),
                                                 bias[c], 0, 0.0f, 6.0f, clamp);
                }
                /* every buffer exactly what the calls read and write, against no-access memory */
                const int32_t bytes = 4 * channels, window = guarded_span(rows, row_len, g.x_row_stride, 4);
                const float *const gw = guarded_copy(2, w, guarded_box(rows, row_len, g.w_row_stride, g.w_tap_stride,
                                                                       channels, 4));
                float *const g_one = guarded_copy(0, one, bytes), *const g_a = guarded_copy(4, acc_a, bytes);
                float *const g_b = guarded_copy(5, acc_b, bytes), *const g_tiles = guarded_copy(6, tiles, bytes);
                int32_t returned = lp_fmac_f32(g_one, guarded_copy(1, xp, window), gw, g.x_row_stride,
                                               g.w_row_stride, g.w_tap_stride, rows, row_len, channels);
                const int32_t pair = window == 0 ? 0 : 4 * g.x_pixel_stride + window;
                returned |= lp_fmac_f32x2(g_a, g_b, guarded_copy(1, xp, pair), gw, g.x_row_stride, g.w_row_stride, g.w_tap_stride, rows, row_len, channels,
                                          g.x_pixel_stride);
                returned |= lp_fmac_tiles_f32(g_tiles, guarded_copy(1, xp, window), gw, guarded_copy(3, bias, bytes),
                                              g.x_row_stride, g.w_row_stride, g.w_tap_stride, rows, row_len, channels,
                                              0.0f, 6.0f, clamp);
                guarded_back(0, one, bytes);
                guarded_back(4, acc_a, bytes);
                guarded_back(5, acc_b, bytes);
                guarded_back(6, tiles, bytes);
                if ((returned != 0 || differs(one, want_one, channels, start_a)
                     || differs(acc_a, want_one, channels, start_a) || differs(acc_b, want_b, channels, start_b)
                     || differs(tiles, want_tiles, channels, NULL))
                    && failures++ < 8) {
                    printf("FAIL %ld channels, rows %ld, row_len %ld\n", (long)channels, (long)rows, (long)row_len);
                }
                ++*cases;
            }
        }
    }
    return failures;
}

int main(void)
{
    static float x[X_FLOATS], w[W_FLOATS];
    uint32_t state = 11;
    int32_t cases = 0;
    for (int32_t i = 0; i < X_FLOATS; ++i) {
        x[i] = next_float(&state);
    }
    for (int32_t i = 0; i < W_FLOATS; ++i) {
        w[i] = next_float(&state);
    }
    int32_t failures = mac_failures(x, w, &state, &cases);
    failures += float_epilogue_failures(&state, &cases, 8, lp_bias_act_f32, lp_bias_res_act_f32);
    return cases_verdict(cases, failures);
}
