/* Unit test of the DSP cores' fused depthwise channel tiles (backends/cortex_m/helpers/templates/
 * depthwise_tiles.h.in after dsp_words.h.in, depthwise_mac.h.in and requantize_small.h.in, with the prefix lp):
 * lp_depthwise_tiles_s8x4, _s8x4_b16, their int16 weights' lp_depthwise_tiles_s8x4w16 (_b16), its stepped form
 * lp_depthwise_tiles_stepped_s8x4w16 (_b16) and the out-of-line
 * copies lp_depthwise_tiles3x3_s8x4w16 (_b16), lp_depthwise_tiles5x5_s8x4w16 (_b16) against the plain sums of the window from the bias and the bundle's scalar
 * requantization (lp_requantize_double_small, lp_saturate_int8), for windows of 1 to 5 rows and columns (the
 * copies: 1 to 5 rows of their columns, as they loop over rows), 0 to 3 tiles of four channels, packed and
 * wider taps at every byte alignment, inputs and weights over the whole int8 range and all at the minimum,
 * biases up to +-2^28 (int16 ones for _b16), every shift -31..-1, drawn multipliers and zero points; nothing
 * written past the channels; the int16 weights (the int8 ones widened) at a 4-byte-aligned place, their strides
 * rounded up to even. Then the border helpers lp_depthwise_border_s8x4w16 (_b16) and, where the window is 3x3
 * or 5x5, the out-of-line lp_depthwise_border3x3_s8x4w16 / 5x5 (_b16): every window of 1 to 5 rows and columns, every
 * box of taps inside the image at every place in it (none inside too), padding values -128, -3, 0 and 127, 0 to 3
 * tiles and 260 channels (three groups of the helper's 128 bytes of padding: the taps set once, then moved
 * on); and lp_depthwise_pad_s8x4, _s8x4w16 (the
 * padding products of a tile) against value times the plain sum of the weights. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable
 * C) and for cortex-m4f under QEMU. Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_tiles_s8x4.h"

#define BUFFER 8192 /* elements: past the farthest one any case reads */
#define SIDE 5 /* the most rows and columns of a window */
#define MAX_CHANNELS 12
#define GUARD 4 /* output bytes after the channels that must keep their value */

/* The weights of a case: int8 (w8) or int16 (w16, the other NULL); element i. */
typedef struct {
    const int8_t *w8;
    const int16_t *w16;
} weights;

static int32_t weight_at(weights w, int32_t i)
{
    return w.w8 != NULL ? w.w8[i] : w.w16[i];
}

/* l with its weights' strides rounded up to even and its offset to an even element: the int16 weights' layout (a
   4-byte-aligned place for a 4-byte-aligned buffer). */
static depthwise_layout widened_layout(depthwise_layout l)
{
    l.w_col_stride += l.w_col_stride % 2;
    l.w_row_stride += l.w_row_stride % 2;
    l.w_offset -= l.w_offset % 2;
    return l;
}

/* What the kernel's loop stores for channel c: the plain window sum from the bias, requantized. */
static int8_t expected_out(const int8_t *x, weights w, const depthwise_layout *l, int32_t rows, int32_t cols,
                           int32_t c, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    int32_t sum = bias;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            sum += x[r * l->x_row_stride + k * l->x_col_stride + c] * weight_at(w, r * l->w_row_stride + k * l->w_col_stride + c);
        }
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* What a border pixel's output c is: its window's taps inside the box (top, left, inside_rows x inside_cols; x
   its first tap) read the image, every other one value; the sum from the bias, requantized. */
static int8_t expected_border(const int8_t *x, const int16_t *w, const depthwise_layout *l, int32_t rows,
                              int32_t cols, int32_t top, int32_t left, int32_t inside_rows, int32_t inside_cols,
                              int32_t value, int32_t c, int32_t bias, int32_t multiplier, int32_t shift,
                              int32_t zero_point)
{
    const int32_t sum = padded_window_sum(x, NULL, w, l, rows, cols, top, left, inside_rows, inside_cols, value, c,
                                          bias);
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

typedef int32_t (*border_s8x4)(int8_t *, const int8_t *, const int16_t *, const int32_t *, const int32_t *,
                               const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                               int32_t, int32_t, int32_t, int32_t, int32_t);
typedef int32_t (*border_s8x4_b16)(int8_t *, const int8_t *, const int16_t *, const int16_t *, const int32_t *,
                                   const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                                   int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
static const border_s8x4 BORDER32[3] = {lp_depthwise_border_s8x4w16, lp_depthwise_border3x3_s8x4w16,
                                        lp_depthwise_border5x5_s8x4w16};
static const border_s8x4_b16 BORDER16[3] = {lp_depthwise_border_s8x4w16_b16, lp_depthwise_border3x3_s8x4w16_b16,
                                            lp_depthwise_border5x5_s8x4w16_b16};
#define BORDER_CHANNELS 260

/* The border helpers and the padding products over their cases (see the top); adds to *cases and *failures. */
static void test_border(int8_t *x, int8_t *w, int16_t *w16, uint32_t *state, int32_t *cases, int32_t *failures)
{
    static const int32_t VALUES[4] = {-128, -3, 0, 127};
    int32_t bias[BORDER_CHANNELS], multiplier[BORDER_CHANNELS];
    int16_t bias16[BORDER_CHANNELS];
    int8_t shift[BORDER_CHANNELS];
    for (int32_t rows = 1; rows <= SIDE; ++rows) {
        for (int32_t cols = 1; cols <= SIDE; ++cols) {
            for (int32_t box = 0; box < (rows + 1) * (cols + 1); ++box) {
                /* the box: top..rows-1 and left..cols-1 cut to a size from 0 */
                const int32_t top = box / (cols + 1) % rows, left = box % (cols + 1) % cols;
                const int32_t inside_rows = (box + *cases) % (rows - top + 1);
                const int32_t inside_cols = (box / 2 + *cases) % (cols - left + 1);
                const int32_t channels = (box % 5 == 4) ? BORDER_CHANNELS : 4 * (box % 4);
                const depthwise_layout l8 = depthwise_layout_of(channels, rows, cols, box % 3, box);
                const depthwise_layout l = widened_layout(l8);
                const int8_t *xo = x + l.x_offset, *w8o = w + l8.w_offset;
                const int16_t *wo = w16 + l.w_offset;
                const int32_t value = VALUES[(box + rows) % 4];
                const int32_t zero_point = (int32_t)(next_value(state) % 256u) - 128;
                fill_s8(x, BUFFER, state, box % 7 == 6);
                fill_s8(w, BUFFER, state, box % 7 == 6);
                for (int32_t i = 0; i < BUFFER; ++i) {
                    w16[i] = w[i];
                }
                for (int32_t c = 0; c < BORDER_CHANNELS; ++c) {
                    bias[c] = (int32_t)(next_value(state) << 13) - (1 << 28);
                    bias16[c] = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
                    multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
                    shift[c] = (int8_t)(-1 - (int32_t)((uint32_t)(*cases + c) % 31u));
                }
                for (int32_t helper = 0; helper < 6; ++helper) { /* inlined, 3x3, 5x5; each _b16 too */
                    const int narrow = helper % 2 == 1, side = helper < 2 ? 0 : (helper < 4 ? 3 : 5);
                    int8_t out[BORDER_CHANNELS + GUARD];
                    int32_t returned, wrong;
                    if (side != 0 && (rows != side || cols != side)) {
                        continue;
                    }
                    for (int32_t c = 0; c < BORDER_CHANNELS + GUARD; ++c) {
                        out[c] = (int8_t)0x5a;
                    }
                    /* every buffer exactly what the call reads and writes, against no-access memory */
                    int8_t *const g_out = guarded_copy(0, out, channels);
                    const int8_t *const g_x = guarded_copy(1, xo, guarded_box(inside_rows, inside_cols, l.x_row_stride,
                                                                              l.x_col_stride, channels, 1));
                    const int16_t *const g_w = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                               l.w_col_stride, channels, 2));
                    const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
                    const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
                    const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
                    const int8_t *const g_shift = guarded_copy(6, shift, channels);
                    if (narrow) {
                        returned = BORDER16[helper / 2](g_out, g_x, g_w, g_bias16, g_multiplier, g_shift, zero_point,
                            l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols, top, left,
                            inside_rows, inside_cols, value, channels);
                    } else {
                        returned = BORDER32[helper / 2](g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point,
                            l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols, top, left,
                            inside_rows, inside_cols, value, channels);
                    }
                    guarded_back(0, out, channels);
                    wrong = returned != 0;
                    for (int32_t c = 0; c < BORDER_CHANNELS + GUARD; ++c) {
                        const int8_t want = c < channels
                            ? expected_border(xo, wo, &l, rows, cols, top, left, inside_rows, inside_cols, value, c,
                                              narrow ? bias16[c] : bias[c], multiplier[c], shift[c], zero_point)
                            : (int8_t)0x5a;
                        wrong |= out[c] != want;
                    }
                    *cases += 1;
                    if (wrong && ++*failures <= 5) {
                        printf("wrong border helper %ld: rows %ld, cols %ld, box %ld %ld %ld %ld, value %ld, "
                               "channels %ld\n", (long)helper, (long)rows, (long)cols, (long)top, (long)left,
                               (long)inside_rows, (long)inside_cols, (long)value, (long)channels);
                    }
                }
                for (int wide = 0; wide <= 1; ++wide) { /* the padding products of one tile: int8, int16 weights */
                    const depthwise_layout *lw = wide ? &l : &l8;
                    const weights ws = {wide ? NULL : w8o, wide ? wo : NULL};
                    int32_t acc[4 + 1], want[4];
                    for (int32_t c = 0; c < 4; ++c) {
                        acc[c] = bias[c];
                        want[c] = bias[c];
                        for (int32_t r = 0; r < rows; ++r) {
                            for (int32_t k = 0; k < cols; ++k) {
                                want[c] += value * weight_at(ws, r * lw->w_row_stride + k * lw->w_col_stride + c);
                            }
                        }
                    }
                    acc[4] = 0x5a5a;
                    int32_t *const sums = guarded_copy(0, acc, 16); /* guarded: exactly what the call touches */
                    const int32_t returned = wide
                        ? lp_depthwise_pad_s8x4w16(sums, guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                                         l.w_col_stride, 4, 2)),
                                                   l.w_row_stride, l.w_col_stride, rows, cols, value, 4)
                        : lp_depthwise_pad_s8x4(sums, guarded_copy(2, w8o, guarded_box(rows, cols, l8.w_row_stride,
                                                                                       l8.w_col_stride, 4, 1)),
                                                l8.w_row_stride, l8.w_col_stride, rows, cols, value, 4);
                    guarded_back(0, acc, 16);
                    int wrong = returned != 0 || acc[4] != 0x5a5a;
                    for (int32_t c = 0; c < 4; ++c) {
                        wrong |= acc[c] != want[c];
                    }
                    *cases += 1;
                    if (wrong && ++*failures <= 5) {
                        printf("wrong padding products (int16 weights %d): rows %ld, cols %ld, value %ld\n", wide,
                               (long)rows, (long)cols, (long)value);
                    }
                }
            }
        }
    }
}

/* The helpers of one bias type over int16 weights: inlined, the 3x3 copy, the 5x5 copy (their side: 0, 3, 5), the
   stepped form (inlined: side 0). */
typedef int32_t (*tiles_s8x4)(int8_t *, const int8_t *, const int16_t *, const int32_t *, const int32_t *,
                              const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
typedef int32_t (*tiles_s8x4_b16)(int8_t *, const int8_t *, const int16_t *, const int16_t *, const int32_t *,
                                  const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                                  int32_t);
static const tiles_s8x4 TILES32[4] = {lp_depthwise_tiles_s8x4w16, lp_depthwise_tiles3x3_s8x4w16,
                                      lp_depthwise_tiles5x5_s8x4w16, lp_depthwise_tiles_stepped_s8x4w16};
static const tiles_s8x4_b16 TILES16[4] = {lp_depthwise_tiles_s8x4w16_b16, lp_depthwise_tiles3x3_s8x4w16_b16,
                                          lp_depthwise_tiles5x5_s8x4w16_b16, lp_depthwise_tiles_stepped_s8x4w16_b16};

/* A 4-byte-aligned buffer of int16 weights. */
static union {
    int32_t words[BUFFER / 2];
    int16_t halves[BUFFER];
} widened;

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    int32_t bias[MAX_CHANNELS], multiplier[MAX_CHANNELS];
    int16_t bias16[MAX_CHANNELS];
    int8_t shift[MAX_CHANNELS];
    uint32_t state = 7;
    int32_t cases = 0, failures = 0;
    for (int all_min = 0; all_min <= 1; ++all_min) {
        for (int32_t rows = 1; rows <= SIDE; ++rows) {
            for (int32_t cols = 1; cols <= SIDE; ++cols) {
                for (int32_t channels = 0; channels <= MAX_CHANNELS; channels += 4) {
                    for (int32_t layout = 0; layout < 3; ++layout) {
                        const depthwise_layout l8 = depthwise_layout_of(channels, rows, cols, layout, channels / 4);
                        const depthwise_layout l16 = widened_layout(l8);
                        const int8_t *xo = x + l8.x_offset, *wo = w + l8.w_offset;
                        const int16_t *w16o = widened.halves + l16.w_offset;
                        const int32_t zero_point = (int32_t)(next_value(&state) % 256u) - 128;
                        fill_s8(x, BUFFER, &state, all_min);
                        fill_s8(w, BUFFER, &state, all_min);
                        for (int32_t i = 0; i < BUFFER; ++i) {
                            widened.halves[i] = w[i];
                        }
                        draw_depthwise_constants(bias, bias16, multiplier, shift, MAX_CHANNELS, cases, &state);
                        for (int32_t helper = 0; helper < 10; ++helper) {
                            /* int16 weights: inlined, 3x3, 5x5; then int8 ones, inlined; then int16 ones
                               stepped; each _b16 too */
                            const int narrow = helper % 2 == 1, side = helper < 2 || helper >= 6 ? 0 : (helper < 4 ? 3 : 5);
                            const int wide = helper < 6 || helper >= 8;
                            const int32_t form = helper < 6 ? helper / 2 : 3; /* TILES32's, TILES16's */
                            const depthwise_layout l = wide ? l16 : l8;
                            const weights ws = {wide ? NULL : wo, wide ? w16o : NULL};
                            int8_t out[MAX_CHANNELS + GUARD];
                            int32_t returned, wrong = 0;
                            if (side != 0 && cols != side) {
                                continue;
                            }
                            for (int32_t c = 0; c < MAX_CHANNELS + GUARD; ++c) {
                                out[c] = (int8_t)0x5a;
                            }
                            /* every buffer exactly what the call reads and writes, against no-access memory */
                            int8_t *const g_out = guarded_copy(0, out, channels);
                            const int8_t *const g_x = guarded_copy(1, xo, guarded_box(rows, cols, l.x_row_stride,
                                                                                      l.x_col_stride, channels, 1));
                            const int32_t w_bytes = guarded_box(rows, cols, l.w_row_stride, l.w_col_stride, channels,
                                                                wide ? 2 : 1);
                            const int8_t *const g_w8 = wide ? NULL : guarded_copy(2, wo, w_bytes);
                            const int16_t *const g_w16 = wide ? guarded_copy(2, w16o, w_bytes) : NULL;
                            const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
                            const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
                            const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
                            const int8_t *const g_shift = guarded_copy(6, shift, channels);
                            if (!wide) {
                                returned = narrow
                                    ? lp_depthwise_tiles_s8x4_b16(g_out, g_x, g_w8, g_bias16, g_multiplier, g_shift,
                                          zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride,
                                          rows, cols, channels)
                                    : lp_depthwise_tiles_s8x4(g_out, g_x, g_w8, g_bias, g_multiplier, g_shift,
                                          zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride,
                                          rows, cols, channels);
                            } else if (narrow) {
                                returned = TILES16[form](g_out, g_x, g_w16, g_bias16, g_multiplier, g_shift,
                                    zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows,
                                    cols, channels);
                            } else {
                                returned = TILES32[form](g_out, g_x, g_w16, g_bias, g_multiplier, g_shift,
                                    zero_point, l.x_row_stride, l.x_col_stride, l.w_row_stride, l.w_col_stride, rows,
                                    cols, channels);
                            }
                            guarded_back(0, out, channels);
                            wrong = returned != 0;
                            for (int32_t c = 0; c < MAX_CHANNELS + GUARD; ++c) {
                                const int8_t want = c < channels
                                    ? expected_out(xo, ws, &l, rows, cols, c, narrow ? bias16[c] : bias[c],
                                                   multiplier[c], shift[c], zero_point)
                                    : (int8_t)0x5a;
                                wrong |= out[c] != want;
                            }
                            cases += 1;
                            if (wrong) {
                                failures += 1;
                                if (failures <= 5) {
                                    printf("wrong helper %ld: rows %ld, cols %ld, channels %ld, layout %ld\n",
                                           (long)helper, (long)rows, (long)cols, (long)channels, (long)layout);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    test_border(x, w, widened.halves, &state, &cases, &failures);
    return cases_verdict(cases, failures);
}
