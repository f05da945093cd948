/* Inputs of the Cortex-M helpers' C unit tests (tests/c/test_dual_mac.c and its siblings): a fixed pseudo-random
 * sequence (the same run to run and on every core) with the int8 and int16 extremes forced in; the window cases
 * of the window MAC helpers and the plain sums they are checked against; the cases of the per-tensor fully
 * connected rows (Helium's and RV32's: test_fc_rows.c, test_riscv_fc_rows.c); the expected outputs of the
 * pixel-pair channel tiles (the DSP cores' and RV32's: test_pair_tiles.c, test_riscv_pair_tiles.c); the padded
 * window sums of the depthwise tiles' border cases (test_depthwise_tiles_s8x4.c, test_riscv_depthwise_tiles.c). */
#ifndef CORTEX_M_TEST_VALUES_H
#define CORTEX_M_TEST_VALUES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guarded_buffers.h"

/* The next value of the sequence `state`: 32 bits, well mixed in the high half. */
static inline uint32_t next_value(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 16;
}

/* n int8: all -128 when all_min (the largest products), else -128 at every 7th index, 127 at every 11th, -1 at
   every 13th and the rest from the sequence. */
static inline void fill_s8(int8_t *x, int32_t n, uint32_t *state, int all_min)
{
    for (int32_t i = 0; i < n; ++i) {
        if (all_min) {
            x[i] = (int8_t)-128;
            continue;
        }
        const int8_t drawn = (int8_t)(int32_t)(next_value(state) % 256u - 128u);
        x[i] = i % 7 == 0 ? (int8_t)-128 : (i % 11 == 0 ? (int8_t)127 : (i % 13 == 0 ? (int8_t)-1 : drawn));
    }
}

/* n int16: all -32768 when all_min, else -32768 at every 7th index, 32767 at every 11th, -1 at every 13th
   and the rest from the sequence. */
static inline void fill_s16(int16_t *x, int32_t n, uint32_t *state, int all_min)
{
    for (int32_t i = 0; i < n; ++i) {
        if (all_min) {
            x[i] = (int16_t)-32768;
            continue;
        }
        const int16_t drawn = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        x[i] = i % 7 == 0 ? (int16_t)-32768 : (i % 11 == 0 ? (int16_t)32767 : (i % 13 == 0 ? (int16_t)-1 : drawn));
    }
}

/* Accumulator c's starting value: far from 0 on either side, within int32 after any test's sums. */
static inline int32_t start_value(int32_t c)
{
    return (int32_t)(c * 1000003) - 2000000;
}

/* One case of the window MAC helpers' tests (test_dual_mac.c, test_dual_mac_q15.c): a window of rows rows of
   row_len inputs (strides in elements), the second pixel's window x_pixel_stride inputs after the first, each
   channel's weights w_channel_stride apart, x and w read from the byte offsets x_offset and w_offset, the
   values all at the minimum when all_min. */
typedef struct {
    int all_min;
    int32_t rows, row_len, x_row_stride, w_channel_stride, x_pixel_stride, x_offset, w_offset;
} window_case;

#define WINDOW_ROWS_MAX 3
#define WINDOW_ROW_LEN_MAX 35 /* whole words of four, one and two Helium vectors of 16, and every remainder */
#define WINDOW_LAYOUTS 3
#define WINDOW_CASES (2 * (WINDOW_ROWS_MAX + 1) * (WINDOW_ROW_LEN_MAX + 1) * WINDOW_LAYOUTS)

/* Case i < WINDOW_CASES: every rows <= WINDOW_ROWS_MAX and row_len <= WINDOW_ROW_LEN_MAX in three layouts (rows
   and channels packed; padded, the pixels' windows overlapping; padded further, apart), with mixed values, then
   all at the minimum; x and w at every byte alignment. Every element read lies below 430. */
static inline window_case window_case_of(int32_t i)
{
    window_case c;
    const int32_t layout = i % WINDOW_LAYOUTS;
    c.row_len = i / WINDOW_LAYOUTS % (WINDOW_ROW_LEN_MAX + 1);
    c.rows = i / WINDOW_LAYOUTS / (WINDOW_ROW_LEN_MAX + 1) % (WINDOW_ROWS_MAX + 1);
    c.all_min = i >= WINDOW_CASES / 2;
    c.x_row_stride = c.row_len + (layout == 0 ? 0 : 2 * layout + 1);
    c.w_channel_stride = c.rows * c.row_len + layout;
    c.x_pixel_stride = layout == 1 ? 3 : c.rows * c.x_row_stride + layout;
    c.x_offset = (c.rows + c.row_len + layout) % 4;
    c.w_offset = (c.x_offset + 1 + layout) % 4;
    return c;
}

/* acc[c] += the plain sums of a window MAC helper's contract for c < 4: x[r * x_row_stride + k] (x8, or x16 when
   x8 is NULL) times w[c * w_channel_stride + r * row_len + k] over r < rows, k < row_len. */
static inline void plain_window_mac(int32_t *acc, const int8_t *x8, const int16_t *x16, const int8_t *w,
                                    int32_t x_row_stride, int32_t w_channel_stride, int32_t rows, int32_t row_len)
{
    for (int32_t c = 0; c < 4; ++c) {
        for (int32_t r = 0; r < rows; ++r) {
            for (int32_t k = 0; k < row_len; ++k) {
                const int32_t value = x8 != NULL ? x8[r * x_row_stride + k] : x16[r * x_row_stride + k];
                acc[c] += value * w[c * w_channel_stride + r * row_len + k];
            }
        }
    }
}

/* One depthwise window of a helper test (test_depthwise_mac.c and its Helium and RISC-V siblings): strides in
   elements, x and w read from the byte offsets x_offset and w_offset. */
typedef struct {
    int32_t x_row_stride, x_col_stride, w_row_stride, w_col_stride, x_offset, w_offset;
} depthwise_layout;

/* Layout `layout` of a rows x cols window whose taps hold `tile` channels: 0 packed, 1 and 2 with wider taps (an
   NHWC row of more channels) and rows apart; `salt` (a sweep's other counter, or 0) moves the alignment, so x and
   w take every byte alignment over the cases. */
static inline depthwise_layout depthwise_layout_of(int32_t tile, int32_t rows, int32_t cols, int32_t layout,
                                                   int32_t salt)
{
    depthwise_layout l;
    l.x_col_stride = tile + 5 * layout;
    l.w_col_stride = tile + 3 * layout;
    l.x_row_stride = cols * l.x_col_stride + layout * 7;
    l.w_row_stride = cols * l.w_col_stride + layout;
    l.x_offset = (rows + cols + salt + layout) % 4;
    l.w_offset = (l.x_offset + 2) % 4;
    return l;
}

/* The window sum of channel c from `bias` over a rows x cols window of layout l whose taps (r, k) inside the box
   (top, left, inside_rows x inside_cols; x its first tap) read the image and every other one `value` (the
   padding's): weights int8 at w8, or int16 at w16 where w8 is NULL (the depthwise tiles' border tests, DSP and
   RV32). */
static inline int32_t padded_window_sum(const int8_t *x, const int8_t *w8, const int16_t *w16,
                                        const depthwise_layout *l, int32_t rows, int32_t cols, int32_t top,
                                        int32_t left, int32_t inside_rows, int32_t inside_cols, int32_t value,
                                        int32_t c, int32_t bias)
{
    int32_t sum = bias;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            const int inside = r >= top && r < top + inside_rows && k >= left && k < left + inside_cols;
            const int32_t input = inside ? x[(r - top) * l->x_row_stride + (k - left) * l->x_col_stride + c] : value;
            const int32_t at = r * l->w_row_stride + k * l->w_col_stride + c;
            sum += input * (w8 != NULL ? w8[at] : w16[at]);
        }
    }
    return sum;
}

/* Whether a helper call went wrong: it returned other than 0, or one of the n accumulators differs. */
static inline int call_wrong(int32_t returned, const int32_t *acc, const int32_t *expected, int32_t n)
{
    int wrong = returned != 0;
    for (int32_t c = 0; c < n; ++c) {
        wrong |= acc[c] != expected[c];
    }
    return wrong;
}

/* The test's exit status after `cases` cases, `failures` of them wrong: 1 with the count printed, else 0. */
static inline int cases_verdict(int32_t cases, int32_t failures)
{
    if (failures != 0) {
        printf("%ld of %ld cases wrong\n", (long)failures, (long)cases);
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}

/* The pixel-pair channel tiles' tests (test_pair_tiles.c: the DSP cores', test_riscv_pair_tiles.c: RV32's): one
   or two pixels' channels written PAIR_GUARD bytes apart, each byte not written keeping PAIR_UNTOUCHED. */
/* The epilogue constants of n channels of a fused tiles test: biases of +-2^12 and (a tile's last) +-2^24, int16
   ones for the _b16 forms, drawn multipliers, shifts -1 - (salt + c) % 31 (every shift -31..-1 over the cases). */
static inline void draw_tile_constants(int32_t *bias, int16_t *bias16, int32_t *multiplier, int8_t *shift, int32_t n,
                                       int32_t salt, uint32_t *state)
{
    for (int32_t c = 0; c < n; ++c) {
        const uint32_t drawn = next_value(state);
        bias[c] = c % 4 == 3 ? (int32_t)(drawn >> 7) - (1 << 24) : (int32_t)(drawn >> 19) - (1 << 12);
        bias16[c] = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
        shift[c] = (int8_t)(-1 - (salt + c) % 31);
    }
}

/* The epilogue constants of n channels of a depthwise tiles test (test_depthwise_pair.c, test_depthwise_pixel.c,
   test_depthwise_tiles_s8x4.c): biases up to +-2^28, int16 ones for the _b16 forms, drawn multipliers, shifts
   -1 - (salt + c) % 31 (every shift -31..-1 over the cases). */
static inline void draw_depthwise_constants(int32_t *bias, int16_t *bias16, int32_t *multiplier, int8_t *shift,
                                            int32_t n, int32_t salt, uint32_t *state)
{
    for (int32_t c = 0; c < n; ++c) {
        bias[c] = (int32_t)(next_value(state) << 13) - (1 << 28);
        bias16[c] = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
        shift[c] = (int8_t)(-1 - (int32_t)((uint32_t)(salt + c) % 31u));
    }
}

#define PAIR_GUARD 3 /* output bytes after each pixel's channels that must keep their value */
#define PAIR_UNTOUCHED ((int8_t)0x5a)

#define PAIR_CHANNELS_MAX 24 /* the most output channels a case of either test draws constants for */

/* A case's per-channel constants (c < PAIR_CHANNELS_MAX): int32 and int16 biases, multipliers, shifts; and its zero
   point. */
typedef struct {
    int32_t bias[PAIR_CHANNELS_MAX], multiplier[PAIR_CHANNELS_MAX];
    int16_t bias16[PAIR_CHANNELS_MAX];
    int8_t shift[PAIR_CHANNELS_MAX];
    int32_t zero_point;
} pair_constants;

/* Draw a case's zero point (-128..127) and `channels` channels' constants (channels <= PAIR_CHANNELS_MAX) from
   `state`, `salt` (the tests' count of cases so far) stepping the shifts through their range over the cases. The
   small epilogue's domain (rounding_any 0): int32 biases in [-2^28, 2^28), int16 biases over all of int16,
   multipliers in [2^30, 2^31), shifts -31..-1. The double rounding's (rounding_any 1): shifts -31..30, multipliers
   over all of int32 with INT32_MIN at every third channel (its square saturates), and at odd channels biases
   beyond the small epilogue's domain: over all of int32 when the helper's sums wrap as int32 (wrapping_sums; the
   expected sums wrap too), else in [-2^30, 2^30) (every running sum then stays within int32, the helper's
   contract). */
static inline void draw_pair_constants(pair_constants *k, int32_t channels, int rounding_any, int wrapping_sums,
                                       int32_t salt, uint32_t *state)
{
    k->zero_point = (int32_t)(next_value(state) % 256u) - 128;
    for (int32_t c = 0; c < channels; ++c) {
        const int wide = rounding_any && c % 2;
        k->bias[c] = (int32_t)(next_value(state) << (wide ? 15 : 13)) - (wide ? 1 << 30 : 1 << 28);
        k->bias16[c] = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        k->multiplier[c] = (int32_t)((next_value(state) % 32768u) << 15) + (1 << 30);
        k->shift[c] = (int8_t)(-1 - (int32_t)((uint32_t)(salt + c) % 31u));
        if (rounding_any) {
            k->shift[c] = (int8_t)((int32_t)((uint32_t)(salt + 3 * c) % 62u) - 31);
            const uint32_t high = next_value(state);
            k->multiplier[c] = c % 3 == 2 ? INT32_MIN : (int32_t)(high << 16 | next_value(state));
            if (wide && wrapping_sums) {
                const uint32_t top = next_value(state);
                k->bias[c] = (int32_t)(top << 16 | next_value(state));
            }
        }
    }
}

/* The bundle's scalar requantization of a sum a case checks against (lp_requantize_double_small, or
   lp_requantize_double for the double rounding of any sum and shift). */
typedef int32_t (*pair_requantize)(int32_t acc, int32_t multiplier, int32_t shift);

/* A case's epilogue: its constants (their bias16 where narrow) and the requantization checked against. */
typedef struct {
    const pair_constants *k;
    int narrow;
    pair_requantize requantize;
} pair_epilogue;

/* What the kernel stores for pixel p's channel c of the window case wc over the image x: the plain window sum
   from the bias (wrapping as int32), channel c's weights from w + c * w_channel_stride (row r's from
   r * row_len), requantized, plus the zero point, saturated to int8. */
static inline int8_t pair_expected_out(const int8_t *x, const int8_t *w, int32_t w_channel_stride,
                                       const window_case *wc, int32_t p, int32_t c, const pair_epilogue *e)
{
    uint32_t sum = (uint32_t)(e->narrow ? e->k->bias16[c] : e->k->bias[c]);
    for (int32_t r = 0; r < wc->rows; ++r) {
        for (int32_t k = 0; k < wc->row_len; ++k) {
            sum += (uint32_t)(x[p * wc->x_pixel_stride + r * wc->x_row_stride + k]
                              * w[c * w_channel_stride + r * wc->row_len + k]);
        }
    }
    const int32_t requantized = e->requantize((int32_t)sum, e->k->multiplier[c], e->k->shift[c]);
    const int32_t value = (int32_t)((uint32_t)requantized + (uint32_t)e->k->zero_point);
    return (int8_t)(value < -128 ? -128 : value > 127 ? 127 : value);
}

/* A pixel tiles call's buffers as guarded copies (guarded_buffers.h): exactly what the call reads and writes. */
typedef struct {
    int8_t *out;
    const int8_t *x;
    const void *w;
    int32_t *q;
    const int32_t *bias, *multiplier;
    const int16_t *bias16;
    const int8_t *shift;
    int32_t out_bytes, q_words;
} pair_guarded;

/* Guarded copies of a call's buffers over `pixels` pixels of `channels` channels of the window case wc: the outputs
   out (out_pixel_stride apart), the pixels' windows from x, `q_words` scratch words q (0: none), the `w_bytes`
   bytes of weights at w (the channels' rows, or RV32's packed words), and of k's int16 biases where narrow, else its int32 ones, its multipliers
   and shifts; slots 0..6. */
static inline pair_guarded pair_guard(int8_t *out, int32_t out_pixel_stride, int32_t pixels, int32_t channels,
                                      const int8_t *x, const window_case *wc, int32_t *q, int32_t q_words,
                                      const void *w, int32_t w_bytes, const pair_constants *k, int narrow)
{
    pair_guarded g;
    const int32_t window = guarded_span(wc->rows, wc->row_len, wc->x_row_stride, 1);
    g.out_bytes = channels == 0 ? 0 : (pixels - 1) * out_pixel_stride + channels;
    g.q_words = q_words;
    g.out = guarded_copy(0, out, g.out_bytes);
    g.x = guarded_copy(1, x, window == 0 ? 0 : (pixels - 1) * wc->x_pixel_stride + window);
    g.q = guarded_copy(2, q, 4 * q_words);
    g.w = guarded_copy(3, w, w_bytes);
    g.bias = narrow ? NULL : guarded_copy(4, k->bias, 4 * channels);
    g.bias16 = narrow ? guarded_copy(4, k->bias16, 2 * channels) : NULL;
    g.multiplier = guarded_copy(5, k->multiplier, 4 * channels);
    g.shift = guarded_copy(6, k->shift, channels);
    return g;
}

/* The guarded outputs and scratch copied back to out and q (NULL: no scratch). */
static inline void pair_unguard(const pair_guarded *g, int8_t *out, int32_t *q)
{
    guarded_back(0, out, g->out_bytes);
    if (q != NULL) {
        guarded_back(2, q, 4 * g->q_words);
    }
}

/* Whether the outputs out (bytes < 2 * (max_channels + PAIR_GUARD)) of a call on `pixels` pixels of `channels`
   channels, out_pixel_stride = channels + PAIR_GUARD apart, differ from pair_expected_out's, or a byte beyond
   them from PAIR_UNTOUCHED. */
static inline int pair_outputs_wrong(const int8_t *out, int32_t max_channels, int32_t pixels, int32_t channels,
                                     const int8_t *x, const int8_t *w, int32_t w_channel_stride,
                                     const window_case *wc, const pair_epilogue *e)
{
    const int32_t out_pixel_stride = channels + PAIR_GUARD;
    int wrong = 0;
    for (int32_t j = 0; j < 2 * (max_channels + PAIR_GUARD); ++j) {
        const int32_t p = j / out_pixel_stride, c = j % out_pixel_stride;
        const int8_t want = p < pixels && c < channels ? pair_expected_out(x, w, w_channel_stride, wc, p, c, e)
                                                       : PAIR_UNTOUCHED;
        wrong |= out[j] != want;
    }
    return wrong;
}

/* One case of the per-tensor fully connected rows' tests (test_fc_rows.c, test_riscv_fc_rows.c): tiles tiles of
   a helper's tile of channels over row_len inputs x, the layer's multiplier, shift and zero point. */
typedef struct {
    const int8_t *x;
    int32_t row_len, tiles, channels, multiplier, shift, zero_point, all_min;
} fc_rows_case;

#define FC_ROWS_LEN_MAX 70 /* whole Helium vectors of 16, its eight lanes' step, every rest; RV32's odd groups */
#define FC_ROWS_TILES_MAX 4

/* A test's helper: the multipliers and shifts its rounding takes, whether its int32 biases may take any int32 value
   (full_range_biases: the sums acc + bias then wrap as int32), its weights for case k (drawn by fill_s8 from state),
   its call (int32 biases where wide, else int16) and the plain loops' output of channel c with bias `bias`,
   requantized by the scalar helpers. */
typedef struct {
    int32_t tile;
    const int32_t *shifts; /* the shifts the helper's rounding takes, shift_count of them */
    int32_t shift_count;
    const int32_t *multipliers; /* the multipliers it takes, multiplier_count of them */
    int32_t multiplier_count;
    int full_range_biases;
    void (*weights)(const fc_rows_case *k, uint32_t *state);
    int32_t (*call)(int8_t *out, const fc_rows_case *k, const int32_t *bias, const int16_t *bias16, int wide);
    int8_t (*expected)(const fc_rows_case *k, int32_t c, int32_t bias);
} fc_rows_helper;

/* The exit status of `helper`'s test over every row length 0..FC_ROWS_LEN_MAX and 0..FC_ROWS_TILES_MAX tiles: inputs
   at every byte offset, the values drawn or all at the minimum (every 7th case), int32 and int16 biases (their
   ends too; with full_range_biases the int32 ones INT32_MAX, INT32_MIN and drawn from all of int32), each of
   helper's multipliers and shifts, zero points at either end; the bytes after the outputs must keep their value.
   Prints the first wrong output, or "ok <cases> cases", counting from earlier_cases (the cases the test ran before
   this one, all passed). */
static inline int fc_rows_test(const fc_rows_helper *helper, int32_t earlier_cases)
{
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    static int8_t x_store[FC_ROWS_LEN_MAX + 4], out[8 * FC_ROWS_TILES_MAX + 3];
    int32_t bias[8 * FC_ROWS_TILES_MAX];
    int16_t bias16[8 * FC_ROWS_TILES_MAX];
    uint32_t state = 12345u;
    int32_t cases = earlier_cases;
    for (int32_t row_len = 0; row_len <= FC_ROWS_LEN_MAX; ++row_len) {
        for (int32_t tiles = 0; tiles <= FC_ROWS_TILES_MAX; ++tiles) {
            const int32_t i = row_len * (FC_ROWS_TILES_MAX + 1) + tiles;
            const fc_rows_case k = {x_store + i % 4, row_len, tiles, helper->tile * tiles,
                                    helper->multipliers[i % helper->multiplier_count],
                                    helper->shifts[i % helper->shift_count], zero_points[i % 4], i % 7 == 0};
            fill_s8(x_store + i % 4, row_len, &state, k.all_min);
            helper->weights(&k, &state);
            fill_s16(bias16, k.channels, &state, 0);
            for (int32_t c = 0; c < k.channels; ++c) {
                bias[c] = (int32_t)bias16[c] * (c % 2 ? 1001 : -3);
                if (helper->full_range_biases) {
                    const uint32_t high = next_value(&state), low = next_value(&state);
                    bias[c] = c % 5 == 0 ? INT32_MAX : (c % 5 == 1 ? INT32_MIN : (int32_t)(high << 16 ^ low));
                }
            }
            for (int wide = 0; wide < 2; ++wide, ++cases) {
                for (int32_t c = 0; c < (int32_t)sizeof out; ++c) {
                    out[c] = (int8_t)0x5a;
                }
                const int32_t returned = helper->call(out, &k, bias, bias16, wide);
                for (int32_t c = 0; c < (int32_t)sizeof out; ++c) {
                    const int8_t want = c < k.channels ? helper->expected(&k, c, wide ? bias[c] : bias16[c])
                                                       : (int8_t)0x5a;
                    if (returned != 0 || out[c] != want) {
                        printf("wrong%s: row_len %ld tiles %ld channel %ld: %d, expected %d (returned %ld)\n",
                               wide ? "" : " (int16 biases)", (long)row_len, (long)tiles, (long)c, out[c], want,
                               (long)returned);
                        return 1;
                    }
                }
            }
        }
    }
    return cases_verdict(cases, 0);
}

/* The float helpers' tests (test_fmac_f32.c, test_fpu_fmac_f32.c). */

/* A float of the sequence: 0 now and then, else a signed value of magnitude 2^-20..2^20. */
static inline float next_float(uint32_t *state)
{
    const uint32_t drawn = next_value(state);
    if (drawn % 17u == 0u) {
        return 0.0f;
    }
    const float unit = (float)(drawn % 4096u) / 4096.0f + 0.5f;
    const int exponent = (int)((drawn >> 12) % 41u) - 20;
    return (drawn & 0x8000u) ? -ldexpf(unit, exponent) : ldexpf(unit, exponent);
}

/* The contract's sum for channel c of the pixel at x, from `start`. */
static inline float expected_float_sum(const float *x, const float *w, float start, int32_t x_row_stride,
                                       int32_t w_row_stride, int32_t w_tap_stride, int32_t rows, int32_t row_len,
                                       int32_t c)
{
    float sum = start;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < row_len; ++k) {
            sum = sum + x[r * x_row_stride + k] * w[r * w_row_stride + k * w_tap_stride + c];
        }
    }
    return sum;
}

/* The epilogue's expected value: act((acc + bias) [+ res]) as the scalar kernel writes it. */
static inline float expected_act(float acc, float bias, const float *res, float low, float high, int32_t clamp)
{
    float v = acc + bias;
    if (res != 0) {
        v = v + *res;
    }
    if (clamp & 1) {
        v = v > low ? v : low;
    }
    if (clamp & 2) {
        v = v < high ? v : high;
    }
    return v;
}

/* The float MAC tests' window of `channels` output channels, `rows` rows of `row_len` taps: weight tap strides at and
   past the channel count, padded input rows, the second pixel's input apart, the first input's offset. */
typedef struct {
    int32_t w_tap_stride, w_row_stride, x_row_stride, x_pixel_stride, x_first;
} float_window;

static inline float_window float_window_of(int32_t channels, int32_t rows, int32_t row_len)
{
    float_window window;
    window.w_tap_stride = channels + (row_len % 3 == 1 ? 5 : 0);
    window.w_row_stride = row_len * window.w_tap_stride + (rows % 2) * 3;
    window.x_row_stride = row_len + (row_len % 2) * 4;
    window.x_pixel_stride = 7 + channels % 3;
    window.x_first = (channels + rows) % 5;
    return window;
}

#define FLOAT_EPILOGUE_CHANNELS_MAX 24
#define FLOAT_EPILOGUE_GUARD 3 /* floats after the outputs that must keep their value */

/* A float tile epilogue's signature: <prefix>_bias_act_f32's, and <prefix>_bias_res_act_f32's (with a residual). */
typedef int32_t (*float_bias_act)(float *out, const float *acc, const float *bias, int32_t channels, float low,
                                  float high, int32_t clamp);
typedef int32_t (*float_bias_res_act)(float *out, const float *acc, const float *bias, const float *res,
                                      int32_t channels, float low, float high, int32_t clamp);

/* A float library's bias_act and bias_res_act over channel counts `step`, 2 * `step`, .. up to
   FLOAT_EPILOGUE_CHANNELS_MAX and every clamp, on values with a NaN, -0 and the bounds themselves, against the
   scalar kernel's expressions (expected_act), bit for bit: the number of wrong cases (each printed, the first 8). */
static inline int32_t float_epilogue_failures(uint32_t *state, int32_t *cases, int32_t step, float_bias_act bias_act,
                                              float_bias_res_act bias_res_act)
{
    enum { MAX = FLOAT_EPILOGUE_CHANNELS_MAX, GUARDED = FLOAT_EPILOGUE_CHANNELS_MAX + FLOAT_EPILOGUE_GUARD };
    int32_t failures = 0;
    for (int32_t channels = step; channels <= MAX; channels += step) {
        for (int32_t clamp = 0; clamp < 4; ++clamp) {
            float acc[MAX], bias[MAX], res[MAX], out[GUARDED], out_res[GUARDED];
            for (int32_t c = 0; c < MAX; ++c) {
                acc[c] = next_float(state) * 4.0f;
                bias[c] = next_float(state);
                res[c] = next_float(state);
            }
            acc[channels / 2] = NAN;
            acc[channels - 1] = -0.0f;
            bias[channels - 1] = 0.0f;
            res[channels - 1] = -0.0f;
            if (channels > 2) {
                acc[1] = 6.0f;
                bias[1] = 0.0f;
            }
            for (int32_t c = 0; c < GUARDED; ++c) {
                out[c] = out_res[c] = 1.5f;
            }
            const int32_t returned = bias_act(out, acc, bias, channels, 0.0f, 6.0f, clamp)
                | bias_res_act(out_res, acc, bias, res, channels, 0.0f, 6.0f, clamp);
            int wrong_out = returned != 0;
            for (int32_t c = 0; c < GUARDED; ++c) {
                const float want = c < channels ? expected_act(acc[c], bias[c], 0, 0.0f, 6.0f, clamp) : 1.5f;
                const float want_res = c < channels ? expected_act(acc[c], bias[c], &res[c], 0.0f, 6.0f, clamp)
                                                    : 1.5f;
                wrong_out |= memcmp(&out[c], &want, sizeof want) != 0 || memcmp(&out_res[c], &want_res,
                                                                                sizeof want_res) != 0;
            }
            if (wrong_out && failures++ < 8) {
                printf("FAIL epilogue: %ld channels, clamp %ld\n", (long)channels, (long)clamp);
            }
            ++*cases;
        }
    }
    return failures;
}

/* The ascending copies' cases (test_copy_ascending.c, test_state_shift.c: helpers of one contract, dst[i] = src[i]
   for count elements of element_bytes bytes as the element loop copies them when dst <= src or the runs are apart):
   for element sizes 1, 2 and 4 bytes, every count up to 40 elements, every distance from dst below src
   (overlapping, as the SVDF state shifts in place) to separate runs, `copy` leaves a 512-byte buffer as that loop
   does, handed the bytes from dst's run to src's end against no-access memory (guarded_buffers.h: dst's alignment
   is then that span's, every one over the cases); the failures, each printed, and the count of cases in *cases. */
#define ASCENDING_COPY_BUFFER_BYTES 512 /* past the farthest run: 3 + (160 + 3) + 160 bytes */
typedef int32_t (*ascending_copy_fn)(void *dst, const void *src, int32_t count, int32_t element_bytes);

static inline int ascending_copy_case(ascending_copy_fn copy, int32_t element_bytes, int32_t count,
                                      int32_t dst_offset, int32_t src_offset)
{
    uint8_t expected[ASCENDING_COPY_BUFFER_BYTES], actual[ASCENDING_COPY_BUFFER_BYTES];
    int32_t i;
    for (i = 0; i < ASCENDING_COPY_BUFFER_BYTES; ++i) {
        expected[i] = (uint8_t)(i * 37 + 11);
    }
    memcpy(actual, expected, sizeof actual);
    for (i = 0; i < count * element_bytes; ++i) { /* element by element ascending is byte by byte ascending */
        expected[dst_offset + i] = expected[src_offset + i];
    }
    const int32_t span = src_offset + count * element_bytes - dst_offset; /* dst's run to src's end, guarded */
    uint8_t *const guarded = guarded_copy(0, actual + dst_offset, span);
    if (copy(guarded, guarded + (src_offset - dst_offset), count, element_bytes) != 0) {
        return 1;
    }
    guarded_back(0, actual + dst_offset, span);
    return memcmp(actual, expected, sizeof actual) != 0;
}

static inline int32_t ascending_copy_cases(ascending_copy_fn copy, int32_t *cases)
{
    static const int32_t sizes[] = {1, 2, 4};
    int32_t failures = 0;
    size_t s;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const int32_t element_bytes = sizes[s];
        int32_t count, distance;
        for (count = 0; count <= 40; ++count) {
            const int32_t bytes = count * element_bytes;
            for (distance = 0; distance <= bytes + 3; ++distance) { /* dst below src, then separate runs */
                int32_t dst_offset;
                for (dst_offset = 0; dst_offset < 4; ++dst_offset) { /* every word alignment of dst */
                    ++*cases;
                    if (ascending_copy_case(copy, element_bytes, count, dst_offset, dst_offset + distance)) {
                        failures += 1;
                        printf("wrong: %ld-byte elements, count %ld, dst %ld, src %ld\n", (long)element_bytes,
                               (long)count, (long)dst_offset, (long)(dst_offset + distance));
                    }
                }
            }
        }
    }
    return failures;
}

#endif
