/* Unit test of the RISC-V fused pixel-pair channel tiles (backends/riscv/helpers/templates/pair_tiles_s8x8.h.in, after
 * the paired MAC and the requantization epilogue, with the prefix lp): lp_pair_tiles_s8x8 and lp_pair_tiles_s8x8_b16,
 * their one-pixel forms lp_conv_tiles_s8x8 and lp_conv_tiles_s8x8_b16, and their forms of the double rounding of any
 * sum and shift lp_pair_tiles_double_s8x8 and lp_pair_tiles_double_s8x8_b16, against the plain sums of the pixels'
 * windows from the bias, requantized by the bundle's scalar helpers (lp_requantize_double_small, lp_requantize_double
 * for the double forms, lp_saturate_int8), with the weights packed as tvm_ext.kernels.dense.pair_weights packs them
 * (per tile of eight channels, window input j's word 4j + q = w[2q][j] + 65536 * w[2q + 1][j], tiles w_tile_stride
 * words apart), for the window MAC tests' windows (0 to 3 rows, row lengths 0..35: whole groups of two inputs and
 * the odd last one, the even forms' pairs' lengths even only, the _odd forms' (lp_pair_tiles_odd_s8x8,
 * lp_pair_tiles_double_odd_s8x8, _b16 each) every odd one, the int8 weights'
 * forms (lp_pair_tiles_w8_s8x8, _b16: the weights as stored, WINDOW_MAX apart) every one, the table forms'
 * (lp_pair_tiles_lut_s8x8, lp_pair_tiles_lut_odd_s8x8, lp_conv_tiles_lut_s8x8, _b16 each: every other window's
 * "double_small" pixels and pairs) with a
 * table permuting the int8 values, their outputs mapped back by the inverse permutation before the check; row strides at and above the row length; pixels apart or
 * overlapping; inputs at every byte alignment; values over the whole int8 range or all at the minimum), 0 to 3
 * tiles, int32 and int16 biases, shifts -31..-1 (the double forms: -31..30, any multiplier, INT32_MIN among them,
 * and at odd channels int32 biases over all of int32, the sums wrapping), drawn multipliers and zero points (the
 * constants drawn as test_pair_tiles.c's: draw_pair_constants); nothing written between or past the pixels'
 * channels. And the MAC over tiled rows and its fused pixel-pair tiles (mac_s8x8_tiled.h.in: tiled_rows_cases):
 * lp_pair_tiles_tiled_s8x8 and _b16 (whole tiles), lp_pair_tiles_tiled_part_s8x8 and _b16 (a last tile storing 1..7
 * channels), each with its MAC loop unrolled and not, against the same plain sums and scalar helpers, the weights
 * laid out as tvm_ext.kernels.dense.tile_rows lays them out (tile t's input j's eight weights the bytes
 * 8 (t * row_len + j) .. + 7), and lp_mac_s8x8_tiled and lp_mac_s8x2x8_tiled against the plain sums added to their
 * accumulators, for the one-row windows, 1 to 3 tiles; and their forms over window rows lp_mac_s8x8_tiled_rows and
 * lp_mac_s8x2x8_tiled_rows (a CONV_2D's tiled window: tiled_window_cases) for every window case. Built by tests/backends/riscv/test_riscv_helpers_c.py on the
 * host and, for rv32imc and rv32imafc, under QEMU virt. Prints "ok <cases> cases" and exits 0, or names the first
 * failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_small.h"

#define BUFFER 512 /* elements: past the farthest input any case reads (under 430) */
#define MAX_TILES 3
#define MAX_CHANNELS (8 * MAX_TILES)
_Static_assert(MAX_CHANNELS <= PAIR_CHANNELS_MAX, "draw_pair_constants draws at most PAIR_CHANNELS_MAX channels");
#define WINDOW_MAX (WINDOW_ROWS_MAX * WINDOW_ROW_LEN_MAX)
#define TILE_WORDS (4 * WINDOW_MAX + 3) /* w_tile_stride: past a tile's words */
#define LUT_STEP 37 /* odd: i -> i * LUT_STEP + LUT_SHIFT (mod 256) permutes the table's 256 entries */
#define LUT_SHIFT 11

static int8_t w[MAX_CHANNELS][WINDOW_MAX];
static int32_t words[MAX_TILES * TILE_WORDS];
#define ROW_MAX WINDOW_ROW_LEN_MAX /* the tiled rows' cases: each channel's row, ROW_MAX apart in tw8 */
static int8_t tw8[MAX_CHANNELS][ROW_MAX];
static int8_t tiled[MAX_CHANNELS * WINDOW_ROW_LEN_MAX];

/* The tiled windows' cases (mac_s8x8_tiled.h.in's _rows forms, a CONV_2D's window over its tiled OHWI weights:
   window input j = r * row_len + k's eight weights the bytes 8j .. 8j + 7): every window case, one pixel and two,
   their sums added to the accumulators' values; their count added to *cases, their failures to *failures. */
static void tiled_window_cases(int32_t *cases_out, int32_t *failures_out)
{
    static int8_t x[BUFFER];
    static int8_t window[8 * WINDOW_MAX];
    uint32_t state = 29;
    int32_t cases = 0, failures = *failures_out;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int32_t n = wc.rows * wc.row_len;
        const int8_t *xo = x + wc.x_offset;
        fill_s8(x, BUFFER, &state, wc.all_min);
        fill_s8(window, 8 * n, &state, wc.all_min);
        int32_t acc[16], want[16], one[8];
        for (int32_t c = 0; c < 16; ++c) {
            acc[c] = want[c] = (int32_t)(next_value(&state) % 2001u) - 1000;
        }
        for (int32_t c = 0; c < 8; ++c) {
            one[c] = acc[c];
        }
        for (int32_t p = 0; p < 2; ++p) {
            for (int32_t c = 0; c < 8; ++c) {
                for (int32_t r = 0; r < wc.rows; ++r) {
                    for (int32_t k = 0; k < wc.row_len; ++k) {
                        want[8 * p + c] += xo[p * wc.x_pixel_stride + r * wc.x_row_stride + k]
                            * window[8 * (r * wc.row_len + k) + c];
                    }
                }
            }
        }
        int wrong = lp_mac_s8x8_tiled_rows(one, xo, window, wc.x_row_stride, wc.rows, wc.row_len) != 0
            || lp_mac_s8x2x8_tiled_rows(acc, acc + 8, xo, window, wc.x_row_stride, wc.rows, wc.row_len,
                                        wc.x_pixel_stride) != 0;
        for (int32_t c = 0; c < 16; ++c) {
            wrong |= acc[c] != want[c] || (c < 8 && one[c] != want[c]);
        }
        cases += 1;
        failures += wrong;
        if (wrong && failures <= 5) {
            printf("wrong tiled window case %ld: rows %ld, row_len %ld\n", (long)i, (long)wc.rows, (long)wc.row_len);
        }
    }
    *cases_out += cases;
    *failures_out = failures;
}

/* The tiled rows' cases (mac_s8x8_tiled.h.in; this file's header comment): their count added to *cases, their
   failures to *failures. */
static void tiled_rows_cases(int32_t *cases_out, int32_t *failures_out)
{
    static int8_t x[BUFFER];
    pair_constants k;
    uint32_t state = 23;
    int32_t cases = 0, failures = *failures_out;
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        window_case wc = window_case_of(i);
        if (wc.rows != 1) {
            continue; /* tiled rows: a FULLY_CONNECTED's one row */
        }
        const int32_t n = wc.row_len;
        const int8_t *xo = x + wc.x_offset;
        fill_s8(x, BUFFER, &state, wc.all_min);
        for (int32_t c = 0; c < MAX_CHANNELS; ++c) {
            fill_s8(tw8[c], n, &state, wc.all_min);
            for (int32_t j = 0; j < n; ++j) {
                tiled[8 * ((c / 8) * n + j) + c % 8] = tw8[c][j];
            }
        }
        /* the MACs: one pixel and two, their sums added to the accumulators' values */
        int32_t acc[16], want[16];
        for (int32_t c = 0; c < 16; ++c) {
            acc[c] = want[c] = (int32_t)(next_value(&state) % 2001u) - 1000;
        }
        for (int32_t p = 0; p < 2; ++p) {
            for (int32_t c = 0; c < 8; ++c) {
                for (int32_t j = 0; j < n; ++j) {
                    want[8 * p + c] += xo[p * wc.x_pixel_stride + j] * tw8[c][j];
                }
            }
        }
        int32_t one[8];
        for (int32_t c = 0; c < 8; ++c) {
            one[c] = acc[c];
        }
        const int wrong_macs = lp_mac_s8x8_tiled(one, xo, tiled, n) != 0
            || lp_mac_s8x2x8_tiled(acc, acc + 8, xo, tiled, n, wc.x_pixel_stride) != 0;
        int wrong = wrong_macs;
        for (int32_t c = 0; c < 16; ++c) {
            wrong |= acc[c] != want[c] || (c < 8 && one[c] != want[c]);
        }
        cases += 1;
        failures += wrong;
        if (wrong && failures <= 5) {
            printf("wrong MAC case %ld: row_len %ld\n", (long)i, (long)n);
        }
        for (int32_t variant = 0; variant < 4 * MAX_TILES; ++variant) {
            const int32_t tiles = 1 + variant / 4, unrolled = variant % 2;
            const int part = variant % 4 >= 2, narrow = (i + variant) % 3 == 0;
            const int32_t channels = part ? 8 * tiles - 1 - (int32_t)(next_value(&state) % 7u) : 8 * tiles;
            draw_pair_constants(&k, MAX_CHANNELS, 0, 1, cases, &state);
            const int32_t out_pixel_stride = channels + PAIR_GUARD;
            int8_t out[2 * (MAX_CHANNELS + PAIR_GUARD)];
            for (int32_t j = 0; j < 2 * (MAX_CHANNELS + PAIR_GUARD); ++j) {
                out[j] = PAIR_UNTOUCHED;
            }
            const pair_guarded g = pair_guard(out, out_pixel_stride, 2, channels, xo, &wc, NULL, 0, tiled,
                                              8 * tiles * n, &k, narrow);
            const int8_t *tw = (const int8_t *)g.w;
            int32_t returned;
            if (part) {
                returned = narrow
                    ? lp_pair_tiles_tiled_part_s8x8_b16(g.out, g.x, tw, g.bias16, g.multiplier, g.shift,
                                                        k.zero_point, n, wc.x_pixel_stride, out_pixel_stride,
                                                        unrolled, tiles, channels)
                    : lp_pair_tiles_tiled_part_s8x8(g.out, g.x, tw, g.bias, g.multiplier, g.shift, k.zero_point, n,
                                                    wc.x_pixel_stride, out_pixel_stride, unrolled, tiles, channels);
            } else {
                returned = narrow
                    ? lp_pair_tiles_tiled_s8x8_b16(g.out, g.x, tw, g.bias16, g.multiplier, g.shift, k.zero_point, n,
                                                   wc.x_pixel_stride, out_pixel_stride, unrolled, tiles, channels)
                    : lp_pair_tiles_tiled_s8x8(g.out, g.x, tw, g.bias, g.multiplier, g.shift, k.zero_point, n,
                                               wc.x_pixel_stride, out_pixel_stride, unrolled, tiles, channels);
            }
            pair_unguard(&g, out, NULL);
            const pair_epilogue epilogue = {&k, narrow, lp_requantize_double_small};
            const int wrong_pair = returned != 0
                || pair_outputs_wrong(out, MAX_CHANNELS, 2, channels, xo, &tw8[0][0], ROW_MAX, &wc, &epilogue);
            cases += 1;
            failures += wrong_pair;
            if (wrong_pair && failures <= 5) {
                printf("wrong case %ld: row_len %ld, tiles %ld, channels %ld, narrow %d, unrolled %ld\n", (long)i,
                       (long)n, (long)tiles, (long)channels, narrow, (long)unrolled);
            }
        }
    }
    *cases_out += cases;
    *failures_out = failures;
}

int main(void)
{
    static int8_t x[BUFFER];
    pair_constants k;
    uint32_t state = 11;
    int32_t cases = 0, failures = 0;
    int8_t table[256], inverse[256]; /* entry v + 128 for the value v */
    for (int32_t i = 0; i < 256; ++i) {
        const int32_t mapped = (i * LUT_STEP + LUT_SHIFT) % 256;
        table[i] = (int8_t)(mapped - 128);
        inverse[mapped] = (int8_t)(i - 128);
    }
    for (int32_t i = 0; i < WINDOW_CASES; ++i) {
        const window_case wc = window_case_of(i);
        const int32_t window = wc.rows * wc.row_len;
        const int8_t *xo = x + wc.x_offset;
        fill_s8(x, BUFFER, &state, wc.all_min);
        for (int32_t c = 0; c < MAX_CHANNELS; ++c) {
            fill_s8(w[c], window, &state, wc.all_min);
        }
        for (int32_t t = 0; t < MAX_TILES; ++t) {
            for (int32_t j = 0; j < window; ++j) {
                for (int32_t q = 0; q < 4; ++q) {
                    const uint32_t a = (uint32_t)(int32_t)w[8 * t + 2 * q][j];
                    const uint32_t b = (uint32_t)(int32_t)w[8 * t + 2 * q + 1][j];
                    words[TILE_WORDS * t + 4 * j + q] = (int32_t)(a + (b << 16));
                }
            }
        }
        for (int32_t variant = 0; variant < 4 * (MAX_TILES + 1); ++variant) {
            /* one pixel, a pair, a pair of the double forms, a pair of int8 weights as stored */
            const int32_t tiles = variant / 4, pixels = variant % 4 == 0 ? 1 : 2;
            const int any_double = variant % 4 == 2, int8_weights = variant % 4 == 3;
            const int32_t channels = 8 * tiles;
            const int narrow = (i + variant / 4 + variant) % 2 == 1;
            draw_pair_constants(&k, MAX_CHANNELS, any_double, 1, cases, &state); /* the sums wrap as int32 */
            const int32_t out_pixel_stride = channels + PAIR_GUARD;
            int8_t out[2 * (MAX_CHANNELS + PAIR_GUARD)];
            for (int32_t j = 0; j < 2 * (MAX_CHANNELS + PAIR_GUARD); ++j) {
                out[j] = PAIR_UNTOUCHED;
            }
            /* the pairs' even forms take rows of even length (the contract), the _odd forms any: every odd row */
            const int odd = pixels == 2 && !int8_weights && wc.row_len % 2 != 0;
            /* the table forms: every other window's "double_small" pixels and pairs of paired weights */
            const int lut = !int8_weights && !any_double && (i / 2) % 2 == 1;
            /* every buffer exactly what the call reads and writes, against no-access memory */
            const pair_guarded g = int8_weights
                ? pair_guard(out, out_pixel_stride, pixels, channels, xo, &wc, NULL, 0, &w[0][0],
                             channels == 0 || window == 0 ? 0 : WINDOW_MAX * (channels - 1) + window, &k, narrow)
                : pair_guard(out, out_pixel_stride, pixels, channels, xo, &wc, NULL, 0, words,
                             tiles == 0 ? 0 : 4 * (TILE_WORDS * (tiles - 1) + 4 * window), &k, narrow);
            int32_t returned;
            if (int8_weights) {
                returned = narrow
                    ? lp_pair_tiles_w8_s8x8_b16(g.out, g.x, (const int8_t *)g.w, g.bias16, g.multiplier, g.shift,
                                                k.zero_point, wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                out_pixel_stride, WINDOW_MAX, channels)
                    : lp_pair_tiles_w8_s8x8(g.out, g.x, (const int8_t *)g.w, g.bias, g.multiplier, g.shift,
                                            k.zero_point, wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                            out_pixel_stride, WINDOW_MAX, channels);
            } else if (pixels == 1 && lut) {
                returned = narrow
                    ? lp_conv_tiles_lut_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                                 wc.x_row_stride, wc.rows, wc.row_len, TILE_WORDS, tiles, table)
                    : lp_conv_tiles_lut_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                             wc.x_row_stride, wc.rows, wc.row_len, TILE_WORDS, tiles, table);
            } else if (pixels == 1) {
                returned = narrow
                    ? lp_conv_tiles_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                             wc.x_row_stride, wc.rows, wc.row_len, TILE_WORDS, tiles)
                    : lp_conv_tiles_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point, wc.x_row_stride,
                                         wc.rows, wc.row_len, TILE_WORDS, tiles);
            } else if (lut) {
                returned = odd
                    ? (narrow ? lp_pair_tiles_lut_odd_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift,
                                                               k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                               wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles,
                                                               table)
                              : lp_pair_tiles_lut_odd_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift,
                                                           k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                           wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles,
                                                           table))
                    : (narrow ? lp_pair_tiles_lut_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift,
                                                           k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                           wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles,
                                                           table)
                              : lp_pair_tiles_lut_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                       wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                       out_pixel_stride, TILE_WORDS, tiles, table));
            } else if (odd) {
                returned = any_double
                    ? (narrow ? lp_pair_tiles_double_odd_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift,
                                                                  k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                                  wc.x_pixel_stride, out_pixel_stride, TILE_WORDS,
                                                                  tiles)
                              : lp_pair_tiles_double_odd_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift,
                                                              k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                              wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles))
                    : (narrow ? lp_pair_tiles_odd_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift,
                                                           k.zero_point, wc.x_row_stride, wc.rows, wc.row_len,
                                                           wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles)
                              : lp_pair_tiles_odd_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                       wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                       out_pixel_stride, TILE_WORDS, tiles));
            } else if (any_double) {
                returned = narrow
                    ? lp_pair_tiles_double_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                                    wc.x_row_stride, wc.rows, wc.row_len, wc.x_pixel_stride,
                                                    out_pixel_stride, TILE_WORDS, tiles)
                    : lp_pair_tiles_double_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point,
                                                wc.x_row_stride,
                                                wc.rows, wc.row_len, wc.x_pixel_stride, out_pixel_stride,
                                                TILE_WORDS, tiles);
            } else {
                returned = narrow
                    ? lp_pair_tiles_s8x8_b16(g.out, g.x, g.w, g.bias16, g.multiplier, g.shift, k.zero_point,
                                             wc.x_row_stride,
                                             wc.rows, wc.row_len, wc.x_pixel_stride, out_pixel_stride, TILE_WORDS,
                                             tiles)
                    : lp_pair_tiles_s8x8(g.out, g.x, g.w, g.bias, g.multiplier, g.shift, k.zero_point, wc.x_row_stride,
                                         wc.rows, wc.row_len, wc.x_pixel_stride, out_pixel_stride, TILE_WORDS, tiles);
            }
            pair_unguard(&g, out, NULL);
            for (int32_t p = 0; lut && p < pixels; ++p) { /* the table's entries back to the values looked up */
                for (int32_t c = 0; c < channels; ++c) {
                    out[p * out_pixel_stride + c] = inverse[out[p * out_pixel_stride + c] + 128];
                }
            }
            const pair_epilogue epilogue = {&k, narrow,
                                             any_double ? lp_requantize_double : lp_requantize_double_small};
            const int wrong = returned != 0
                || pair_outputs_wrong(out, MAX_CHANNELS, pixels, channels, xo, &w[0][0], WINDOW_MAX, &wc, &epilogue);
            cases += 1;
            if (wrong) {
                failures += 1;
                if (failures <= 5) {
                    printf("wrong case %ld: rows %ld, row_len %ld, tiles %ld, pixels %ld, narrow %d, double %d, "
                           "odd %d, int8 weights %d, table %d\n", (long)i, (long)wc.rows, (long)wc.row_len, (long)tiles,
                           (long)pixels, narrow, any_double, odd, int8_weights, lut);
                }
            }
        }
    }
    tiled_rows_cases(&cases, &failures);
    tiled_window_cases(&cases, &failures);
    return cases_verdict(cases, failures);
}
