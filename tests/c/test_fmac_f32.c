/* Unit test of the Helium float multiply-accumulates (backends/cortex_m/helpers/templates/helium_float.h.in, with the
 * prefix lp): lp_fmac_f32 and lp_fmac_f32x2, and the depthwise lp_fmac_dw_f32 and lp_fmac_dw_f32x2 (a tap's inputs
 * its channels, x_col_stride apart), against the plain loops of their contract (the product rounded, then the
 * sum, in the contract's order), bit for bit, over windows of rows 0..3 and row_len 0..9, channel counts 1..19
 * (whole groups of eight, one vector, and every predicated tail), weight tap strides at and past the channel
 * count, padded input rows, both pixel forms, values of mixed signs and magnitudes 2^-20..2^20 with zeros, and starting
 * accumulators of their own; the floats after each pixel's accumulators must keep their value. Then the tile
 * epilogues lp_bias_act_f32 and lp_bias_res_act_f32 (bias, residual, ReLU / ReLU6 bounds) against the scalar
 * kernel's expressions, NaN and -0 included. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VLDRW, VMUL, VADD, VCTP). Prints "ok <cases> cases" and exits 0, or names the first failures and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cortex_m_test_values.h"
#include "fmac_f32.h"

#define CHANNELS_MAX 19
#define GUARD 3 /* floats after the accumulators that must keep their value */
#define X_FLOATS 1024
#define W_FLOATS 1024

/* The depthwise contract's sum for channel c of the pixel at x, from `start`. */
static float expected_dw(const float *x, const float *w, float start, int32_t x_row_stride, int32_t x_col_stride,
                         int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t c)
{
    float sum = start;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            sum = sum + x[r * x_row_stride + k * x_col_stride + c] * w[r * w_row_stride + k * w_col_stride + c];
        }
    }
    return sum;
}

/* Whether a pixel's accumulators (channels of them, then GUARD untouched) differ from the contract's bits (the
   depthwise one's where x_col_stride > 0). */
static int wrong(const float *acc, const float *start, const float *x, const float *w, int32_t x_row_stride,
                 int32_t x_col_stride, int32_t w_row_stride, int32_t w_tap_stride, int32_t rows, int32_t row_len,
                 int32_t channels)
{
    int differs = 0;
    for (int32_t c = 0; c < channels + GUARD; ++c) {
        float want = start[c];
        if (c < channels) {
            want = x_col_stride > 0 ? expected_dw(x, w, start[c], x_row_stride, x_col_stride, w_row_stride,
                                                  w_tap_stride, rows, row_len, c)
                                    : expected_float_sum(x, w, start[c], x_row_stride, w_row_stride, w_tap_stride,
                                                         rows, row_len, c);
        }
        differs |= memcmp(&acc[c], &want, sizeof want) != 0;
    }
    return differs;
}

/* The epilogues called through a pointer (float_epilogue_failures): the helpers themselves always inline. */
static int32_t bias_act(float *out, const float *acc, const float *bias, int32_t channels, float low, float high,
                        int32_t clamp)
{
    return lp_bias_act_f32(out, acc, bias, channels, low, high, clamp);
}

static int32_t bias_res_act(float *out, const float *acc, const float *bias, const float *res, int32_t channels,
                            float low, float high, int32_t clamp)
{
    return lp_bias_res_act_f32(out, acc, bias, res, channels, low, high, clamp);
}

int main(void)
{
    static float x[X_FLOATS], w[W_FLOATS];
    uint32_t state = 11;
    int32_t failures = 0, cases = 0;
    for (int32_t i = 0; i < X_FLOATS; ++i) {
        x[i] = next_float(&state);
    }
    for (int32_t i = 0; i < W_FLOATS; ++i) {
        w[i] = next_float(&state);
    }
    for (int32_t channels = 1; channels <= CHANNELS_MAX; ++channels) {
        for (int32_t rows = 0; rows <= 3; ++rows) {
            for (int32_t row_len = 0; row_len <= 9; row_len += 1 + (rows == 3)) {
                const float_window window = float_window_of(channels, rows, row_len);
                const int32_t w_tap_stride = window.w_tap_stride, w_row_stride = window.w_row_stride;
                const int32_t x_row_stride = window.x_row_stride, x_pixel_stride = window.x_pixel_stride;
                const int32_t x_first = window.x_first;
                /* the depthwise form: a tap's channels contiguous, the taps x_col_stride apart in rows */
                const int32_t x_col_stride = channels + row_len % 2, dw_row_stride = row_len * x_col_stride + 1;
                if (rows * w_row_stride + channels > W_FLOATS
                        || x_first + x_pixel_stride + rows * x_row_stride > X_FLOATS
                        || x_first + x_pixel_stride + rows * dw_row_stride + channels > X_FLOATS) {
                    continue;
                }
                float start_a[CHANNELS_MAX + GUARD], start_b[CHANNELS_MAX + GUARD];
                float one[CHANNELS_MAX + GUARD], acc_a[CHANNELS_MAX + GUARD], acc_b[CHANNELS_MAX + GUARD];
                float dw_one[CHANNELS_MAX + GUARD], dw_a[CHANNELS_MAX + GUARD], dw_b[CHANNELS_MAX + GUARD];
                for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                    start_a[c] = next_float(&state);
                    start_b[c] = next_float(&state);
                }
                memcpy(one, start_a, sizeof one);
                memcpy(acc_a, start_a, sizeof acc_a);
                memcpy(acc_b, start_b, sizeof acc_b);
                memcpy(dw_one, start_a, sizeof dw_one);
                memcpy(dw_a, start_a, sizeof dw_a);
                memcpy(dw_b, start_b, sizeof dw_b);
                const float *xp = x + x_first;
                /* every buffer exactly what each call reads and writes, against no-access memory */
                const int32_t bytes = 4 * channels;
                const int32_t rows_bytes = guarded_span(rows, row_len, x_row_stride, 4);
                const int32_t taps_bytes = guarded_box(rows, row_len, dw_row_stride, x_col_stride, channels, 4);
                const float *const gw = guarded_copy(2, w, guarded_box(rows, row_len, w_row_stride, w_tap_stride,
                                                                       channels, 4));
                int32_t returned = lp_fmac_f32(guarded_copy(0, one, bytes), guarded_copy(1, xp, rows_bytes), gw,
                                               x_row_stride, w_row_stride, w_tap_stride, rows, row_len, channels);
                guarded_back(0, one, bytes);
                returned |= lp_fmac_f32x2(guarded_copy(3, acc_a, bytes), guarded_copy(4, acc_b, bytes),
                                          guarded_copy(1, xp, rows_bytes == 0 ? 0 : 4 * x_pixel_stride + rows_bytes),
                                          gw, x_row_stride, w_row_stride, w_tap_stride, rows, row_len, channels,
                                          x_pixel_stride);
                guarded_back(3, acc_a, bytes);
                guarded_back(4, acc_b, bytes);
                returned |= lp_fmac_dw_f32(guarded_copy(0, dw_one, bytes), guarded_copy(1, xp, taps_bytes), gw,
                                           dw_row_stride, x_col_stride, w_row_stride, w_tap_stride, rows, row_len,
                                           channels);
                guarded_back(0, dw_one, bytes);
                returned |= lp_fmac_dw_f32x2(guarded_copy(3, dw_a, bytes), guarded_copy(4, dw_b, bytes),
                                             guarded_copy(1, xp, taps_bytes == 0 ? 0 : 4 * x_pixel_stride + taps_bytes),
                                             gw, dw_row_stride, x_col_stride, w_row_stride, w_tap_stride, rows,
                                             row_len, channels, x_pixel_stride);
                guarded_back(3, dw_a, bytes);
                guarded_back(4, dw_b, bytes);
                if ((returned != 0
                     || wrong(one, start_a, xp, w, x_row_stride, 0, w_row_stride, w_tap_stride, rows, row_len,
                              channels)
                     || wrong(acc_a, start_a, xp, w, x_row_stride, 0, w_row_stride, w_tap_stride, rows, row_len,
                              channels)
                     || wrong(acc_b, start_b, xp + x_pixel_stride, w, x_row_stride, 0, w_row_stride, w_tap_stride,
                              rows, row_len, channels)
                     || wrong(dw_one, start_a, xp, w, dw_row_stride, x_col_stride, w_row_stride, w_tap_stride, rows,
                              row_len, channels)
                     || wrong(dw_a, start_a, xp, w, dw_row_stride, x_col_stride, w_row_stride, w_tap_stride, rows,
                              row_len, channels)
                     || wrong(dw_b, start_b, xp + x_pixel_stride, w, dw_row_stride, x_col_stride, w_row_stride,
                              w_tap_stride, rows, row_len, channels))
                    && failures++ < 8) {
                    printf("FAIL %ld channels, rows %ld, row_len %ld\n", (long)channels, (long)rows, (long)row_len);
                }
                ++cases;
            }
        }
    }
    failures += float_epilogue_failures(&state, &cases, 1, bias_act, bias_res_act);
    return cases_verdict(cases, failures);
}
