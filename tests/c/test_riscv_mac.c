/* Unit test of the RISC-V window MAC helpers (backends/riscv/helpers/templates/mac_s8x8.h.in, mac_s8x2x8.h.in and
 * mac_s8x2x8_row.h.in, with the prefix lp): lp_mac_s8x8, lp_mac_s8x4, lp_mac_s8x2x8 and lp_mac_s8x2x8_row against the
 * plain loops of their contracts for their eight or four channels (and two pixels, their windows apart or overlapping), on the
 * window cases of the Cortex-M window MAC helpers (cortex_m_test_values.h): 0 to 3 rows, every row length up to 35
 * (whole passes of four inputs and every remainder), row strides at and above the row length, weight channel
 * strides at and above a channel's weights, inputs and weights at every byte alignment, values over the whole int8
 * range (-128 and 127 forced in) and all at the minimum (the largest products); each accumulator gains its sum and
 * keeps what it held; then the two-pixel helpers on windows whose every product is at one of its extremes, each
 * pixel's at either (16384 = -128 * -128, -16256 = -128 * 127), the windows' longest rows in the three layouts;
 * last, the two-pixel helpers with weight channel strides about the one past which channel 7's weights leave a
 * load's 12-bit offset (7 * stride + 1 >= 2048: mac_s8x2x8_row's second weight pointer); then lp_mac_s8x2xn and
 * lp_mac_s8x2xn_row over 1 to 7 channels, touching no sum or weight of the channels past them.
 * Built by tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc and
 * rv32imafc, under QEMU virt. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "riscv_mac.h"

#define BUFFER 1024 /* elements: past the farthest one any case reads (under 870 + the second pixel's 110) */
#define CHANNELS 8
#define FAR_BUFFER 8192 /* weights of the far channel strides: past 7 * 577 + 3 * 35 */

/* Whether the n accumulators of got equal those of expected; prints the first that differs. */
static int same(const int32_t *got, const int32_t *expected, int32_t n, const char *helper, int32_t i)
{
    for (int32_t c = 0; c < n; ++c) {
        if (got[c] != expected[c]) {
            printf("wrong %s: case %ld accumulator %ld\n", helper, (long)i, (long)c);
            return 0;
        }
    }
    return 1;
}

/* acc[c] += the plain sums of the helpers' contract for the eight channels c < 8 of one pixel's window. */
static void plain_mac8(int32_t *acc, const int8_t *x, const int8_t *w, const window_case *wc)
{
    plain_window_mac(acc, x, NULL, w, wc->x_row_stride, wc->w_channel_stride, wc->rows, wc->row_len);
    plain_window_mac(acc + 4, x, NULL, w + 4 * wc->w_channel_stride, wc->x_row_stride, wc->w_channel_stride,
                     wc->rows, wc->row_len);
}

/* Helper `which` (0: lp_mac_s8x8, 1: lp_mac_s8x2x8, 2: lp_mac_s8x2x8_row, 3: lp_mac_s8x4) on the window case wc over
   x and w, adding to got (and got + CHANNELS for the second pixel), each buffer a guarded copy of exactly what the
   call reads and writes (guarded_buffers.h: a byte outside one faults; lp_mac_s8x4's four accumulators and four
   channels' weights); its return value. */
static int32_t guarded_call(int32_t which, int32_t *got, const int8_t *x, const int8_t *w, const window_case *wc)
{
    const int pair = which == 1 || which == 2;
    const int32_t channels = which == 3 ? 4 : CHANNELS;
    const int32_t window = guarded_span(wc->rows, wc->row_len, wc->x_row_stride, 1);
    int32_t *const acc = guarded_copy(0, got, 4 * channels), *const acc_b = guarded_copy(1, got + CHANNELS,
                                                                                         4 * CHANNELS);
    const int8_t *const gx = guarded_copy(2, x, window == 0 ? 0 : (pair ? wc->x_pixel_stride : 0) + window);
    const int8_t *const gw = guarded_copy(3, w, guarded_span(channels, wc->rows * wc->row_len, wc->w_channel_stride,
                                                             1));
    const int32_t returned
        = which == 0 ? lp_mac_s8x8(acc, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows, wc->row_len)
        : which == 1 ? lp_mac_s8x2x8(acc, acc_b, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows,
                                     wc->row_len, wc->x_pixel_stride)
        : which == 2 ? lp_mac_s8x2x8_row(acc, acc_b, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows,
                                         wc->row_len, wc->x_pixel_stride)
                     : lp_mac_s8x4(acc, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows, wc->row_len);
    guarded_back(0, got, 4 * channels);
    guarded_back(1, got + CHANNELS, 4 * CHANNELS);
    return returned;
}

/* lp_mac_s8x2xn (`row` 0) or lp_mac_s8x2xn_row (1) over its first `channels` channels on the window case wc over
   x and w, adding to got and got + CHANNELS, each buffer a guarded copy of exactly its `channels` accumulators and
   channels' weights (a sum or weight of a channel past them read or written faults); its return value. */
static int32_t guarded_call_n(int32_t row, int32_t channels, int32_t *got, const int8_t *x, const int8_t *w,
                              const window_case *wc)
{
    const int32_t window = guarded_span(wc->rows, wc->row_len, wc->x_row_stride, 1);
    int32_t *const acc = guarded_copy(0, got, 4 * channels), *const acc_b = guarded_copy(1, got + CHANNELS,
                                                                                         4 * channels);
    const int8_t *const gx = guarded_copy(2, x, window == 0 ? 0 : wc->x_pixel_stride + window);
    const int8_t *const gw = guarded_copy(3, w, guarded_span(channels, wc->rows * wc->row_len, wc->w_channel_stride,
                                                             1));
    const int32_t returned
        = row ? lp_mac_s8x2xn_row(acc, acc_b, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows, wc->row_len,
                                  wc->x_pixel_stride, channels)
              : lp_mac_s8x2xn(acc, acc_b, gx, gw, wc->x_row_stride, wc->w_channel_stride, wc->rows, wc->row_len,
                              wc->x_pixel_stride, channels);
    guarded_back(0, got, 4 * channels);
    guarded_back(1, got + CHANNELS, 4 * channels);
    return returned;
}

/* Moves each slot's next copy to the other side of its guard (guarded_copy alternates per slot): a loop of an even
   number of guarded calls a case calls it on every other case, else each helper's buffers would always end at a
   guard (an over-read faults) or always start after one (an under-read faults), never both. */
static void guarded_turn(void)
{
    for (int32_t slot = 0; slot < 4; ++slot) {
        (void)guarded_copy(slot, NULL, 0);
    }
}

int main(void)
{
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int8_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
        int32_t got[2 * CHANNELS], expected[2 * CHANNELS];
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        for (int32_t c = 0; c < 2 * CHANNELS; ++c) {
            got[c] = expected[c] = start_value(c);
        }
        if (i % 2 == 1) {
            guarded_turn();
        }
        cases += 3;
        plain_mac8(expected, xo, wo, &wc);
        if (guarded_call(0, got, xo, wo, &wc) != 0
            || !same(got, expected, CHANNELS, "mac_s8x8", i)) {
            failures += 1;
        }
        cases += 1; /* lp_mac_s8x4 on the same window, adding to what lp_mac_s8x8 left in the first four */
        plain_window_mac(expected, xo, NULL, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len);
        if (guarded_call(3, got, xo, wo, &wc) != 0 || !same(got, expected, CHANNELS, "mac_s8x4", i)) {
            failures += 1;
        }
        for (int32_t h = 0; h < 2; ++h) { /* lp_mac_s8x2x8, then lp_mac_s8x2x8_row: the same contract */
            plain_mac8(expected, xo, wo, &wc);
            plain_mac8(expected + CHANNELS, xo + wc.x_pixel_stride, wo, &wc);
            const int32_t returned = guarded_call(1 + h, got, xo, wo, &wc);
            if (returned != 0 || !same(got, expected, 2 * CHANNELS, h == 0 ? "mac_s8x2x8" : "mac_s8x2x8_row", i)) {
                failures += 1;
            }
        }
    }
    /* Pixel a's inputs all xa, pixel b's all xb, the weights all wv: every product at an extreme, in the three
       layouts of the longest windows (whole steps of two positions and the one left). */
    static const int8_t extremes[4][3] = {{-128, -128, -128}, {-128, 127, -128}, {127, -128, -128}, {-128, -128, 127}};
    for (int32_t e = 0; e < 4; ++e) {
        for (int32_t i = WINDOW_CASES / 2 - WINDOW_LAYOUTS * 2; i < WINDOW_CASES / 2; ++i) {
            const window_case wc = window_case_of(i);
            int8_t *xo = x + wc.x_offset;
            for (int32_t j = 0; j < BUFFER; ++j) {
                x[j] = extremes[e][0];
                w[j] = extremes[e][2];
            }
            for (int32_t r = 0; r < wc.rows; ++r) { /* pixel b's window (past pixel a's where they overlap) */
                for (int32_t k = 0; k < wc.row_len; ++k) {
                    xo[wc.x_pixel_stride + r * wc.x_row_stride + k] = extremes[e][1];
                }
            }
            int32_t got[2 * CHANNELS], expected[2 * CHANNELS];
            for (int32_t c = 0; c < 2 * CHANNELS; ++c) {
                got[c] = expected[c] = start_value(c);
            }
            if (i % 2 == 1) {
                guarded_turn();
            }
            cases += 2;
            for (int32_t h = 0; h < 2; ++h) { /* the two helpers in turn, each adding to what the other left */
                plain_mac8(expected, xo, w + wc.w_offset, &wc);
                plain_mac8(expected + CHANNELS, xo + wc.x_pixel_stride, w + wc.w_offset, &wc);
                const int32_t returned = guarded_call(1 + h, got, xo, w + wc.w_offset, &wc);
                if (returned != 0 || !same(got, expected, 2 * CHANNELS, h == 0 ? "mac_s8x2x8" : "mac_s8x2x8_row", i)) {
                    failures += 1;
                }
            }
        }
    }
    /* Channel strides either side of the second pointer's threshold (292: 2045; 293: 2052) and far past it. */
    static int8_t far_w[FAR_BUFFER];
    static const int32_t far_strides[3] = {292, 293, 577};
    fill_s8(x, BUFFER, &state, 0);
    fill_s8(far_w, FAR_BUFFER, &state, 0);
    for (int32_t f = 0; f < 3; ++f) {
        for (int32_t rows = 1; rows <= 3; rows += 2) {
            /* rows of 35 inputs (whole passes and one left), the pixels' windows apart (layout 2) */
            window_case wc = window_case_of(WINDOW_LAYOUTS * (2 * (WINDOW_ROW_LEN_MAX + 1) + 35) + 2);
            wc.rows = rows;
            wc.w_channel_stride = far_strides[f];
            int32_t got[2 * CHANNELS], expected[2 * CHANNELS];
            for (int32_t c = 0; c < 2 * CHANNELS; ++c) {
                got[c] = expected[c] = start_value(c);
            }
            if (rows == 3) {
                guarded_turn();
            }
            cases += 2;
            for (int32_t h = 0; h < 2; ++h) {
                plain_mac8(expected, x, far_w, &wc);
                plain_mac8(expected + CHANNELS, x + wc.x_pixel_stride, far_w, &wc);
                const int32_t returned = guarded_call(1 + h, got, x, far_w, &wc);
                if (returned != 0 || !same(got, expected, 2 * CHANNELS, h == 0 ? "mac_s8x2x8" : "mac_s8x2x8_row",
                                           far_strides[f])) {
                    failures += 1;
                }
            }
        }
    }
    /* The forms over fewer channels (1..7), on every other window case: the first `channels` sums of each pixel as
       the eight-channel contract's, the others neither read nor written (they keep what they held). */
    for (int32_t i = 0; i < WINDOW_CASES; i += 2) {
        const window_case wc = window_case_of(i);
        const int8_t *xo = x + wc.x_offset, *wo = w + wc.w_offset;
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        for (int32_t channels = 1; channels < CHANNELS; ++channels) {
            for (int32_t h = 0; h < 2; ++h) {
                int32_t got[2 * CHANNELS], expected[2 * CHANNELS], full[2 * CHANNELS];
                for (int32_t c = 0; c < 2 * CHANNELS; ++c) {
                    got[c] = expected[c] = full[c] = start_value(c);
                }
                plain_mac8(full, xo, wo, &wc);
                plain_mac8(full + CHANNELS, xo + wc.x_pixel_stride, wo, &wc);
                for (int32_t c = 0; c < channels; ++c) {
                    expected[c] = full[c];
                    expected[CHANNELS + c] = full[CHANNELS + c];
                }
                cases += 1;
                if (guarded_call_n(h, channels, got, xo, wo, &wc) != 0
                    || !same(got, expected, 2 * CHANNELS, h == 0 ? "mac_s8x2xn" : "mac_s8x2xn_row", i)) {
                    failures += 1;
                }
            }
        }
        guarded_turn();
    }
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
