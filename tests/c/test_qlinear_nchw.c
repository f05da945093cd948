/* Unit test of the Helium NCHW QLinearConv helpers (backends/cortex_m/helpers/templates/helium_qlinear.h.in, with
 * the prefix lp) against the plain loops of their contracts. The pointwise helper: the rounding from C99's nearbyintf (ties to even
 * in the default rounding mode): every channel count 1..20 and 33, 64 and every pixel count 0..37 and 64 (whole
 * steps of 16 and every tail), drawn int8 inputs and weights with the extremes -128 and 127, biases that carry the
 * sums past 2^24 (where float32 rounds them), multipliers whose products land on ties (1/2, 1/4, 3/8), small and
 * large ones, zero points and clamps that saturate either end; nothing written past the pixels. The row helper:
 * windows 1x1 to 5x3, strides 1 and 2, dilations 1 and 2, padding on every side (rows and columns outside the
 * image, whole chunks of them), one to five channels, every output width 1..13 (each vector tail). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU (MVE:
 * VMLA, VCVT, VRINTN). Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "guarded_buffers.h"
#include "qlinear_nchw.h"

#define MAX_CHANNELS 64
#define MAX_PIXELS 64
#define GUARD 4

static uint32_t state = 12345u;

static int32_t draw(int32_t low, int32_t high)
{
    state = state * 1664525u + 1013904223u;
    return low + (int32_t)((state >> 8) % (uint32_t)(high - low + 1));
}

/* The contract's output for one pixel. */
static int8_t expected_out(const int8_t *x, const int8_t *w, int32_t channels, int32_t pixels, int32_t p,
                           int32_t bias, float multiplier, int32_t zero_point, int32_t low, int32_t high)
{
    int32_t acc = bias;
    for (int32_t c = 0; c < channels; ++c) {
        acc += (int32_t)x[c * pixels + p] * (int32_t)w[c];
    }
    volatile float v = (float)acc;
    v = v * multiplier;
    const float lowest = (float)(low - zero_point), highest = (float)(high - zero_point);
    const float clamped = v < lowest ? lowest : (v > highest ? highest : v);
    return (int8_t)((int32_t)nearbyintf(clamped) + zero_point);
}

/* The row contract's output at ox. */
static int8_t expected_row_out(const int8_t *x, const int8_t *w, int32_t channels, int32_t height, int32_t width,
                               int32_t kernel_h, int32_t kernel_w, int32_t stride_w, int32_t dilation_h,
                               int32_t dilation_w, int32_t top, int32_t left, int32_t ox, int32_t bias,
                               float multiplier, int32_t zero_point, int32_t x_zero_point)
{
    int32_t acc = bias;
    for (int32_t c = 0; c < channels; ++c) {
        for (int32_t ky = 0; ky < kernel_h; ++ky) {
            for (int32_t kx = 0; kx < kernel_w; ++kx) {
                const int32_t iy = top + ky * dilation_h, ix = left + ox * stride_w + kx * dilation_w;
                const int32_t input = (iy >= 0 && iy < height && ix >= 0 && ix < width)
                    ? (int32_t)x[(c * height + iy) * width + ix] : x_zero_point;
                acc += input * (int32_t)w[(c * kernel_h + ky) * kernel_w + kx];
            }
        }
    }
    volatile float v = (float)acc;
    v = v * multiplier;
    const float lowest = (float)(-128 - zero_point), highest = (float)(127 - zero_point);
    const float clamped = v < lowest ? lowest : (v > highest ? highest : v);
    return (int8_t)((int32_t)nearbyintf(clamped) + zero_point);
}

/* Every row case; returns the failures (printing the first ones), adds to *checks. */
static int32_t check_rows(int32_t *checks)
{
    enum { HEIGHT = 6, WIDTH = 11, MAX_OUT = 13 };
    static int8_t x[5 * HEIGHT * WIDTH], w[5 * 5 * 3], out[MAX_OUT + GUARD];
    static const int32_t windows[][2] = {{1, 1}, {3, 3}, {5, 3}, {1, 3}, {3, 1}};
    int32_t failures = 0;
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; ++k) {
        for (int32_t stride = 1; stride <= 2; ++stride) {
            for (int32_t dilation = 1; dilation <= 2; ++dilation) {
                for (int32_t channels = 1; channels <= 5; channels += 2) {
                    for (int32_t out_width = 1; out_width <= MAX_OUT; ++out_width) {
                        const int32_t kernel_h = windows[k][0], kernel_w = windows[k][1];
                        for (int32_t i = 0; i < channels * HEIGHT * WIDTH; ++i) {
                            x[i] = (int8_t)draw(-128, 127);
                        }
                        for (int32_t i = 0; i < channels * kernel_h * kernel_w; ++i) {
                            w[i] = (int8_t)draw(-128, 127);
                        }
                        const int32_t top = draw(-4, HEIGHT), left = draw(-3, 2), x_zero_point = draw(-128, 127);
                        const int32_t zero_point = draw(-20, 20), bias = draw(-20000, 20000);
                        const float multiplier = (out_width % 3 == 0) ? 0.5f : 0.0071f;
                        for (int32_t p = 0; p < out_width + GUARD; ++p) {
                            out[p] = (int8_t)(0x33 ^ p);
                        }
                        /* every buffer exactly what the call reads and writes, against no-access memory */
                        lp_qlinear_row_s8(guarded_copy(0, out, out_width),
                                          guarded_copy(1, x, channels * HEIGHT * WIDTH),
                                          guarded_copy(2, w, channels * kernel_h * kernel_w), channels, HEIGHT * WIDTH,
                                          HEIGHT, WIDTH, out_width, kernel_h, kernel_w, stride, dilation, dilation,
                                          top, left, bias, multiplier, zero_point, -128, 127, x_zero_point);
                        guarded_back(0, out, out_width);
                        for (int32_t p = 0; p < out_width + GUARD; ++p) {
                            const int8_t want = p < out_width ? expected_row_out(
                                x, w, channels, HEIGHT, WIDTH, kernel_h, kernel_w, stride, dilation, dilation, top,
                                left, p, bias, multiplier, zero_point, x_zero_point) : (int8_t)(0x33 ^ p);
                            *checks += 1;
                            if (out[p] != want && failures++ < 10) {
                                printf("row %ldx%ld stride %ld dilation %ld channels %ld width %ld top %ld left "
                                       "%ld pixel %ld: %d, expected %d\n", (long)kernel_h, (long)kernel_w,
                                       (long)stride, (long)dilation, (long)channels, (long)out_width, (long)top,
                                       (long)left, (long)p, out[p], want);
                            }
                        }
                    }
                }
            }
        }
    }
    return failures;
}

int main(void)
{
    static int8_t x[MAX_CHANNELS * MAX_PIXELS], w[MAX_CHANNELS], out[MAX_PIXELS + GUARD];
    static const float multipliers[] = {0.5f, 0.25f, 0.375f, 1.0f, 0.0123f, 3.1e-4f, 2.7e-6f, 0.09f};
    static const int32_t channel_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 33,
                                             64};
    int32_t checks = 0, failures = 0;
    for (size_t m = 0; m < sizeof multipliers / sizeof multipliers[0]; ++m) {
        for (size_t k = 0; k < sizeof channel_counts / sizeof channel_counts[0]; ++k) {
            const int32_t channels = channel_counts[k];
            for (int32_t pixels = 0; pixels <= MAX_PIXELS; pixels += (pixels < 37 ? 1 : MAX_PIXELS - 37)) {
                for (int32_t i = 0; i < channels * pixels; ++i) {
                    x[i] = (int8_t)(i % 7 == 0 ? (i % 2 ? 127 : -128) : draw(-128, 127));
                }
                for (int32_t c = 0; c < channels; ++c) {
                    w[c] = (int8_t)(c % 5 == 0 ? (c % 2 ? -128 : 127) : draw(-128, 127));
                }
                const int32_t bias = (pixels % 3 == 0) ? draw(-(1 << 26), 1 << 26) : draw(-5000, 5000);
                const int32_t zero_point = draw(-128, 127);
                const int32_t low = (pixels % 4 == 1) ? draw(-128, 0) : -128;
                const int32_t high = (pixels % 4 == 2) ? draw(low, 127) : 127;
                const float multiplier = multipliers[m] * (bias > (1 << 20) || bias < -(1 << 20) ? 1e-5f : 1.0f);
                for (int32_t p = 0; p < pixels + GUARD; ++p) {
                    out[p] = (int8_t)(0x5a ^ p);
                }
                /* every buffer exactly what the call reads and writes, against no-access memory */
                lp_qlinear_pointwise_s8(guarded_copy(0, out, pixels), guarded_copy(1, x, channels * pixels),
                                        guarded_copy(2, w, channels), channels, pixels, bias, multiplier, zero_point,
                                        low, high);
                guarded_back(0, out, pixels);
                for (int32_t p = 0; p < pixels + GUARD; ++p) {
                    const int8_t want = p < pixels ? expected_out(x, w, channels, pixels, p, bias, multiplier,
                                                                  zero_point, low, high) : (int8_t)(0x5a ^ p);
                    checks += 1;
                    if (out[p] != want && failures++ < 10) {
                        printf("channels %ld pixels %ld pixel %ld multiplier %g bias %ld zp %ld [%ld, %ld]: %d, "
                               "expected %d\n", (long)channels, (long)pixels, (long)p, (double)multiplier, (long)bias,
                               (long)zero_point, (long)low, (long)high, out[p], want);
                    }
                }
            }
        }
    }
    failures += check_rows(&checks);
    if (failures != 0) {
        printf("FAIL %ld of %ld\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
