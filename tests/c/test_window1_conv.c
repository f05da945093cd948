/* Unit test of the DSP cores' few-input-channel convolution (backends/cortex_m/helpers/templates/window1_conv.h.in,
 * with the prefix lp): lp_window1_conv_s8, and lp_window1_conv_lut_s8 with a drawn 256-entry table (every odd
 * variant: each output its entry at the value + 128), against the plain sums of each output pixel's window (the padding value
 * outside the image) from the bias and the bundle's scalar requantization (lp_requantize_double_small,
 * lp_saturate_int8), over geometries of every window size 1x1..5x6 of 1..4 input channels and kws's 10x4 and
 * micro_speech's 10x8 of one, an RGB stem's 3x3 stride 2 of three, strides 1..3, dilations 1..2, paddings 0..2,
 * images up to 12x13 (output pixel counts a multiple of four and not), 1..9 output channels, each channel's
 * weights the window's or padded to whole words (the taps summed the window's or those whole words, the padding's
 * weights drawn: the taps past the window multiply 0), int32 or int16 biases,
 * inputs and weights at every byte alignment, values over the whole int8 range or all at the minimum, biases up to
 * +-2^26, every shift -31..-1, drawn multipliers and zero points; every buffer but the table handed over exactly
 * against no-access memory (guarded_buffers.h); nothing written past the
 * outputs, the scratch written within lp_window1_scratch_words(taps) words. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (the
 * assembly groups). Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "window1_conv.h"

#define IMAGE 1968         /* input elements: past the largest image (49x40, below) plus an offset */
#define WEIGHTS 2048       /* weight elements: 9 channels of up to 124 taps plus an offset */
#define OUTPUTS 2048       /* output elements: 1,560 at most, then the guard */
#define SCRATCH 512        /* scratch words: the largest window's (124 taps: 279) and more past */
#define UNTOUCHED 0x5A5A5A5A

typedef struct {
    int32_t in_h, in_w, in_c, kh, kw, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, out_h, out_w;
} geometry;

/* What the kernel stores for output pixel i's channel c. */
static int8_t expected_out(const int8_t *x, const int8_t *w, int32_t w_stride, const geometry *g, int32_t i,
                           int32_t c, int32_t bias, int32_t multiplier, int32_t shift, int32_t pad_value,
                           int32_t zero_point)
{
    const int32_t oy = i / g->out_w, ox = i % g->out_w;
    int32_t sum = bias;
    for (int32_t r = 0; r < g->kh; ++r) {
        for (int32_t k = 0; k < g->kw; ++k) {
            const int32_t iy = oy * g->stride_h - g->pad_top + r * g->dilation_h;
            const int32_t ix = ox * g->stride_w - g->pad_left + k * g->dilation_w;
            const int inside = iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w;
            for (int32_t j = 0; j < g->in_c; ++j) {
                const int32_t v = inside ? x[(iy * g->in_w + ix) * g->in_c + j] : pad_value;
                sum += v * w[c * w_stride + (r * g->kw + k) * g->in_c + j];
            }
        }
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* The number of wrong outputs (and overwritten guard bytes or scratch words) of one call. */
static int32_t one_case(const geometry *g, int32_t channels, uint32_t *state, int all_min, int32_t offset,
                        int32_t w_padding, int sum_padding, int looked_up)
{
    static int8_t x_store[IMAGE], w_store[WEIGHTS], out[OUTPUTS], table[256];
    static int32_t q[SCRATCH];
    int32_t bias[16], multiplier[16];
    int16_t bias16[16];
    int8_t shift[16];
    /* the window's taps; the taps summed: with sum_padding, the weights' padding too */
    const int32_t window = g->kh * g->kw * g->in_c, pixels = g->out_h * g->out_w, w_stride = window + w_padding;
    const int32_t taps = sum_padding ? w_stride : window;
    const int8_t *x = x_store + offset, *w = w_store + (offset * 3) % 4;
    fill_s8(x_store, IMAGE, state, all_min);
    fill_s8(w_store, WEIGHTS, state, all_min);
    fill_s8(table, 256, state, 0);
    const int32_t pad_value = (int32_t)(next_value(state) % 256u) - 128;
    const int32_t zero_point = (int32_t)(next_value(state) % 256u) - 128;
    for (int32_t c = 0; c < channels; ++c) {
        bias[c] = (int32_t)(next_value(state) % (1u << 27)) - (1 << 26);
        bias16[c] = (int16_t)(bias[c] % 32768);
        if (w_padding % 2 == 1 || offset == 3) { /* int16 biases (the lowering narrows the biases that fit) */
            bias[c] = bias16[c];
        }
        multiplier[c] = (int32_t)(1073741824u + next_value(state) % 1073741823u);
        shift[c] = (int8_t)(-1 - (int32_t)((next_value(state) + (uint32_t)c) % 31u));
    }
    memset(out, 0x5A, sizeof out);
    for (int32_t k = 0; k < SCRATCH; ++k) {
        q[k] = UNTOUCHED;
    }
    const int32_t words = lp_window1_scratch_words(taps);
    const int sixteen = w_padding % 2 == 1 || offset == 3;
    const void *b = sixteen ? (const void *)bias16 : (const void *)bias;
    /* every buffer (but the table) exactly what the call reads and writes, against no-access memory */
    int8_t *const guarded_out = guarded_copy(0, out, pixels * channels);
    int32_t *const guarded_q = guarded_copy(1, q, 4 * words);
    const int8_t *const guarded_x = guarded_copy(2, x, g->in_h * g->in_w * g->in_c);
    const int8_t *const guarded_w = guarded_copy(3, w, (channels - 1) * w_stride + taps);
    const void *const guarded_b = guarded_copy(4, b, channels * (sixteen ? 2 : 4));
    const int32_t *const guarded_multiplier = guarded_copy(5, multiplier, 4 * channels);
    const int8_t *const guarded_shift = guarded_copy(6, shift, channels);
    int32_t wrong = (looked_up ? lp_window1_conv_lut_s8(guarded_out, guarded_x, guarded_w, guarded_b,
                                                        guarded_multiplier, guarded_shift, guarded_q, g->in_h, g->in_w,
                                                        g->in_c,
                                                        g->in_w * g->in_c, g->kh, g->kw, g->stride_h, g->stride_w,
                                                        g->dilation_h, g->dilation_w, g->pad_top, g->pad_left,
                                                        g->out_w, pixels, channels, pad_value, zero_point, taps,
                                                        w_stride, sixteen ? 2 : 4, table)
                               : lp_window1_conv_s8(guarded_out, guarded_x, guarded_w, guarded_b, guarded_multiplier,
                                                    guarded_shift, guarded_q, g->in_h, g->in_w, g->in_c,
                                                    g->in_w * g->in_c, g->kh, g->kw, g->stride_h, g->stride_w,
                                                    g->dilation_h, g->dilation_w, g->pad_top, g->pad_left, g->out_w,
                                                    pixels, channels, pad_value, zero_point, taps, w_stride,
                                                    sixteen ? 2 : 4)) != 0;
    guarded_back(0, out, pixels * channels);
    guarded_back(1, q, 4 * words);
    for (int32_t i = 0; i < pixels; ++i) {
        for (int32_t c = 0; c < channels; ++c) {
            const int8_t v = expected_out(x, w, w_stride, g, i, c, bias[c], multiplier[c], shift[c], pad_value,
                                          zero_point);
            wrong += out[i * channels + c] != (looked_up ? table[v + 128] : v);
        }
    }
    for (int32_t k = pixels * channels; k < OUTPUTS; ++k) {
        wrong += out[k] != (int8_t)0x5A;
    }
    for (int32_t k = words; k < SCRATCH; ++k) {
        wrong += q[k] != UNTOUCHED;
    }
    return wrong;
}

/* The geometry of a window over an image, its output size as TFLite's explicit padding gives it. */
static geometry geometry_of(int32_t in_h, int32_t in_w, int32_t in_c, int32_t kh, int32_t kw, int32_t stride,
                            int32_t dilation, int32_t pad)
{
    geometry g = {in_h, in_w, in_c, kh, kw, stride, stride == 3 ? 2 : stride, dilation, dilation, pad, pad > 0 ? pad - 1 : 0,
                  0, 0};
    g.out_h = (in_h + 2 * pad - (kh - 1) * dilation - 1) / stride + 1;
    g.out_w = (in_w + 2 * pad - (kw - 1) * dilation - 1) / g.stride_w + 1;
    return g;
}

int main(void)
{
    uint32_t state = 11;
    int32_t cases = 0, failures = 0;
    for (int32_t in_c = 1; in_c <= 4; ++in_c) {
        for (int32_t kh = 1; kh <= 5; ++kh) {
            for (int32_t kw = 1; kw <= 6; ++kw) {
                for (int32_t variant = 0; variant < 12; ++variant) {
                    const int32_t stride = 1 + variant % 3, dilation = 1 + variant / 6, pad = variant % 3;
                    const geometry g = geometry_of(9 + variant % 4, 10 + variant % 4, in_c, kh, kw, stride, dilation,
                                                   pad);
                    if (g.out_h < 1 || g.out_w < 1 || g.out_h * g.out_w < 4) { /* the contract: 4 pixels or more */
                        continue;
                    }
                    /* variants 4 and 9: the weights padded to whole words, variant 9's padding summed */
                    const int32_t w_padding = variant % 5 == 4 ? (4 - kh * kw * in_c % 4) % 4 : 0;
                    const int32_t wrong = one_case(&g, 1 + (kh * kw + variant) % 9, &state, variant == 5,
                                                   (variant + in_c) % 4, w_padding, variant == 9, variant % 2);
                    failures += wrong != 0;
                    ++cases;
                    if (wrong != 0 && failures <= 5) {
                        printf("window %ldx%ldx%ld variant %ld: %ld wrong\n", (long)kh, (long)kw, (long)in_c,
                               (long)variant, (long)wrong);
                    }
                }
            }
        }
    }
    /* kws_ref_model's stem (10x4, stride 2, SAME on 49x10), micro_speech's (10x8, stride 2, SAME on 49x40) and an
       RGB stem's (3x3 of three channels, stride 2, SAME on 13x12, its 27 taps summed as 28) */
    const geometry kws = {49, 10, 1, 10, 4, 2, 2, 1, 1, 4, 1, 25, 5};
    const geometry micro = {49, 40, 1, 10, 8, 2, 2, 1, 1, 4, 3, 25, 20};
    const geometry rgb = {13, 12, 3, 3, 3, 2, 2, 1, 1, 1, 0, 7, 6};
    failures += one_case(&kws, 3, &state, 0, 1, 0, 0, 0) != 0;
    failures += one_case(&micro, 2, &state, 0, 2, 0, 0, 0) != 0;
    failures += one_case(&micro, 1, &state, 1, 0, 0, 0, 0) != 0;
    failures += one_case(&rgb, 8, &state, 0, 1, 1, 1, 0) != 0;
    failures += one_case(&rgb, 5, &state, 1, 2, 1, 1, 0) != 0;
    failures += one_case(&rgb, 12, &state, 0, 3, 1, 1, 1) != 0; /* yolo_tiny_80's stem: LEAKY_RELU's table */
    cases += 6;
    return cases_verdict(cases, failures);
}
