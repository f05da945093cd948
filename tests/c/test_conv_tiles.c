/* Unit test of the fused channel tiles (backends/cortex_m/helpers/templates/helium_conv_tiles.h.in, after
 * helium_lanes.h.in, the Helium dual MAC and requantization epilogue and the bundle's scalar requantization, with
 * the prefix lp): lp_conv_tiles_s8 and lp_conv_tiles_s8_b16 against the plain sums of their contract requantized by
 * the scalar helpers (lp_requantize_double, lp_saturate_int8), and their out-of-line copies lp_conv_tiles_shared_s8
 * and _b16 and the pair tiles lp_pair_tiles_shared_s8 and _b16 (channel counts of whole tiles, the second pixel's
 * inputs PAIR_X_STRIDE bytes on) and, for windows of at most LP_PAIR_WINDOW_BYTES inputs, lp_pair_tiles_windowed_s8
 * and _b16 (both windows copied into one run each first) the same way, and the table forms lp_conv_tiles_lut_s8, lp_conv_tiles_shared_lut_s8,
 * lp_conv_tiles_generic_lut_s8 and lp_pair_tiles_shared_lut_s8 (each with _b16) with a table permuting the int8 values (their outputs mapped back
 * by the inverse permutation before the check), over every window of the window MAC tests (cortex_m_test_values.h:
 * rows 0..3, row_len 0..35, three layouts, every byte alignment, mixed and minimum values), channel counts 4..11
 * (whole tiles and every overlapping last tile), per-channel biases (int32 and int16), multipliers and shifts, zero
 * points at either end; the bytes after the outputs must keep their value; a window of one run read as three rows
 * gives the same outputs, and LP_CHOOSE evaluates only the address it chooses. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VMLADAVA, VQRDMULH). Prints "ok <cases> cases" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "conv_tiles.h"

#define CHANNELS_MAX 11
#define GUARD 3 /* bytes after the outputs that must keep their value */
#define PAIR_X_STRIDE 3 /* the second pixel's inputs this many bytes after the first's (the pair tiles) */
#define LUT_STEP 37 /* odd: i -> i * LUT_STEP + LUT_SHIFT (mod 256) permutes the table's 256 entries */
#define LUT_SHIFT 11

/* What the scalar loops the helper replaces store for output channel c. */
static int8_t expected_out(const int8_t *x, const int8_t *w, const window_case *k, int32_t c, int32_t bias,
                           int32_t multiplier, int32_t shift, int32_t zero_point)
{
    int32_t sum = bias;
    for (int32_t r = 0; r < k->rows; ++r) {
        for (int32_t i = 0; i < k->row_len; ++i) {
            sum += x[r * k->x_row_stride + i] * w[c * k->w_channel_stride + r * k->row_len + i];
        }
    }
    const int32_t requantized = lp_requantize_double(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* Whether the outputs (channels of them, then GUARD untouched bytes) are wrong. */
static int outputs_wrong(const int8_t *out, const int8_t *x, const int8_t *w, const window_case *k, int32_t channels,
                         const int32_t *bias, const int32_t *multiplier, const int8_t *shift, int32_t zero_point)
{
    int wrong = 0;
    for (int32_t c = 0; c < channels + GUARD; ++c) {
        const int8_t want = c < channels ? expected_out(x, w, k, c, bias[c], multiplier[c], shift[c], zero_point)
                                         : (int8_t)0x5a;
        wrong |= out[c] != want;
    }
    return wrong;
}

int main(void)
{
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, 1277447166, 2004318071};
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    static int8_t x_store[440 + PAIR_X_STRIDE], w_store[CHANNELS_MAX * 110 + 8];
    uint32_t state = 7;
    int8_t table[256], inverse[256]; /* entry v + 128 for the value v */
    for (int32_t i = 0; i < 256; ++i) {
        const int32_t mapped = (i * LUT_STEP + LUT_SHIFT) % 256;
        table[i] = (int8_t)(mapped - 128);
        inverse[mapped] = (int8_t)(i - 128);
    }
    int32_t failures = 0, cases = 0;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case k = window_case_of(i);
        const int32_t channels = 4 + i % (CHANNELS_MAX - 3), zero_point = zero_points[i % 4];
        int8_t *x = x_store + k.x_offset, *w = w_store + k.w_offset;
        int32_t bias[CHANNELS_MAX], multiplier[CHANNELS_MAX];
        int16_t bias16[CHANNELS_MAX];
        int8_t shift[CHANNELS_MAX];
        fill_s8(x_store, (int32_t)sizeof x_store, &state, k.all_min);
        fill_s8(w_store, (int32_t)sizeof w_store, &state, k.all_min);
        for (int32_t c = 0; c < CHANNELS_MAX; ++c) {
            bias[c] = (int32_t)(next_value(&state) >> 19) - (1 << 12);
            bias16[c] = (int16_t)bias[c];
            multiplier[c] = multipliers[(i + c) % 5];
            shift[c] = (int8_t)(c % 3 == 2 ? 1 : -(int32_t)(4 + (i + c) % 8));
        }
        int8_t out[CHANNELS_MAX + GUARD], out16[CHANNELS_MAX + GUARD], shared[CHANNELS_MAX + GUARD],
            shared16[CHANNELS_MAX + GUARD];
        for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
            out[c] = out16[c] = shared[c] = shared16[c] = (int8_t)0x5a;
        }
        /* every buffer exactly what the call reads and writes, against no-access memory; each output in turn */
        const int32_t window = guarded_span(k.rows, k.row_len, k.x_row_stride, 1);
        const int8_t *const g_x = guarded_copy(1, x, window);
        const int8_t *const g_w = guarded_copy(2, w, guarded_span(channels, k.rows * k.row_len, k.w_channel_stride, 1));
        const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
        const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
        const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
        const int8_t *const g_shift = guarded_copy(6, shift, channels);
        int32_t returned = lp_conv_tiles_s8(guarded_copy(0, out, channels), g_x, g_w, g_bias, g_multiplier, g_shift,
                                            zero_point, k.x_row_stride, k.w_channel_stride, k.rows, k.row_len,
                                            channels);
        guarded_back(0, out, channels);
        returned |= lp_conv_tiles_s8_b16(guarded_copy(0, out16, channels), g_x, g_w, g_bias16, g_multiplier, g_shift,
                                         zero_point, k.x_row_stride, k.w_channel_stride, k.rows, k.row_len, channels);
        guarded_back(0, out16, channels);
        returned |= lp_conv_tiles_shared_s8(guarded_copy(0, shared, channels), g_x, g_w, g_bias, g_multiplier,
                                            g_shift, zero_point, k.x_row_stride, k.w_channel_stride, k.rows,
                                            k.row_len, channels);
        guarded_back(0, shared, channels);
        returned |= lp_conv_tiles_shared_s8_b16(guarded_copy(0, shared16, channels), g_x, g_w, g_bias16,
                                                g_multiplier, g_shift, zero_point, k.x_row_stride,
                                                k.w_channel_stride, k.rows, k.row_len, channels);
        guarded_back(0, shared16, channels);
        /* the table forms (inlined, out-of-line; int32 and int16 biases), their outputs mapped back */
        int8_t luts[6][CHANNELS_MAX + GUARD];
        for (int32_t form = 0; form < 6; ++form) {
            for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                luts[form][c] = (int8_t)0x5a;
            }
        }
        returned |= lp_conv_tiles_lut_s8(guarded_copy(0, luts[0], channels), g_x, g_w, g_bias, g_multiplier, g_shift,
                                         zero_point, k.x_row_stride, k.w_channel_stride, k.rows, k.row_len, channels,
                                         table);
        guarded_back(0, luts[0], channels);
        returned |= lp_conv_tiles_lut_s8_b16(guarded_copy(0, luts[1], channels), g_x, g_w, g_bias16, g_multiplier,
                                             g_shift, zero_point, k.x_row_stride, k.w_channel_stride, k.rows,
                                             k.row_len, channels, table);
        guarded_back(0, luts[1], channels);
        returned |= lp_conv_tiles_shared_lut_s8(guarded_copy(0, luts[2], channels), g_x, g_w, g_bias, g_multiplier,
                                                g_shift, zero_point, k.x_row_stride, k.w_channel_stride, k.rows,
                                                k.row_len, channels, table);
        guarded_back(0, luts[2], channels);
        returned |= lp_conv_tiles_shared_lut_s8_b16(guarded_copy(0, luts[3], channels), g_x, g_w, g_bias16,
                                                    g_multiplier, g_shift, zero_point, k.x_row_stride,
                                                    k.w_channel_stride, k.rows, k.row_len, channels, table);
        guarded_back(0, luts[3], channels);
        returned |= lp_conv_tiles_generic_lut_s8(guarded_copy(0, luts[4], channels), g_x, g_w, g_bias, g_multiplier,
                                                 g_shift, zero_point, k.x_row_stride, k.w_channel_stride, k.rows,
                                                 k.row_len, channels, table);
        guarded_back(0, luts[4], channels);
        returned |= lp_conv_tiles_generic_lut_s8_b16(guarded_copy(0, luts[5], channels), g_x, g_w, g_bias16,
                                                     g_multiplier, g_shift, zero_point, k.x_row_stride,
                                                     k.w_channel_stride, k.rows, k.row_len, channels, table);
        guarded_back(0, luts[5], channels);
        int tables_wrong = 0;
        for (int32_t form = 0; form < 6; ++form) {
            for (int32_t c = 0; c < channels; ++c) {
                luts[form][c] = inverse[luts[form][c] + 128];
            }
            tables_wrong |= outputs_wrong(luts[form], x, w, &k, channels, bias, multiplier, shift, zero_point);
        }
        if ((returned != 0 || tables_wrong
             || outputs_wrong(out, x, w, &k, channels, bias, multiplier, shift, zero_point)
             || outputs_wrong(out16, x, w, &k, channels, bias, multiplier, shift, zero_point)
             || outputs_wrong(shared, x, w, &k, channels, bias, multiplier, shift, zero_point)
             || outputs_wrong(shared16, x, w, &k, channels, bias, multiplier, shift, zero_point)) && failures++ < 8) {
            printf("FAIL case %ld: %ld channels, rows %ld, row_len %ld\n", (long)i, (long)channels, (long)k.rows,
                   (long)k.row_len);
        }
        ++cases;
        if (channels % 4 == 0) {
            /* the pair tiles: two pixels, the second's inputs PAIR_X_STRIDE bytes on, its outputs after the first's */
            int8_t pair[2 * (CHANNELS_MAX + GUARD)], pair16[2 * (CHANNELS_MAX + GUARD)];
            int8_t windowed[2 * (CHANNELS_MAX + GUARD)], windowed16[2 * (CHANNELS_MAX + GUARD)];
            for (int32_t c = 0; c < 2 * (CHANNELS_MAX + GUARD); ++c) {
                pair[c] = pair16[c] = windowed[c] = windowed16[c] = (int8_t)0x5a;
            }
            const int32_t pixel = CHANNELS_MAX + GUARD;
            const int32_t pair_bytes = pixel + channels;
            const int8_t *const pixels = guarded_copy(1, x, window == 0 ? 0 : PAIR_X_STRIDE + window);
            int32_t paired = lp_pair_tiles_shared_s8(guarded_copy(0, pair, pair_bytes), pixels, g_w, g_bias,
                                                     g_multiplier, g_shift, zero_point, k.x_row_stride, k.rows,
                                                     k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride, channels);
            guarded_back(0, pair, pair_bytes);
            paired |= lp_pair_tiles_shared_s8_b16(guarded_copy(0, pair16, pair_bytes), pixels, g_w, g_bias16,
                                                  g_multiplier, g_shift, zero_point, k.x_row_stride, k.rows,
                                                  k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride, channels);
            guarded_back(0, pair16, pair_bytes);
            /* the windowed copies, where the window fits their stack */
            const int fits = k.rows * k.row_len <= LP_PAIR_WINDOW_BYTES;
            if (fits) {
                paired |= lp_pair_tiles_windowed_s8(guarded_copy(0, windowed, pair_bytes), pixels, g_w, g_bias,
                                                    g_multiplier, g_shift, zero_point, k.x_row_stride, k.rows,
                                                    k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride, channels);
                guarded_back(0, windowed, pair_bytes);
                paired |= lp_pair_tiles_windowed_s8_b16(guarded_copy(0, windowed16, pair_bytes), pixels, g_w,
                                                        g_bias16, g_multiplier, g_shift, zero_point, k.x_row_stride,
                                                        k.rows, k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride,
                                                        channels);
                guarded_back(0, windowed16, pair_bytes);
            }
            /* the table forms, their outputs mapped back */
            int8_t lut[2 * (CHANNELS_MAX + GUARD)], lut16[2 * (CHANNELS_MAX + GUARD)];
            for (int32_t c = 0; c < 2 * (CHANNELS_MAX + GUARD); ++c) {
                lut[c] = lut16[c] = (int8_t)0x5a;
            }
            paired |= lp_pair_tiles_shared_lut_s8(guarded_copy(0, lut, pair_bytes), pixels, g_w, g_bias,
                                                  g_multiplier, g_shift, zero_point, k.x_row_stride, k.rows,
                                                  k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride, channels,
                                                  table);
            guarded_back(0, lut, pair_bytes);
            paired |= lp_pair_tiles_shared_lut_s8_b16(guarded_copy(0, lut16, pair_bytes), pixels, g_w, g_bias16,
                                                      g_multiplier, g_shift, zero_point, k.x_row_stride, k.rows,
                                                      k.row_len, PAIR_X_STRIDE, pixel, k.w_channel_stride, channels,
                                                      table);
            guarded_back(0, lut16, pair_bytes);
            for (int32_t p = 0; p < 2; ++p) {
                for (int32_t c = 0; c < channels; ++c) {
                    lut[p * pixel + c] = inverse[lut[p * pixel + c] + 128];
                    lut16[p * pixel + c] = inverse[lut16[p * pixel + c] + 128];
                }
            }
            int wrong = paired != 0;
            for (int32_t p = 0; p < 2; ++p) {
                const int8_t *px = x + p * PAIR_X_STRIDE;
                wrong |= outputs_wrong(pair + p * pixel, px, w, &k, channels, bias, multiplier, shift, zero_point)
                    | outputs_wrong(pair16 + p * pixel, px, w, &k, channels, bias, multiplier, shift, zero_point)
                    | outputs_wrong(lut + p * pixel, px, w, &k, channels, bias, multiplier, shift, zero_point)
                    | outputs_wrong(lut16 + p * pixel, px, w, &k, channels, bias, multiplier, shift, zero_point);
                if (fits) {
                    wrong |= outputs_wrong(windowed + p * pixel, px, w, &k, channels, bias, multiplier, shift,
                                           zero_point)
                        | outputs_wrong(windowed16 + p * pixel, px, w, &k, channels, bias, multiplier, shift,
                                        zero_point);
                }
            }
            if (wrong && failures++ < 8) {
                printf("FAIL case %ld pair tiles: %ld channels\n", (long)i, (long)channels);
            }
            ++cases;
        }
        if (k.rows == 1 && k.row_len % 3 == 0 && k.row_len > 0) {
            /* one run of inputs read as three rows of a third each, rows their length apart (a copied border window
               split like an interior one, backends/cortex_m/schedules/conv_tiles.py): the same outputs */
            int8_t split[CHANNELS_MAX + GUARD];
            for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                split[c] = (int8_t)0x5a;
            }
            const int32_t third = k.row_len / 3;
            lp_conv_tiles_s8(split, LP_CHOOSE(i % 2, x, x), w, bias, multiplier, shift, zero_point, third,
                             k.w_channel_stride, 3, third, channels);
            for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                if (split[c] != out[c] && failures++ < 8) {
                    printf("FAIL case %ld split in three rows: channel %ld\n", (long)i, (long)c);
                }
            }
            ++cases;
        }
    }
    {
        /* LP_CHOOSE: the address its condition names, the other operand never evaluated */
        static int8_t a[1], b[1];
        int32_t evaluated = 0;
        const int8_t *first = LP_CHOOSE(1, a, (++evaluated, b));
        const int8_t *second = LP_CHOOSE(0, (++evaluated, a), b);
        if ((first != a || second != b || evaluated != 0) && failures++ < 8) {
            printf("FAIL LP_CHOOSE\n");
        }
        ++cases;
    }
    return cases_verdict(cases, failures);
}
