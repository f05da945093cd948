/* Unit test of the RISC-V fused depthwise channel tiles (backends/riscv/helpers/templates/depthwise_tiles_s8x8.h.in,
 * after the depthwise MAC and the requantization epilogue, with the prefix lp): lp_depthwise_tiles_s8x8 and
 * lp_depthwise_tiles_s8x8_b16 against the plain sums of the window from the bias, requantized by the bundle's scalar
 * helpers (lp_requantize_double_small, lp_saturate_int8), for windows of 1 to 5 rows and columns, 0 to 3 tiles of
 * eight channels and 9, 13, 19 and 23 channels (the last tile overlapping the one before), packed and wider taps at every byte alignment (depthwise_layout_of), inputs and weights over the
 * whole int8 range and all at the minimum, biases up to +-2^28 (int16 ones for _b16), every shift -31..-1, drawn
 * multipliers and zero points; nothing written past the channels. Then the border form lp_depthwise_border_s8x8
 * (_b16): every window of 1 to 5 rows and columns, every box of taps inside the image at every place in it (none
 * inside too), padding values -128, -3, 0 and 127, the same channel counts. And the four forms with a lookup table
 * after the requantization (_lut_: each output looked up once, also where tiles overlap). Built by tests/backends/riscv/test_riscv_helpers_c.py
 * on the host and, for rv32imc and rv32imafc, under QEMU virt. Prints "ok <cases> cases" and exits 0, or names the
 * first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_small.h"

#define BUFFER 4096 /* elements: past the farthest one any case reads */
#define SIDE 5 /* the most rows and columns of a window */
#define MAX_CHANNELS 24
#define GUARD 4 /* output bytes after the channels that must keep their value */

/* What channel c's output is: the window's taps (r, k) inside the box (top, left, inside_rows x inside_cols; x its
   first tap) read the image, every other one value; the sum from the bias, requantized. The interior: the box the
   whole window. */
static int8_t expected_out(const int8_t *x, const int8_t *w, const depthwise_layout *l, int32_t rows, int32_t cols,
                           int32_t top, int32_t left, int32_t inside_rows, int32_t inside_cols, int32_t value,
                           int32_t c, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    const int32_t sum = padded_window_sum(x, w, NULL, l, rows, cols, top, left, inside_rows, inside_cols, value, c,
                                          bias);
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* The constants of a case's channels. */
typedef struct {
    int32_t bias[MAX_CHANNELS], multiplier[MAX_CHANNELS], zero_point;
    int16_t bias16[MAX_CHANNELS];
    int8_t shift[MAX_CHANNELS];
} constants;

static void draw_constants(constants *k, uint32_t *state, int32_t cases)
{
    k->zero_point = (int32_t)(next_value(state) % 256u) - 128;
    for (int32_t c = 0; c < MAX_CHANNELS; ++c) {
        k->bias[c] = (int32_t)(next_value(state) << 13) - (1 << 28);
        k->bias16[c] = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        k->multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
        k->shift[c] = (int8_t)(-1 - (int32_t)((uint32_t)(cases + c) % 31u));
    }
}

/* Whether out differs from the expected outputs of its channels (a box as expected_out's) or a guard byte moved. */
static int outputs_wrong(const int8_t *out, const int8_t *x, const int8_t *w, const depthwise_layout *l, int32_t rows,
                         int32_t cols, int32_t top, int32_t left, int32_t inside_rows, int32_t inside_cols,
                         int32_t value, int32_t channels, const constants *k, int narrow, const int8_t *table)
{
    int wrong = 0;
    for (int32_t c = 0; c < MAX_CHANNELS + GUARD; ++c) {
        int8_t want = c < channels
            ? expected_out(x, w, l, rows, cols, top, left, inside_rows, inside_cols, value, c,
                           narrow ? k->bias16[c] : k->bias[c], k->multiplier[c], k->shift[c], k->zero_point)
            : (int8_t)0x5a;
        if (c < channels && table != NULL) {
            want = table[want + 128];
        }
        wrong |= out[c] != want;
    }
    return wrong;
}

int main(void)
{
    static const int32_t VALUES[4] = {-128, -3, 0, 127};
    /* 0 to 3 tiles of eight, and counts eight does not divide (the last tile moved back onto the last channels) */
    static const int32_t CHANNELS[8] = {0, 8, 9, 16, 13, 24, 19, 23};
    static int8_t x[BUFFER], w[BUFFER];
    constants k;
    int8_t table[256]; /* the lookup forms' table: a permutation of the int8 values */
    uint32_t state = 5;
    for (int32_t i = 0; i < 256; ++i) {
        table[i] = (int8_t)(int32_t)((uint32_t)(i * 37 + 11) % 256u - 128u);
    }
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 1; rows <= SIDE; ++rows) {
            for (int32_t cols = 1; cols <= SIDE; ++cols) {
                for (int32_t box = 0; box < (rows + 1) * (cols + 1); ++box) {
                    /* box 0: the interior (the whole window); else the box top..rows-1, left..cols-1 cut to a size
                       from 0 */
                    const int32_t channels = CHANNELS[(box + rows + all_min) % 8];
                    const int32_t layout = (box + cols) % 3;
                    const depthwise_layout l = depthwise_layout_of(channels, rows, cols, layout, box);
                    const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                    const int interior = box == 0;
                    const int32_t top = interior ? 0 : box / (cols + 1) % rows;
                    const int32_t left = interior ? 0 : box % (cols + 1) % cols;
                    const int32_t inside_rows = interior ? rows : (box + cases) % (rows - top + 1);
                    const int32_t inside_cols = interior ? cols : (box / 2 + cases) % (cols - left + 1);
                    const int32_t value = VALUES[(box + rows) % 4];
                    fill_s8(x, BUFFER, &state, all_min);
                    fill_s8(w, BUFFER, &state, all_min);
                    draw_constants(&k, &state, cases);
                    for (int32_t helper = 0; helper < 8; ++helper) { /* tiles, border; each _b16; each _lut */
                        const int narrow = helper % 2 == 1, border = helper % 4 >= 2, lut = helper >= 4;
                        int8_t out[MAX_CHANNELS + GUARD];
                        int32_t returned;
                        if (!border && !interior) {
                            continue;
                        }
                        for (int32_t c = 0; c < MAX_CHANNELS + GUARD; ++c) {
                            out[c] = (int8_t)0x5a;
                        }
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        int8_t *const g_out = guarded_copy(0, out, channels);
                        const int8_t *const g_x = guarded_copy(1, xo, guarded_box(border ? inside_rows : rows,
                                                                                  border ? inside_cols : cols,
                                                                                  l.x_row_stride, l.x_col_stride,
                                                                                  channels, 1));
                        const int8_t *const g_w = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                                  l.w_col_stride, channels, 1));
                        const int32_t *const g_bias = guarded_copy(3, k.bias, 4 * channels);
                        const int16_t *const g_bias16 = guarded_copy(4, k.bias16, 2 * channels);
                        const int32_t *const g_multiplier = guarded_copy(5, k.multiplier, 4 * channels);
                        const int8_t *const g_shift = guarded_copy(6, k.shift, channels);
                        const int8_t *const g_table = table; /* all 256 entries readable: no guard (7 slots) */
                        if (lut) {
                            returned = border
                                ? (narrow
                                   ? lp_depthwise_border_lut_s8x8_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift,
                                         k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                         l.w_col_stride, rows, cols, top, left, inside_rows, inside_cols, value,
                                         channels, g_table)
                                   : lp_depthwise_border_lut_s8x8(g_out, g_x, g_w, g_bias, g_multiplier, g_shift,
                                         k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                         l.w_col_stride, rows, cols, top, left, inside_rows, inside_cols, value,
                                         channels, g_table))
                                : (narrow
                                   ? lp_depthwise_tiles_lut_s8x8_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift,
                                         k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                         l.w_col_stride, rows, cols, channels, g_table)
                                   : lp_depthwise_tiles_lut_s8x8(g_out, g_x, g_w, g_bias, g_multiplier, g_shift,
                                         k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                         l.w_col_stride, rows, cols, channels, g_table));
                        } else if (border) {
                            returned = narrow
                                ? lp_depthwise_border_s8x8_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift,
                                      k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride,
                                      rows, cols, top, left, inside_rows, inside_cols, value, channels)
                                : lp_depthwise_border_s8x8(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, k.zero_point,
                                      l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols,
                                      top, left, inside_rows, inside_cols, value, channels);
                        } else {
                            returned = narrow
                                ? lp_depthwise_tiles_s8x8_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift,
                                      k.zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride,
                                      rows, cols, channels)
                                : lp_depthwise_tiles_s8x8(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, k.zero_point,
                                      l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols,
                                      channels);
                        }
                        guarded_back(0, out, channels);
                        const int wrong = returned != 0
                            || outputs_wrong(out, xo, wo, &l, rows, cols, top, left, inside_rows, inside_cols, value,
                                             channels, &k, narrow, lut ? table : NULL);
                        cases += 1;
                        if (wrong && ++failures <= 5) {
                            printf("wrong helper %ld: rows %ld, cols %ld, box %ld %ld %ld %ld, value %ld, channels "
                                   "%ld, layout %ld\n", (long)helper, (long)rows, (long)cols, (long)top, (long)left,
                                   (long)inside_rows, (long)inside_cols, (long)value, (long)channels, (long)layout);
                        }
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
