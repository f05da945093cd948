/* Unit test of the Cortex-M dual MAC helpers (backends/cortex_m/helpers/templates/dual_mac.h.in after
 * dsp_words.h.in, with the prefix lp): lp_dual_mac_s8x4, lp_dual_mac_s16x4 and lp_dual_mac_s8x2x4 against the
 * plain loops of their contracts, for 0 to 3 rows, every row length up to 35 (whole words of four, one and two
 * Helium vectors of 16, and every remainder), row strides at and above the row length, weight channel strides at and above a channel's
 * weights, two pixels' windows apart or overlapping, inputs and weights at every byte alignment, values over
 * the whole int8 and int16 ranges (-128, 127, -32768, 32767 forced in) and all at the minimum (the largest
 * products); each accumulator gains its sum and keeps what it held. lp_dual_mac_s8x4 also with its rows and row
 * length literal at the call, as a kernel passes them (below 64 its C loop, from 64 its assembly loop, as with a
 * length known only at run time), and with channel strides literal about the assembly's immediate offsets' limits. Built by tests/test_cortex_m_helpers_c.py
 * on the host (the portable C), for cortex-m4f under QEMU (SXTB16, PKHBT/PKHTB, SMLAD) and, with the Helium
 * helpers (helium_dual_mac.h.in), for cortex-m55 under QEMU (VLDRB, VMLADAVA, VCTP). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "dual_mac.h"

#define BUFFER 512 /* elements: past the farthest one any case reads (under 430) */
#define FAR_BUFFER 14000 /* weights of channel strides the assembly loop cannot take as three immediates */

/* Whether the n accumulators of got equal those of expected. */
static int same(const int32_t *got, const int32_t *expected, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) {
        if (got[i] != expected[i]) {
            return 0;
        }
    }
    return 1;
}

/* lp_dual_mac_s8x4 on x8 and the weights W with ROWS, ROW_LEN and the channel stride W_STRIDE literal at the call
   (the row stride from ROW_LEN) against the plain loop; adds 1 to failures when they differ. Where GUARDED, every
   buffer exactly what the call reads and writes, against no-access memory (guarded_buffers.h); else the buffers
   themselves: the stride 4095's loop (one stride an immediate offset, twelve registers) takes every register a
   build reserving r7 and r9 leaves, and there gcc cannot also place the copies' addresses ("impossible
   constraints"). */
#define CHECK_KNOWN(ROWS, ROW_LEN, W_STRIDE, W, GUARDED)                                                          \
    do {                                                                                                          \
        int32_t got[4], expected[4];                                                                              \
        for (int32_t c = 0; c < 4; ++c) {                                                                         \
            got[c] = expected[c] = start_value(c);                                                                \
        }                                                                                                         \
        plain_window_mac(expected, x8 + 1, NULL, (W) + 2, (ROW_LEN) + 3, W_STRIDE, ROWS, ROW_LEN);                \
        int32_t *const acc = GUARDED ? guarded_copy(0, got, 16) : got;                                            \
        const int8_t *const xs = GUARDED ? guarded_copy(1, x8 + 1, guarded_span(ROWS, ROW_LEN, (ROW_LEN) + 3, 1)) \
                                         : x8 + 1;                                                                \
        const int8_t *const ws = GUARDED ? guarded_copy(2, (W) + 2, guarded_span(4, (ROWS) * (ROW_LEN), W_STRIDE, \
                                                                                 1))                              \
                                         : (W) + 2;                                                               \
        const int32_t returned = lp_dual_mac_s8x4(acc, xs, ws, (ROW_LEN) + 3, W_STRIDE, ROWS, ROW_LEN);          \
        if (GUARDED) {                                                                                            \
            guarded_back(0, got, 16);                                                                             \
        }                                                                                                         \
        if (returned != 0 || !same(got, expected, 4)) {                                                           \
            failures += 1;                                                                                        \
            printf("wrong s8x4 of a known length: %d rows of %d, channel stride %d\n", ROWS, ROW_LEN, W_STRIDE);   \
        }                                                                                                         \
        cases += 1;                                                                                               \
    } while (0)
#define CHECK_KNOWN_LENGTH(ROWS, ROW_LEN) CHECK_KNOWN(ROWS, ROW_LEN, (ROW_LEN) + 1, w, 1)

int main(void)
{
    static int8_t x8[BUFFER], w[BUFFER], w_far[FAR_BUFFER];
    static int16_t x16[BUFFER];
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int8_t *x8o = x8 + wc.x_offset, *wo = w + wc.w_offset;
        const int16_t *x16o = x16 + wc.x_offset;
        int32_t got[8], expected[8];
        fill_s8(x8, BUFFER, &state, wc.all_min);
        fill_s8(w, BUFFER, &state, wc.all_min);
        fill_s16(x16, BUFFER, &state, wc.all_min);
        for (int32_t c = 0; c < 8; ++c) {
            got[c] = expected[c] = start_value(c);
        }
        cases += 3;
        /* each call's buffers exactly what it reads and writes, against no-access memory */
        const int32_t x_bytes = guarded_span(wc.rows, wc.row_len, wc.x_row_stride, 1);
        const int32_t w_bytes = guarded_span(4, wc.rows * wc.row_len, wc.w_channel_stride, 1);
        const int32_t pair_bytes = x_bytes == 0 ? 0 : wc.x_pixel_stride + x_bytes;
        int32_t returned;
        plain_window_mac(expected, x8o, NULL, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len);
        returned = lp_dual_mac_s8x4(guarded_copy(0, got, 16), guarded_copy(1, x8o, x_bytes),
                                    guarded_copy(2, wo, w_bytes), wc.x_row_stride, wc.w_channel_stride, wc.rows,
                                    wc.row_len);
        guarded_back(0, got, 16);
        if (returned != 0 || !same(got, expected, 4)) {
            failures += 1;
            printf("wrong s8x4: case %ld\n", (long)i);
        }
        plain_window_mac(expected, NULL, x16o, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len);
        returned = lp_dual_mac_s16x4(guarded_copy(0, got, 16), guarded_copy(1, x16o, 2 * x_bytes),
                                     guarded_copy(2, wo, w_bytes), wc.x_row_stride, wc.w_channel_stride, wc.rows,
                                     wc.row_len);
        guarded_back(0, got, 16);
        if (returned != 0 || !same(got, expected, 4)) {
            failures += 1;
            printf("wrong s16x4: case %ld\n", (long)i);
        }
        plain_window_mac(expected, x8o, NULL, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len);
        plain_window_mac(expected + 4, x8o + wc.x_pixel_stride, NULL, wo, wc.x_row_stride, wc.w_channel_stride, wc.rows,
                       wc.row_len);
        returned = lp_dual_mac_s8x2x4(guarded_copy(0, got, 16), guarded_copy(3, got + 4, 16),
                                      guarded_copy(1, x8o, pair_bytes), guarded_copy(2, wo, w_bytes),
                                      wc.x_row_stride, wc.w_channel_stride, wc.rows, wc.row_len, wc.x_pixel_stride);
        guarded_back(0, got, 16);
        guarded_back(3, got + 4, 16);
        if (returned != 0 || !same(got, expected, 8)) {
            failures += 1;
            printf("wrong s8x2x4: case %ld\n", (long)i);
        }
    }
    for (int all_min = 0; all_min < 2; ++all_min) {
        fill_s8(x8, BUFFER, &state, all_min);
        fill_s8(w, BUFFER, &state, all_min);
        CHECK_KNOWN_LENGTH(3, 9);
        CHECK_KNOWN_LENGTH(1, 27);
        CHECK_KNOWN_LENGTH(2, 63);
        CHECK_KNOWN_LENGTH(2, 64);
        CHECK_KNOWN_LENGTH(1, 101);
        /* channel strides literal at the call: three of them an immediate offset (<= 4095), one (<= 4095), none */
        fill_s8(w_far, FAR_BUFFER, &state, all_min);
        CHECK_KNOWN(2, 64, 1365, w_far, 1);
        CHECK_KNOWN(2, 67, 1366, w_far, 1);
        CHECK_KNOWN(1, 64, 4095, w_far, 0);
        CHECK_KNOWN(2, 66, 4096, w_far, 1);
        CHECK_KNOWN(1, 70, 4500, w_far, 1);
    }
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
