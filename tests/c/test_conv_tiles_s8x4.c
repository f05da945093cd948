/* Unit test of the DSP cores' fused convolution channel tiles (backends/cortex_m/helpers/templates/
 * conv_tiles_s8x4.h.in after dsp_words.h.in, dual_mac.h.in and requantize_small.h.in, with the prefix lp):
 * lp_conv_tiles_s8x4 and lp_conv_tiles_s8x4_b16 (and after conv_tiles_part_s8x4.h.in lp_conv_tiles_part_s8x4, _b16, on
 * any channel count 0..12: a last tile of fewer channels) against the plain sums of their contract from the bias,
 * requantized by the bundle's scalar helpers (lp_requantize_double_small, lp_saturate_int8), over every window of
 * the window MAC tests (cortex_m_test_values.h: rows 0..3, row_len 0..35, three layouts, every byte alignment,
 * mixed and minimum values), 0 to 3 tiles of four channels, biases of +-2^12 and (a tile's last) +-2^24 (int16
 * ones for _b16), every shift -31..-1, drawn multipliers and zero points; the bytes after the outputs must keep
 * their value. Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for
 * cortex-m4f under QEMU (SXTB16, SMLAD, SMMULR). Prints "ok <cases> cases" and exits 0, or names the first
 * failures and exits 1. Also a streamed band's kernel as the code generator writes it, with its literal arguments
 * (band_kernel: a 3-tap 1-D convolution of dilation 9 on 64 channels, the assembly loop inlined twice), which
 * gcc -O2 once refused ("'asm' operand has impossible constraints"). The RISC-V helpers' lp_conv_tiles_s8x4 and _b16
 * (backends/riscv/helpers/templates/pair_tiles_s8x8.h.in, the same contract) pass the same cases but the partial
 * tiles' (LP_WHOLE_TILES_ONLY: tests/backends/riscv/test_riscv_helpers_c.py, on the host and under QEMU virt). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "conv_tiles_s8x4.h"

#if defined(LP_WHOLE_TILES_ONLY) /* the RISC-V helpers' lp_conv_tiles_s8x4 (riscv pair_tiles_s8x8.h.in): no partial */
#define PARTS 0
#else
#define PARTS 1
#endif
#define CHANNELS_MAX 12
#define GUARD 4 /* bytes after the outputs that must keep their value */

/* The outputs the kernel's loops store (channels of them, the last tile's sums over its four weight rows, then GUARD
   bytes left at 0x5a): each tile's plain window sums from the biases (int32, or bias16 where it is not NULL),
   requantized by the scalar helpers. */
static void expected_outs(int8_t *want, const int8_t *x, const int8_t *w, const window_case *k, int32_t channels,
                          const int32_t *bias, const int16_t *bias16, const int32_t *multiplier, const int8_t *shift,
                          int32_t zero_point)
{
    for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
        want[c] = (int8_t)0x5a;
    }
    for (int32_t first = 0; first < channels; first += 4) {
        int32_t sums[4];
        for (int32_t c = 0; c < 4; ++c) {
            sums[c] = bias16 != NULL ? bias16[first + c] : bias[first + c];
        }
        plain_window_mac(sums, x, NULL, w + first * k->w_channel_stride, k->x_row_stride, k->w_channel_stride,
                         k->rows, k->row_len);
        for (int32_t c = 0; c < 4 && first + c < channels; ++c) { /* a last tile of fewer channels stores those */
            const int32_t requantized = lp_requantize_double_small(sums[c], multiplier[first + c], shift[first + c]);
            want[first + c] = (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
        }
    }
}

#define BAND_CHANNELS 64
#define BAND_TIME_STRIDE (9 * BAND_CHANNELS) /* bytes between the taps of a dilation of 9 */

void band_kernel(const int8_t *input0, const int8_t *weights, const int32_t *bias, const int32_t *multiplier,
                 const int8_t *shift, int8_t *output0, int8_t *scratch0);

/* The kernel tcn_kws_100x32_int8's 32-band plan generates for a band of 3 output steps of its 3-tap, dilation-9
   convolution on 64 channels, kept as written (an extern function, literal arguments): output0 3 steps of 64 int8,
   step y's taps the input steps y - 2, y + 7 and y + 16 (input0: steps 0..18 of 64; a tap before step 0 the zero
   point -128), scratch0 192 bytes. */
void band_kernel(const int8_t *input0, const int8_t *weights, const int32_t *bias, const int32_t *multiplier,
                 const int8_t *shift, int8_t *output0, int8_t *scratch0)
{
    for (int32_t y = 0; y < 3; ++y) {
        if (y == 2) {
            lp_conv_tiles_s8x4(&output0[128], &input0[0], &weights[0], &bias[0], &multiplier[0], &shift[0], -128, 576,
                               192, 3, 64, 64);
        } else {
            for (int32_t wry = 0; wry < 3; ++wry) {
                if (2 <= wry * 9 + y) {
                    for (int32_t wrc = 0; wrc < 64; ++wrc) {
                        scratch0[wry * 64 + wrc] = input0[wry * 576 + y * 64 + wrc - 128];
                    }
                } else {
                    for (int32_t wrc_1 = 0; wrc_1 < 64; ++wrc_1) {
                        scratch0[wry * 64 + wrc_1] = (int8_t)-128;
                    }
                }
            }
            lp_conv_tiles_s8x4(&output0[y * 64], &scratch0[0], &weights[0], &bias[0], &multiplier[0], &shift[0], -128,
                               192, 192, 1, 192, 64);
        }
    }
}

/* band_kernel on drawn inputs, weights and requantization against the plain sums of each output step's window
   (its taps gathered, the zero point before step 0); returns the number of wrong output bytes. */
static int32_t band_kernel_failures(uint32_t *state)
{
    static int8_t input[2 * BAND_TIME_STRIDE + 3 * BAND_CHANNELS], weights[BAND_CHANNELS * 3 * BAND_CHANNELS];
    static int8_t out[3 * BAND_CHANNELS + GUARD], scratch[3 * BAND_CHANNELS], window[3 * BAND_CHANNELS];
    int32_t bias[BAND_CHANNELS], multiplier[BAND_CHANNELS];
    int8_t shift[BAND_CHANNELS], want[CHANNELS_MAX + GUARD];
    const window_case k = {0, 1, 3 * BAND_CHANNELS, 3 * BAND_CHANNELS, 3 * BAND_CHANNELS, 0, 0, 0};
    fill_s8(input, (int32_t)sizeof input, state, 0);
    fill_s8(weights, (int32_t)sizeof weights, state, 0);
    for (int32_t c = 0; c < BAND_CHANNELS; ++c) {
        bias[c] = (int32_t)(next_value(state) >> 19) - (1 << 12);
        multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
        shift[c] = (int8_t)(-1 - c % 12);
    }
    for (int32_t i = 0; i < (int32_t)sizeof out; ++i) {
        out[i] = (int8_t)0x5a;
    }
    band_kernel(input, weights, bias, multiplier, shift, out, scratch);
    int32_t wrong = 0;
    for (int32_t y = 0; y < 3; ++y) {
        for (int32_t tap = 0; tap < 3; ++tap) {
            const int32_t step = 9 * tap + y - 2;
            for (int32_t c = 0; c < BAND_CHANNELS; ++c) {
                window[tap * BAND_CHANNELS + c] = step < 0 ? (int8_t)-128 : input[step * BAND_CHANNELS + c];
            }
        }
        for (int32_t first = 0; first < BAND_CHANNELS; first += 4) {
            expected_outs(want, window, weights + first * k.w_channel_stride, &k, 4, bias + first, NULL,
                          multiplier + first, shift + first, -128);
            for (int32_t c = 0; c < 4; ++c) {
                wrong += out[y * BAND_CHANNELS + first + c] != want[c];
            }
        }
    }
    for (int32_t i = 3 * BAND_CHANNELS; i < (int32_t)sizeof out; ++i) {
        wrong += out[i] != (int8_t)0x5a;
    }
    return wrong;
}

/* One case of the window case i % WINDOW_CASES (int16 biases from i >= WINDOW_CASES): the whole tiles' helper on
   4 * (i % 4) channels, or with part the partial tiles' on i % (CHANNELS_MAX + 1) channels (a last tile of fewer);
   prints a failure's case (the first 8 of *failures) and counts it in *failures. */
static void check_case(int32_t i, int part, uint32_t *state, int32_t *failures)
{
    static int8_t x_store[440], w_store[CHANNELS_MAX * 110 + 8];
    const int narrow = i >= WINDOW_CASES;
    const window_case k = window_case_of(i % WINDOW_CASES);
    const int32_t channels = part ? i % (CHANNELS_MAX + 1) : 4 * (i % (CHANNELS_MAX / 4 + 1));
    const int32_t zero_point = i % 3 == 0 ? -128 : 127 - i % 200;
    const int8_t *x = x_store + k.x_offset, *w = w_store + k.w_offset;
    int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
    int16_t bias16[CHANNELS_MAX];
    int8_t shift[CHANNELS_MAX], out[CHANNELS_MAX + GUARD], want[CHANNELS_MAX + GUARD];
    fill_s8(x_store, (int32_t)sizeof x_store, state, k.all_min);
    fill_s8(w_store, (int32_t)sizeof w_store, state, k.all_min);
    draw_tile_constants(bias, bias16, multiplier, shift, CHANNELS_MAX, i, state);
    for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
        out[c] = (int8_t)0x5a;
    }
    /* every buffer exactly what the call reads and writes (the partial tiles' weights whole tiles of four, as their
       contract says), against no-access memory */
    int8_t *const g_out = guarded_copy(0, out, channels);
    const int8_t *const g_x = guarded_copy(1, x, guarded_span(k.rows, k.row_len, k.x_row_stride, 1));
    const int8_t *const g_w = guarded_copy(2, w, guarded_span((channels + 3) / 4 * 4, k.rows * k.row_len,
                                                                   k.w_channel_stride, 1));
    const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
    const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
    const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
    const int8_t *const g_shift = guarded_copy(6, shift, channels);
    int32_t returned;
#if PARTS
    if (part) {
        returned = narrow
            ? lp_conv_tiles_part_s8x4_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift, zero_point, k.x_row_stride,
                                          k.w_channel_stride, k.rows, k.row_len, channels)
            : lp_conv_tiles_part_s8x4(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point, k.x_row_stride,
                                      k.w_channel_stride, k.rows, k.row_len, channels);
    } else
#endif
    {
        returned = narrow
            ? lp_conv_tiles_s8x4_b16(g_out, g_x, g_w, g_bias16, g_multiplier, g_shift, zero_point, k.x_row_stride,
                                     k.w_channel_stride, k.rows, k.row_len, channels)
            : lp_conv_tiles_s8x4(g_out, g_x, g_w, g_bias, g_multiplier, g_shift, zero_point, k.x_row_stride,
                                 k.w_channel_stride, k.rows, k.row_len, channels);
    }
    guarded_back(0, out, channels);
    expected_outs(want, x, w, &k, channels, bias, narrow ? bias16 : NULL, multiplier, shift, zero_point);
    int wrong = returned != 0;
    for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
        wrong |= out[c] != want[c];
    }
    if (wrong && (*failures)++ < 8) {
        printf("wrong case %ld (%s biases, %s): %ld channels, rows %ld, row_len %ld\n", (long)i,
               narrow ? "int16" : "int32", part ? "partial tiles" : "whole tiles", (long)channels, (long)k.rows,
               (long)k.row_len);
    }
}

int main(void)
{
    uint32_t state = 7;
    int32_t failures = 0, cases = 0;
    for (int part = 0; part <= PARTS; ++part) { /* whole tiles, then any channel count (lp_conv_tiles_part_s8x4) */
        for (int32_t i = 0; i < 2 * WINDOW_CASES; ++i) { /* each window with int32 biases, then int16 ones */
            check_case(i, part, &state, &failures);
            ++cases;
        }
    }
    const int32_t band_wrong = band_kernel_failures(&state);
    if (band_wrong != 0 && failures++ < 8) {
        printf("wrong band kernel: %ld output bytes\n", (long)band_wrong);
    }
    ++cases;
    return cases_verdict(cases, failures);
}
