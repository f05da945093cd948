/* Unit test of the DSP cores' two-pixel depthwise channel tiles (backends/cortex_m/helpers/templates/
 * depthwise_pair.h.in after dsp_words.h.in, depthwise_mac.h.in, requantize_small.h.in and depthwise_tiles.h.in,
 * with the prefix lp): lp_depthwise_pair_s8x4w16 and _b16 against the plain sums of each pixel's window from the
 * bias and the bundle's scalar requantization (lp_requantize_double_small, lp_saturate_int8), nothing written
 * outside the two pixels' channels. Each geometry is a call with constant sizes (the assembly block's path where
 * it is compiled: cortex-m4f at -O2), its rows written out and looped: a 3x3 window whose second pixel is one
 * column on (shared columns), one row on (the columns as rows), two columns on (stride 2: each tap's weights
 * once), a 1x3 and a 1x10 row (the time-axis layers, shared columns), a 5x5 window at dilation 2, rows 5,000
 * bytes apart (the row step in a register), weights whose rows hold more than the window's taps, one tile of
 * four channels; and windows the block does not take (weights 1,200 bytes a tap; sizes read at run time: the
 * one-pixel tiles twice). Inputs and weights over the whole int8 range and all at the minimum, biases up to
 * +-2^28 (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU.
 * Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_pair.h"

#define X_BYTES 16384 /* past the farthest input any case reads */
#define W_HALVES 4096 /* past the farthest weight any case reads */
#define MAX_CHANNELS 600
#define GUARD 8 /* output bytes around the pixels' channels that must keep their value */
#define OUT_BYTES (2 * MAX_CHANNELS + 3 * GUARD + 1300)

static int8_t x[X_BYTES];
static int16_t w[W_HALVES];
static int8_t out[OUT_BYTES];
static int32_t bias[MAX_CHANNELS], multiplier[MAX_CHANNELS];
static int16_t bias16[MAX_CHANNELS];
static int8_t shift[MAX_CHANNELS];
static int32_t zero_point;
static uint32_t state = 1u;
static int32_t cases, failures;

/* Fresh inputs, weights (int8 values widened) and constants; all inputs and weights -128 where all_min. */
static void draw(int all_min)
{
    fill_s8(x, X_BYTES, &state, all_min);
    for (int32_t i = 0; i < W_HALVES; ++i) {
        w[i] = (int16_t)(all_min ? -128 : (int32_t)(next_value(&state) % 256u) - 128);
    }
    draw_depthwise_constants(bias, bias16, multiplier, shift, MAX_CHANNELS, cases, &state);
    zero_point = (int32_t)(next_value(&state) % 256u) - 128;
}

/* What the kernel stores for pixel p's channel c. */
static int8_t expected(int32_t p, int32_t c, int narrow, int32_t x_row_stride, int32_t x_col_stride,
                       int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t x_step)
{
    int32_t sum = narrow ? bias16[c] : bias[c];
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            sum += x[p * x_step + r * x_row_stride + k * x_col_stride + c] * w[r * w_row_stride + k * w_col_stride + c];
        }
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier[c], shift[c]);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* Where the assembly block is compiled, check is inlined, so that its sizes are constants at the helper's call
   wherever the caller's are; elsewhere (the host's portable C, a debug build) the helper runs the one-pixel tiles
   whatever the sizes, and one copy of check is compiled instead of one per geometry (the host's build with the
   sanitizers took some 75 CPU-seconds so). */
#if defined(LP_DEPTHWISE_PAIR_ASM)
#define CHECK_INLINE static inline __attribute__((always_inline))
#else
#define CHECK_INLINE static
#endif

/* One geometry, both bias types and row forms, mixed and extreme values. */
CHECK_INLINE void check(int32_t x_row_stride, int32_t x_col_stride,
        int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t channels, int32_t out_step,
        int32_t x_step)
{
    for (int32_t form = 0; form < 8; ++form) {
        const int narrow = form % 2, rolled = form / 2 % 2, all_min = form / 4;
        int32_t returned, wrong;
        draw(all_min);
        for (int32_t i = 0; i < OUT_BYTES; ++i) {
            out[i] = (int8_t)0x5a;
        }
        /* every buffer exactly what the call reads and writes (both pixels'), against no-access memory */
        const int32_t out_bytes = out_step + channels;
        int8_t *const g_out = guarded_copy(0, out + GUARD, out_bytes);
        const int8_t *const g_x = guarded_copy(1, x, x_step + guarded_box(rows, cols, x_row_stride, x_col_stride,
                                                                         channels, 1));
        const int16_t *const g_w = guarded_copy(2, w, guarded_box(rows, cols, w_row_stride, w_col_stride, channels, 2));
        const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
        const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
        const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
        const int8_t *const g_shift = guarded_copy(6, shift, channels);
        if (narrow) {
            returned = rolled
                ? lp_depthwise_pair_s8x4w16_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift, zero_point,
                                                x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                                channels, out_step, x_step, 1)
                : lp_depthwise_pair_s8x4w16_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift, zero_point,
                                                x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                                channels, out_step, x_step, 0);
        } else {
            returned = rolled
                ? lp_depthwise_pair_s8x4w16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point, x_row_stride,
                                            x_col_stride, w_row_stride, w_col_stride, rows, cols, channels, out_step,
                                            x_step, 1)
                : lp_depthwise_pair_s8x4w16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point, x_row_stride,
                                            x_col_stride, w_row_stride, w_col_stride, rows, cols, channels, out_step,
                                            x_step, 0);
        }
        guarded_back(0, out + GUARD, out_bytes);
        wrong = returned != 0;
        for (int32_t i = 0; i < OUT_BYTES; ++i) {
            const int32_t at = i - GUARD;
            const int32_t p = at >= out_step && at < out_step + channels ? 1 : 0;
            const int32_t c = at - p * out_step;
            const int8_t want = c >= 0 && c < channels
                ? expected(p, c, narrow, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, x_step)
                : (int8_t)0x5a;
            wrong |= out[i] != want;
        }
        cases += 1;
        if (wrong && ++failures <= 5) {
            printf("wrong pair: %ldx%ld taps, strides %ld %ld %ld %ld, channels %ld, steps %ld %ld, form %ld\n",
                   (long)rows, (long)cols, (long)x_row_stride, (long)x_col_stride, (long)w_row_stride,
                   (long)w_col_stride, (long)channels, (long)out_step, (long)x_step, (long)form);
        }
    }
}

int main(void)
{
    /* 3x3 over 64 channels (kws_ref_model's layer): the second pixel one column on, one row on, two columns on */
    check(320, 64, 192, 64, 3, 3, 64, 64, 64);
    check(320, 64, 192, 64, 3, 3, 64, 320, 320);
    check(640, 64, 192, 64, 3, 3, 64, 64, 128);
    /* one row of 3 and 10 taps (str_ww_ref_model's time-axis layers as rows), the second pixel one tap on */
    check(40, 40, 40, 40, 1, 3, 40, 40, 40);
    check(128, 128, 128, 128, 1, 10, 128, 128, 128);
    /* 5x5 at dilation 2 over 8 channels; rows 5,000 bytes apart; weights' rows wider than the window; one tile */
    check(400, 16, 40, 8, 5, 5, 8, 8, 8);
    check(5000, 16, 48, 16, 3, 3, 16, 16, 16);
    check(200, 12, 44, 12, 3, 3, 12, 24, 24);
    check(64, 4, 12, 4, 2, 3, 4, 4, 8);
    /* windows the assembly block does not take: weights 1,200 bytes a tap; sizes read at run time */
    check(1800, 600, 1800, 600, 1, 3, 600, 600, 600);
    {
        volatile int32_t cols = 3;
        check(320, 64, 192, 64, 3, cols, 64, 64, 64);
    }
    return cases_verdict(cases, failures);
}
