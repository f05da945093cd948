/* Unit test of the fused depthwise channel tiles (backends/cortex_m/helpers/templates/helium_depthwise16.h.in after
 * helium_lanes.h.in, the Helium requantization epilogue and the bundle's scalar requantization, with the prefix
 * lp): lp_depthwise_tiles_s8 and lp_depthwise_tiles_s8_b16 (an interior pixel), lp_depthwise_border_s8 and
 * lp_depthwise_border_s8_b16 (a border pixel: a clipped window, then two padding boxes of value times the
 * weights, of 0 to 3 rows and columns each, values -128, 0, 127, 1 and 300) against the plain sums of their contract requantized
 * by the scalar helpers (lp_requantize_double, lp_saturate_int8), for every channel count 1..40 (whole tiles of
 * 16 and every predicated tail of both halves), windows of 0 to 4 rows and columns (the three-tap steps and the
 * one or two taps left), column strides of exactly the channels and wider, row strides at and above a row's taps,
 * inputs and weights at every byte alignment, values over the whole int8 range and all at the minimum,
 * per-channel biases (int32 and int16), multipliers and shifts (left and right), zero points at either end; the
 * bytes after the outputs must keep their value. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on
 * the host (portable C) and for cortex-m55 under QEMU (biases as the accumulators' start, VLD2 and gathers,
 * VMOVLB/VMOVLT, VMOVNB/VMOVNT, VSTRB.16 predicated). Prints "ok <cases> cases" and exits 0, or names the first
 * failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_tiles.h"

#define BUFFER 2048    /* elements: past the farthest one any case reads (under 1,000) */
#define SIDE 4         /* the most rows and columns of a window */
#define CHANNELS_MAX 40
#define GUARD 3        /* bytes after the outputs that must keep their value */

/* A border pixel's padding boxes: value times the weights pad[i] of pad_rows[i] x pad_cols[i] taps. */
typedef struct {
    const int8_t *pad[2];
    int32_t pad_rows[2], pad_cols[2], value;
} padding_boxes;

/* What the scalar loops the helper replaces store for channel c (with the padding's products of `padding`). */
static int8_t expected_out(const int8_t *x, const int8_t *w, const depthwise_layout *l, int32_t rows, int32_t cols,
                           int32_t c, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point,
                           const padding_boxes *padding)
{
    int32_t sum = bias;
    for (int32_t box = 0; box < 2; ++box) {
        for (int32_t r = 0; r < padding->pad_rows[box]; ++r) {
            for (int32_t k = 0; k < padding->pad_cols[box]; ++k) {
                sum += padding->value * padding->pad[box][r * l->w_row_stride + k * l->w_col_stride + c];
            }
        }
    }
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            sum += x[r * l->x_row_stride + k * l->x_col_stride + c] * w[r * l->w_row_stride + k * l->w_col_stride + c];
        }
    }
    const int32_t requantized = lp_requantize_double(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

int main(void)
{
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, 1277447166, 2004318071};
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 11;
    int32_t cases = 0, failures = 0;
    for (int32_t channels = 1; channels <= CHANNELS_MAX; ++channels) {
        for (int32_t rows = 0; rows <= SIDE; ++rows) {
            for (int32_t cols = 0; cols <= SIDE; ++cols) {
                for (int32_t layout = 0; layout < 2; ++layout) {
                    const depthwise_layout l = depthwise_layout_of(channels, rows, cols, layout, channels);
                    const int8_t *xo = x + l.x_offset, *wo = w + l.w_offset;
                    const int32_t zero_point = zero_points[(channels + rows + cols) % 4];
                    fill_s8(x, BUFFER, &state, cases % 7 == 3);
                    fill_s8(w, BUFFER, &state, cases % 7 == 3);
                    int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
                    int16_t bias16[CHANNELS_MAX];
                    int8_t shift[CHANNELS_MAX];
                    for (int32_t c = 0; c < CHANNELS_MAX; ++c) {
                        bias[c] = (int32_t)(next_value(&state) >> 19) - (1 << 12);
                        bias16[c] = (int16_t)bias[c];
                        multiplier[c] = multipliers[(cases + c) % 5];
                        shift[c] = (int8_t)(c % 3 == 2 ? 1 : -(int32_t)(4 + (cases + c) % 8));
                    }
                    int8_t out[CHANNELS_MAX + GUARD], out16[CHANNELS_MAX + GUARD];
                    for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                        out[c] = out16[c] = (int8_t)0x5a;
                    }
                    static const int32_t values[] = {-128, 0, 127, 1, 300};
                    const int border = cases % 2;
                    padding_boxes padding = {{wo, wo + l.w_row_stride}, {0, 0}, {0, 0}, values[cases % 5]};
                    if (border) {
                        padding.pad_rows[0] = cols % 4;
                        padding.pad_cols[0] = rows % 4;
                        padding.pad_rows[1] = (rows + channels) % 3;
                        padding.pad_cols[1] = (cols + channels / 2) % 4;
                    }
                    const int32_t returned = border
                        ? lp_depthwise_border_s8(out, xo, wo, bias, multiplier, shift, zero_point, l.x_row_stride,
                                                 l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols,
                                                 padding.pad[0], padding.pad_rows[0], padding.pad_cols[0],
                                                 padding.pad[1], padding.pad_rows[1], padding.pad_cols[1],
                                                 padding.value, channels)
                          | lp_depthwise_border_s8_b16(out16, xo, wo, bias16, multiplier, shift, zero_point,
                                                       l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                       l.w_col_stride, rows, cols, padding.pad[0],
                                                       padding.pad_rows[0], padding.pad_cols[0], padding.pad[1],
                                                       padding.pad_rows[1], padding.pad_cols[1], padding.value,
                                                       channels)
                        : lp_depthwise_tiles_s8(out, xo, wo, bias, multiplier, shift, zero_point, l.x_row_stride,
                                                l.x_col_stride, l.w_row_stride, l.w_col_stride, rows, cols, channels)
                          | lp_depthwise_tiles_s8_b16(out16, xo, wo, bias16, multiplier, shift, zero_point,
                                                      l.x_row_stride, l.x_col_stride, l.w_row_stride,
                                                      l.w_col_stride, rows, cols, channels);
                    int wrong = returned != 0;
                    for (int32_t c = 0; c < channels + GUARD; ++c) {
                        const int8_t want = c < channels ? expected_out(xo, wo, &l, rows, cols, c, bias[c],
                                                                        multiplier[c], shift[c], zero_point,
                                                                        &padding)
                                                         : (int8_t)0x5a;
                        wrong |= out[c] != want || out16[c] != want;
                    }
                    cases += 1;
                    if (wrong && failures++ < 8) {
                        printf("FAIL: channels %ld, rows %ld, cols %ld, layout %ld, border %d\n", (long)channels,
                               (long)rows, (long)cols, (long)layout, border);
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
