/* Unit test of the fused depthwise channel tiles (backends/cortex_m/helpers/templates/helium_depthwise16.h.in after
 * helium_lanes.h.in, the Helium requantization epilogue and the bundle's scalar requantization, with the prefix
 * lp): lp_depthwise_tiles_s8 and lp_depthwise_tiles_s8_b16 (an interior pixel), lp_depthwise_border_s8 and
 * lp_depthwise_border_s8_b16 (a border pixel: a window of up to 3 x 3 taps of which a clipped box, at every place
 * and of every size, the empty one too, lies in the image and the other taps read the padding value, -128, 0,
 * 127, 1 or -3), and where the window is 3 x 3 the out-of-line lp_depthwise_border3x3_s8 and _b16 and their
 * twins running the interior's copy on the copied window, lp_depthwise_border3x3_shared_s8 and _b16, where the window
 * is 5 x 5 the out-of-line lp_depthwise_border5x5_s8 and _b16 (its window past the others' on the stack), and (in every
 * case, as an interior pixel of the same window) lp_depthwise_tiles3x3_s8 and _b16, where the window is 5 x 5
 * lp_depthwise_tiles5x5_s8 and _b16 (likewise; the one window past 4 x 4), where the window is one row
 * (of 0 to 4 taps) the out-of-line lp_depthwise_tiles1xn_s8 and _b16 (likewise as an interior pixel), against the
 * plain sums of their contract requantized by the scalar helpers (lp_requantize_double, lp_saturate_int8), for
 * every channel count 1..40 (whole tiles of 16 and every predicated tail of both halves), windows of 0 to 4 rows
 * and columns (the three-tap steps and the one or two taps left), column strides of exactly the channels and
 * wider, row strides at and above a row's taps, inputs and weights at every byte alignment, values over the whole
 * int8 range and all at the minimum, per-channel biases (int32 and int16), multipliers and shifts (left and
 * right), zero points at either end; the bytes after the outputs must keep their value. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (biases as the accumulators' start, VLD2 and gathers, VMOVLB/VMOVLT, VMOVNB/VMOVNT, VSTRB.16 predicated, the
 * border's window copied on the stack). Prints "ok <cases> cases" and exits 0, or names the first failures and
 * exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "depthwise_tiles.h"

#define BUFFER 2048    /* elements: past the farthest one any case reads (under 1,000) */
#define SIDE 4         /* the most rows and columns of a window, but for the 5 x 5 one */
#define CHANNELS_MAX 40
#define GUARD 3        /* bytes after the outputs that must keep their value */

/* The interior's out-of-line copies (int32 biases, int16 ones): out, x, w, bias, multiplier, shift, zero_point,
   x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, channels. */
typedef int32_t (*tiles_s8)(int8_t *, const int8_t *, const int8_t *, const int32_t *, const int32_t *,
                            const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
typedef int32_t (*tiles_s8_b16)(int8_t *, const int8_t *, const int8_t *, const int16_t *, const int32_t *,
                                const int8_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                                int32_t);

/* Where the image lies in a border pixel's window: the taps top <= r < top + rows, left <= k < left + cols (x
   their first); every other tap reads value. An interior pixel's: the whole window. */
typedef struct {
    int32_t top, left, rows, cols, value;
} inside_box;

/* What the scalar loops the helper replaces store for channel c of a window of rows x cols taps (the taps
   outside `inside` reading its value). */
static int8_t expected_out(const int8_t *x, const int8_t *w, const depthwise_layout *l, int32_t rows, int32_t cols,
                           int32_t c, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point,
                           const inside_box *inside)
{
    int32_t sum = bias;
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t k = 0; k < cols; ++k) {
            const int in = r >= inside->top && r < inside->top + inside->rows && k >= inside->left
                           && k < inside->left + inside->cols;
            const int32_t input = in ? x[(r - inside->top) * l->x_row_stride + (k - inside->left) * l->x_col_stride + c]
                                     : inside->value;
            sum += input * w[r * l->w_row_stride + k * l->w_col_stride + c];
        }
    }
    const int32_t requantized = lp_requantize_double(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* One case's operands (their guarded copies), layout, window and channels, for the functions calling the helpers. */
typedef struct {
    const int8_t *x, *w;
    const int32_t *bias, *multiplier;
    const int16_t *bias16;
    const int8_t *shift;
    depthwise_layout l;
    int32_t zero_point, rows, cols, channels;
    inside_box inside;
} call_case;

/* The calls of each kind of case in a function of its own, never inlined into main: with every inlined copy of
   the helpers in main's one body, gcc's register dataflow (df live regs) took most of this test's builds (the
   cortex-m55 build at -Os: 30 CPU-s). Each returns the helpers' returned values or'ed; each output is copied back
   from slot 0 but the last (out16, or out3_16: the caller's). */
#define CALLS static __attribute__((noinline))

/* A border pixel of a 3 x 3 window: the out-of-line border copies and their twins on the interior's copy. */
CALLS int32_t border3x3_calls(const call_case *k, int8_t *shared, int8_t *shared16, int8_t *out, int8_t *out16)
{
    const depthwise_layout *l = &k->l;
    const inside_box *in = &k->inside;
    int32_t returned = lp_depthwise_border3x3_shared_s8(guarded_copy(0, shared, k->channels), k->x, k->w, k->bias,
                                                        k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                        l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows,
                                                        k->cols, in->top, in->left, in->rows, in->cols, in->value,
                                                        k->channels);
    guarded_back(0, shared, k->channels);
    returned |= lp_depthwise_border3x3_shared_s8_b16(guarded_copy(0, shared16, k->channels), k->x, k->w, k->bias16,
                                                     k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                     l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows,
                                                     k->cols, in->top, in->left, in->rows, in->cols, in->value,
                                                     k->channels);
    guarded_back(0, shared16, k->channels);
    returned |= lp_depthwise_border3x3_s8(guarded_copy(0, out, k->channels), k->x, k->w, k->bias, k->multiplier,
                                         k->shift, k->zero_point, l->x_row_stride, l->x_col_stride, l->w_row_stride,
                                         l->w_col_stride, k->rows, k->cols, in->top, in->left, in->rows, in->cols,
                                         in->value, k->channels);
    guarded_back(0, out, k->channels);
    return returned | lp_depthwise_border3x3_s8_b16(guarded_copy(0, out16, k->channels), k->x, k->w, k->bias16,
                                                    k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                    l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows,
                                                    k->cols, in->top, in->left, in->rows, in->cols, in->value,
                                                    k->channels);
}

/* A border pixel of a 5 x 5 window: the out-of-line border copies. */
CALLS int32_t border5x5_calls(const call_case *k, int8_t *out, int8_t *out16)
{
    const depthwise_layout *l = &k->l;
    const inside_box *in = &k->inside;
    int32_t returned = lp_depthwise_border5x5_s8(guarded_copy(0, out, k->channels), k->x, k->w, k->bias,
                                                 k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                 l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows, k->cols,
                                                 in->top, in->left, in->rows, in->cols, in->value, k->channels);
    guarded_back(0, out, k->channels);
    return returned | lp_depthwise_border5x5_s8_b16(guarded_copy(0, out16, k->channels), k->x, k->w, k->bias16,
                                                    k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                    l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows,
                                                    k->cols, in->top, in->left, in->rows, in->cols, in->value,
                                                    k->channels);
}

/* A border pixel of any other window. */
CALLS int32_t border_calls(const call_case *k, int8_t *out, int8_t *out16)
{
    const depthwise_layout *l = &k->l;
    const inside_box *in = &k->inside;
    int32_t returned = lp_depthwise_border_s8(guarded_copy(0, out, k->channels), k->x, k->w, k->bias, k->multiplier,
                                              k->shift, k->zero_point, l->x_row_stride, l->x_col_stride,
                                              l->w_row_stride, l->w_col_stride, k->rows, k->cols, in->top, in->left,
                                              in->rows, in->cols, in->value, k->channels);
    guarded_back(0, out, k->channels);
    return returned | lp_depthwise_border_s8_b16(guarded_copy(0, out16, k->channels), k->x, k->w, k->bias16,
                                                 k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                 l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows, k->cols,
                                                 in->top, in->left, in->rows, in->cols, in->value, k->channels);
}

/* An interior pixel: the inlined tiles. */
CALLS int32_t interior_calls(const call_case *k, int8_t *out, int8_t *out16)
{
    const depthwise_layout *l = &k->l;
    int32_t returned = lp_depthwise_tiles_s8(guarded_copy(0, out, k->channels), k->x, k->w, k->bias, k->multiplier,
                                             k->shift, k->zero_point, l->x_row_stride, l->x_col_stride,
                                             l->w_row_stride, l->w_col_stride, k->rows, k->cols, k->channels);
    guarded_back(0, out, k->channels);
    return returned | lp_depthwise_tiles_s8_b16(guarded_copy(0, out16, k->channels), k->x, k->w, k->bias16,
                                                k->multiplier, k->shift, k->zero_point, l->x_row_stride,
                                                l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows, k->cols,
                                                k->channels);
}

/* The interior's out-of-line copy of a 3 x 3, 5 x 5 or one-row window, on `window` (the whole window's guarded
   copy), into out3 and out3_16 (both copied back). */
CALLS int32_t outlined_calls(const call_case *k, const int8_t *window, int8_t *out3, int8_t *out3_16)
{
    const depthwise_layout *l = &k->l;
    const tiles_s8 copy = k->rows == 1 ? lp_depthwise_tiles1xn_s8
                          : k->rows == 5 ? lp_depthwise_tiles5x5_s8 : lp_depthwise_tiles3x3_s8;
    const tiles_s8_b16 copy16 = k->rows == 1 ? lp_depthwise_tiles1xn_s8_b16
                                : k->rows == 5 ? lp_depthwise_tiles5x5_s8_b16 : lp_depthwise_tiles3x3_s8_b16;
    int32_t returned = copy(guarded_copy(0, out3, k->channels), window, k->w, k->bias, k->multiplier, k->shift,
                            k->zero_point, l->x_row_stride, l->x_col_stride, l->w_row_stride, l->w_col_stride,
                            k->rows, k->cols, k->channels);
    guarded_back(0, out3, k->channels);
    returned |= copy16(guarded_copy(0, out3_16, k->channels), window, k->w, k->bias16, k->multiplier, k->shift,
                       k->zero_point, l->x_row_stride, l->x_col_stride, l->w_row_stride, l->w_col_stride, k->rows,
                       k->cols, k->channels);
    guarded_back(0, out3_16, k->channels);
    return returned;
}

int main(void)
{
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, 1277447166, 2004318071};
    static const int32_t zero_points[] = {-128, 0, 127, 5};
    static int8_t x[BUFFER], w[BUFFER];
    uint32_t state = 11;
    int32_t cases = 0, failures = 0;
    for (int32_t channels = 1; channels <= CHANNELS_MAX; ++channels) {
        for (int32_t rows = 0; rows <= SIDE + 1; ++rows) {
            for (int32_t cols = 0; cols <= SIDE + 1; ++cols) {
                if ((rows > SIDE || cols > SIDE) && (rows != 5 || cols != 5)) {
                    continue;  /* of the windows past SIDE, only the 5 x 5 one (its out-of-line copy) */
                }
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
                    int8_t out3[CHANNELS_MAX + GUARD], out3_16[CHANNELS_MAX + GUARD];
                    int8_t shared[CHANNELS_MAX + GUARD], shared16[CHANNELS_MAX + GUARD];
                    for (int32_t c = 0; c < CHANNELS_MAX + GUARD; ++c) {
                        out[c] = out16[c] = out3[c] = out3_16[c] = shared[c] = shared16[c] = (int8_t)0x5a;
                    }
                    static const int32_t values[] = {-128, 0, 127, 1, -3};
                    /* a border pixel where its window fits the helper's (every other case, at every place and
                       size of the part inside the image), else an interior one */
                    const int border = cases % 2 && ((rows <= 3 && cols <= 3) || (rows == 5 && cols == 5));
                    inside_box inside = {0, 0, rows, cols, values[cases % 5]};
                    if (border) {
                        inside.top = (cases / 2) % (rows + 1);
                        inside.left = (cases / 3) % (cols + 1);
                        inside.rows = rows - inside.top - (cases / 5) % (rows - inside.top + 1);
                        inside.cols = cols - inside.left - (cases / 7) % (cols - inside.left + 1);
                    }
                    const int three = border && rows == 3 && cols == 3 && cases % 4 == 1;
                    const int five = border && rows == 5;
                    /* every buffer exactly what the call reads and writes, against no-access memory; each
                       output in turn */
                    const int8_t *const g_x = guarded_copy(1, xo, guarded_box(inside.rows, inside.cols,
                                                                              l.x_row_stride, l.x_col_stride,
                                                                              channels, 1));
                    const int8_t *const g_w = guarded_copy(2, wo, guarded_box(rows, cols, l.w_row_stride,
                                                                              l.w_col_stride, channels, 1));
                    const int32_t *const g_bias = guarded_copy(3, bias, 4 * channels);
                    const int16_t *const g_bias16 = guarded_copy(4, bias16, 2 * channels);
                    const int32_t *const g_multiplier = guarded_copy(5, multiplier, 4 * channels);
                    const int8_t *const g_shift = guarded_copy(6, shift, channels);
                    const call_case k = {g_x, g_w, g_bias, g_multiplier, g_bias16, g_shift, l, zero_point, rows, cols,
                                         channels, inside};
                    int32_t returned = three ? border3x3_calls(&k, shared, shared16, out, out16)
                                       : five ? border5x5_calls(&k, out, out16)
                                       : border ? border_calls(&k, out, out16) : interior_calls(&k, out, out16);
                    guarded_back(0, out16, channels);
                    /* a 3 x 3 or 5 x 5 window or one row: the interior's out-of-line copy too, into out3 and
                       out3_16 */
                    const int outlined = (rows == 3 && cols == 3) || (rows == 5 && cols == 5) || rows == 1;
                    const inside_box whole = {0, 0, rows, cols, 0};
                    if (outlined) {
                        returned |= outlined_calls(&k, guarded_copy(1, xo, guarded_box(rows, cols, l.x_row_stride,
                                                                                       l.x_col_stride, channels, 1)),
                                                   out3, out3_16);
                    }
                    int wrong = returned != 0;
                    for (int32_t c = 0; c < channels + GUARD; ++c) {
                        const int8_t want = c < channels ? expected_out(xo, wo, &l, rows, cols, c, bias[c],
                                                                        multiplier[c], shift[c], zero_point,
                                                                        &inside)
                                                         : (int8_t)0x5a;
                        const int8_t want3 = c < channels ? expected_out(xo, wo, &l, rows, cols, c, bias[c],
                                                                         multiplier[c], shift[c], zero_point,
                                                                         &whole)
                                                          : (int8_t)0x5a;
                        wrong |= out[c] != want || out16[c] != want
                                 || (outlined && (out3[c] != want3 || out3_16[c] != want3))
                                 || (three && (shared[c] != want || shared16[c] != want));
                    }
                    cases += 1;
                    if (wrong && failures++ < 8) {
                        printf("FAIL: channels %ld, rows %ld, cols %ld, layout %ld, border %d (inside %ld %ld %ld %ld)\n",
                               (long)channels, (long)rows, (long)cols, (long)layout, border, (long)inside.top,
                               (long)inside.left, (long)inside.rows, (long)inside.cols);
                    }
                }
            }
        }
    }
    return cases_verdict(cases, failures);
}
