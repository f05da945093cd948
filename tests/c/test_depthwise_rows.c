/* Unit test of the DSP cores' depthwise channel rows (backends/cortex_m/helpers/templates/depthwise_rows.h.in and
 * depthwise_rows_any.h.in after dsp_words.h.in, depthwise_mac.h.in and requantize_small.h.in, with the prefix lp): lp_depthwise_rows_s8 of
 * windows of 1 to 7 rows and 1 to 7 columns (and lp_depthwise_rows3x3_s8 where the window is 3x3, a third of the
 * shapes) against the plain sums of each output's window from the bias (the padding's taps reading value) and the
 * bundle's scalar requantization (lp_requantize_double_small, lp_saturate_int8), over images of 1 to 10 rows and
 * columns, 1 to 5 channels, padding 0 to 2 on each side, row strides 1, 2, 4 and 5 (past the band's ring), column
 * strides 1, 2 and 3, row dilation 1 to 4, int8 and int16 weights, int32 and int16 biases, inputs and weights over
 * the whole int8 range and all at the minimum, every shift -31..-1, drawn multipliers, zero points and padding
 * values; the input, weights, constants and output each in an exact-size guarded buffer (nothing read or written
 * outside them), the band at both 2-byte alignments. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on
 * the host (portable C) and for cortex-m4f under QEMU. Prints "ok <count> cases" and exits 0, or names the first
 * failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_rows.h"

#define MAX_SIDE 10
#define MAX_CHANNELS 5
#define MAX_KH 16 /* the helper of any window: DEPTHWISE_ROWS_MAX_KH rows */
#define MAX_KW 7
#define MAX_TAPS (MAX_KH * MAX_KW)
/* ((kh - 1) * dilation + 1) rows (at most the padded image's 14: 25 bounds it) of a pitch of at most 3 * 9 + 8, the
   window's pairs 4 * kh * 4, one more, and an odd start */
#define MAX_BAND (25 * 36 + 16 * MAX_KH + 2)

/* The input's value at row i, column j, channel c, or value outside the image. */
static int32_t tap(const int8_t *x, int32_t in_h, int32_t in_w, int32_t channels, int32_t i, int32_t j, int32_t c,
                   int32_t value)
{
    return i >= 0 && i < in_h && j >= 0 && j < in_w ? x[(i * in_w + j) * channels + c] : value;
}

int main(void)
{
    uint32_t state = 17u;
    int32_t cases = 0, failures = 0;
    static int8_t x[MAX_SIDE * MAX_SIDE * MAX_CHANNELS], w8[MAX_TAPS * MAX_CHANNELS];
    static int16_t w16[MAX_TAPS * MAX_CHANNELS], band[MAX_BAND];
    static int32_t bias[MAX_CHANNELS], multiplier[MAX_CHANNELS];
    static int16_t bias16[MAX_CHANNELS];
    static int8_t shift[MAX_CHANNELS];
    static int8_t out[MAX_SIDE * MAX_SIDE * MAX_CHANNELS], expected[MAX_SIDE * MAX_SIDE * MAX_CHANNELS];
    for (int32_t shape = 0; shape < 640; ++shape) {
        const int32_t in_h = 1 + (int32_t)(next_value(&state) % MAX_SIDE);
        const int32_t in_w = 1 + (int32_t)(next_value(&state) % MAX_SIDE);
        const int32_t channels = 1 + shape % MAX_CHANNELS;
        const int32_t stride_h = 1 + shape / 5 % 2 + (shape >= 240 && shape % 2 == 1 ? 3 : 0);
        const int32_t stride_w = 1 + shape / 10 % 2 + (shape >= 320 && shape % 7 == 0 ? 1 : 0);
        const int32_t dilation_h = 1 + shape / 20 % 2 + (shape >= 160 && shape % 3 == 0 ? 2 : 0);
        const int32_t square = shape % 3 == 0; /* the 3x3 window: both helpers */
        const int32_t kh = square ? 3 : 1 + (int32_t)(next_value(&state) % MAX_KH);
        const int32_t kw = square ? 3 : 1 + (int32_t)(next_value(&state) % MAX_KW);
        const int32_t taps = kh * kw, m = kw < 3 ? 2 : ((kw | 1) + 1) / 2;
        const int32_t top = (int32_t)(next_value(&state) % 3u), bottom = (int32_t)(next_value(&state) % 3u);
        const int32_t left = (int32_t)(next_value(&state) % 3u), right = (int32_t)(next_value(&state) % 3u);
        const int32_t ring = (kh - 1) * dilation_h + 1;
        const int32_t out_h = (in_h + top + bottom - ring) / stride_h + 1;
        const int32_t out_w = (in_w + left + right - kw) / stride_w + 1;
        if (in_h + top + bottom < ring || in_w + left + right < kw) {
            continue;
        }
        int32_t pitch = (out_w - 1) * stride_w + 2 * m > left + in_w ? (out_w - 1) * stride_w + 2 * m : left + in_w;
        pitch += pitch % 2;
        const int32_t all_min = shape % 16 == 15, weight_bytes = shape / 40 % 2 ? 2 : 1;
        const int32_t bias_bytes = shape / 80 % 2 ? 2 : 4;
        fill_s8(x, in_h * in_w * channels, &state, all_min);
        fill_s8(w8, taps * channels, &state, all_min);
        for (int32_t i = 0; i < taps * channels; ++i) {
            w16[i] = w8[i];
        }
        draw_depthwise_constants(bias, bias16, multiplier, shift, channels, shape, &state);
        const int32_t zero_point = (int32_t)(next_value(&state) % 256u) - 128;
        const int32_t value = all_min ? -128 : (int32_t)(next_value(&state) % 256u) - 128;
        for (int32_t y = 0; y < out_h; ++y) {
            for (int32_t k = 0; k < out_w; ++k) {
                for (int32_t c = 0; c < channels; ++c) {
                    int32_t sum = bias_bytes == 4 ? bias[c] : bias16[c];
                    for (int32_t r = 0; r < kh; ++r) {
                        for (int32_t q = 0; q < kw; ++q) {
                            sum += tap(x, in_h, in_w, channels, y * stride_h - top + r * dilation_h,
                                       k * stride_w - left + q, c, value) * w8[(r * kw + q) * channels + c];
                        }
                    }
                    const int32_t requantized = lp_requantize_double_small(sum, multiplier[c], shift[c]);
                    expected[(y * out_w + k) * channels + c] =
                        (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
                }
            }
        }
        const int32_t outputs = out_h * out_w * channels;
        for (int32_t form = square ? 0 : 1; form < 2; ++form) { /* 0: the 3x3 helper, 1: any window's */
            int8_t *gx = guarded_copy(0, x, (in_h * in_w * channels));
            void *gw = weight_bytes == 1 ? guarded_copy(1, w8, (taps * channels))
                                         : guarded_copy(1, w16, (2 * taps * channels));
            void *gb = bias_bytes == 4 ? guarded_copy(2, bias, (4 * channels))
                                       : guarded_copy(2, bias16, (2 * channels));
            int32_t *gm = guarded_copy(3, multiplier, (4 * channels));
            int8_t *gs = guarded_copy(4, shift, channels);
            int8_t *go = guarded_copy(5, out, outputs);
            const int32_t returned =
                form == 0 ? lp_depthwise_rows3x3_s8(go, gx, gw, weight_bytes, gb, bias_bytes, gm, gs,
                                                    band + shape % 2, zero_point, value, in_h, in_w * channels,
                                                    channels, out_h, out_w * channels, top, left, pitch, stride_h,
                                                    stride_w, ring)
                          : lp_depthwise_rows_s8(go, gx, gw, weight_bytes, gb, bias_bytes, gm, gs, band + shape % 2,
                                                 zero_point, value, in_h, in_w * channels, channels, out_h,
                                                 out_w * channels, top, left, pitch, stride_h, stride_w, ring, kh,
                                                 kw);
            guarded_back(5, out, outputs);
            int wrong = returned != 0;
            for (int32_t i = 0; i < outputs; ++i) {
                wrong |= out[i] != expected[i];
            }
            if (wrong && failures < 5) {
                printf("wrong (form %ld): %ldx%ldx%ld window %ldx%ld pad %ld %ld %ld %ld strides %ld %ld dilation %ld "
                       "weights %ld bias %ld\n", (long)form, (long)in_h, (long)in_w, (long)channels, (long)kh,
                       (long)kw, (long)top, (long)left, (long)bottom, (long)right, (long)stride_h, (long)stride_w,
                       (long)dilation_h, (long)weight_bytes, (long)bias_bytes);
            }
            failures += wrong;
            ++cases;
        }
    }
    return cases_verdict(cases, failures);
}
