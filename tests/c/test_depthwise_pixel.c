/* Unit test of the DSP cores' depthwise tiles of one pixel of any channel count (backends/cortex_m/helpers/
 * templates/depthwise_pixel.h.in after dsp_words.h.in, depthwise_mac.h.in, requantize_small.h.in and
 * depthwise_tiles.h.in, with the prefix lp): lp_depthwise_pixel_s8x4 and _b16 against the plain sums of the window
 * from the bias and the bundle's scalar requantization (lp_requantize_double_small, lp_saturate_int8), nothing
 * read or written outside the contract's buffers; lp_depthwise_pixel_s8x4w16 and _b16 the same with the weights
 * widened to int16 (the int8 lowering's, for an even channel count); lp_depthwise_pixel_tail_s8x4 and _b16 the same
 * (int8 weights) for a channel count one more than a multiple of four (5, 9, 21, 33: the last channel alone). Channels
 * 4 (one tile), 5, 6, 7 (the last tile overlapping the
 * first), 30 and 42 (two mod four, the depthwise runs' pixels), 9, 21, 33 and 255 (odd), 8 (whole tiles); 3x3, 5x5 at
 * dilation 2, a 1x10 row and a 2x3 window; the inputs a band of a row (strides of the channels) or of another
 * pitch, the weights the layer's (KH, KW, C); inputs and weights over the whole int8 range and all at the minimum,
 * biases up to +-2^28 (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points; each geometry
 * with constant sizes (inlined, as a kernel calls it) and with sizes read at run time. Every buffer is handed over
 * guarded (guarded_buffers.h): exactly the window's box of inputs and of weights, the channels' biases,
 * multipliers, shifts and outputs, against no-access memory, each helper once with its buffers ending at a guard
 * and once starting after one: a byte read or written outside faults. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU.
 * Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_pixel.h"

#define X_BYTES 12288 /* past the farthest input any case reads */
#define W_BYTES 8192 /* past the farthest weight any case reads */
#define MAX_CHANNELS 256

static int8_t x[X_BYTES], w[W_BYTES], out[MAX_CHANNELS];
static int16_t w16[W_BYTES]; /* w widened (the int16 helpers' weights) */
static int32_t bias[MAX_CHANNELS], multiplier[MAX_CHANNELS];
static int16_t bias16[MAX_CHANNELS];
static int8_t shift[MAX_CHANNELS];
static int32_t zero_point;
static uint32_t state = 1u;
static int32_t cases, failures;

/* Fresh inputs, weights and constants; all inputs and weights -128 where all_min. */
static void draw(int all_min)
{
    fill_s8(x, X_BYTES, &state, all_min);
    fill_s8(w, W_BYTES, &state, all_min);
    for (int32_t i = 0; i < W_BYTES; ++i) {
        w16[i] = w[i];
    }
    draw_depthwise_constants(bias, bias16, multiplier, shift, MAX_CHANNELS, cases, &state);
    zero_point = (int32_t)(next_value(&state) % 256u) - 128;
}

/* What the helper stores for channel c. */
static int8_t expected(int32_t c, int narrow, int32_t x_row_stride, int32_t x_col_stride, int32_t w_row_stride,
                       int32_t w_col_stride, int32_t rows, int32_t cols)
{
    int32_t sum = narrow ? bias16[c] : bias[c];
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            sum += x[r * x_row_stride + k * x_col_stride + c] * w[r * w_row_stride + k * w_col_stride + c];
        }
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier[c], shift[c]);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* One geometry, both bias types, mixed and extreme values (inlined: the sizes constants where the caller's are),
   int8 weights and, for an even channel count (the int16 helpers' domain), int16 ones, or for a count one more than
   a multiple of four from 5 (the tail helpers' domain) the tail helpers, every buffer a guarded copy
   of exactly what the call reads or writes (the forms' order puts each bias type's copies once at a guard's start
   and once at a guard's end: guarded_copy alternates per slot). */
static inline __attribute__((always_inline)) void check(int32_t x_row_stride, int32_t x_col_stride,
        int32_t w_row_stride, int32_t w_col_stride, int32_t rows, int32_t cols, int32_t channels)
{
    const int tails = channels % 4 == 1 && channels > 4;
    const int32_t forms = channels % 2 == 0 || tails ? 8 : 4;
    for (int32_t form = 0; form < forms; ++form) {
        const int narrow = form % 4 == 1 || form % 4 == 2, all_min = form % 4 / 2, wide = form / 4 && !tails;
        const int tail = form / 4 && tails;
        const int32_t w_box = guarded_box(rows, cols, w_row_stride, w_col_stride, channels, 1);
        int32_t returned, wrong;
        draw(all_min);
        int8_t *const g_out = guarded_copy(0, out, channels);
        const int8_t *const g_x = guarded_copy(1, x, guarded_box(rows, cols, x_row_stride, x_col_stride, channels, 1));
        const void *const g_w = wide ? guarded_copy(2, w16, 2 * w_box) : guarded_copy(2, w, w_box);
        const void *const g_bias = narrow ? guarded_copy(3, bias16, 2 * channels) : guarded_copy(3, bias, 4 * channels);
        const int32_t *const g_multiplier = guarded_copy(4, multiplier, 4 * channels);
        const int8_t *const g_shift = guarded_copy(5, shift, channels);
        if (wide) {
            returned = narrow
                ? lp_depthwise_pixel_s8x4w16_b16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                                                 x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                                 channels)
                : lp_depthwise_pixel_s8x4w16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                                             x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                             channels);
        } else if (tail) {
            returned = narrow
                ? lp_depthwise_pixel_tail_s8x4_b16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                                                   x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                                   channels)
                : lp_depthwise_pixel_tail_s8x4(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                                               x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                               channels);
        } else {
            returned = narrow
                ? lp_depthwise_pixel_s8x4_b16(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                                              x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols,
                                              channels)
                : lp_depthwise_pixel_s8x4(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point, x_row_stride,
                                          x_col_stride, w_row_stride, w_col_stride, rows, cols, channels);
        }
        guarded_back(0, out, channels);
        wrong = returned != 0;
        for (int32_t c = 0; c < channels; ++c) {
            wrong |= out[c] != expected(c, narrow, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols);
        }
        cases += 1;
        if (wrong && ++failures <= 5) {
            printf("wrong pixel: %ldx%ld taps, strides %ld %ld %ld %ld, channels %ld, form %ld\n", (long)rows,
                   (long)cols, (long)x_row_stride, (long)x_col_stride, (long)w_row_stride, (long)w_col_stride,
                   (long)channels, (long)form);
        }
    }
}

/* A 3x3 window over a band of 7 pixels a row (the depthwise runs' pixel tiles), then the same with the sizes read
   at run time (the helper's loops not unrolled). */
static void check_band(int32_t channels)
{
    volatile int32_t rows = 3;
    check(7 * channels, channels, 3 * channels, channels, 3, 3, channels);
    check(7 * channels, channels, 3 * channels, channels, rows, 3, channels);
}

int main(void)
{
    static const int32_t CHANNELS[] = {4, 5, 6, 7, 8, 9, 21, 30, 33, 42};
    for (uint32_t i = 0; i < sizeof CHANNELS / sizeof CHANNELS[0]; ++i) {
        check_band(CHANNELS[i]);
    }
    /* 255 channels (the last tile from 251); 5x5 at dilation 2 over 30; a 1x10 row of 7; a 2x3 window of 7 whose
       band rows are 1,000 bytes apart and weights' rows wider than the window */
    check(3 * 255, 255, 3 * 255, 255, 3, 3, 255);
    check(13 * 30, 2 * 30, 5 * 30, 30, 5, 5, 30);
    check(13 * 33, 2 * 33, 5 * 33, 33, 5, 5, 33);
    check(70, 7, 70, 7, 1, 10, 7);
    check(1000, 7, 35, 7, 2, 3, 7);
    return cases_verdict(cases, failures);
}
