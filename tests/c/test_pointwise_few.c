/* Unit test of the DSP cores' 1x1 convolution of few input channels (backends/cortex_m/helpers/templates/
 * pointwise_few.h.in, with the prefix lp): lp_pointwise_few_s8 against the plain sums of each pixel's inputs from the
 * bias and the bundle's scalar requantization (lp_requantize_double_small, lp_saturate_int8), for 1..4 input
 * channels, 1..9 pixels, 1..9 output channels, each channel's weights in_c bytes or padded (drawn bytes) to 4 or 5, int32 or
 * int16 biases, inputs and weights at every byte alignment, values over the whole int8 range or all at the minimum,
 * biases up to +-2^20, every shift -31..-1, drawn multipliers and zero points; every buffer handed over exactly
 * its contract's bytes against no-access memory (guarded_buffers.h: nothing read or written past any of them).
 * Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU
 * (the word loads and SMLADs). Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "guarded_buffers.h"
#include "pointwise_few.h"

#define INPUTS 48   /* input elements: 9 pixels of 4 channels plus an offset */
#define WEIGHTS 56  /* weight elements: 9 channels of 5 plus an offset */
#define OUTPUTS 96  /* output elements: 81 at most, then the guard */

static int32_t checks = 0, failures = 0;

/* The number of wrong outputs (and overwritten guard bytes) of one call. */
static int32_t one_case(int32_t pixels, int32_t in_c, int32_t channels, int32_t w_stride, int32_t bias_bytes,
                        int32_t offset, int all_min, uint32_t *state)
{
    static int8_t x_store[INPUTS], w_store[WEIGHTS], out[OUTPUTS];
    static int32_t bias32[9], multiplier[9];
    static int16_t bias16[9];
    static int8_t shift[9];
    const int8_t *x = x_store + offset;
    int8_t *w = w_store + (offset * 3) % 4;
    int32_t wrong = 0;
    fill_s8(x_store, INPUTS, state, all_min);
    fill_s8(w_store, WEIGHTS, state, all_min);
    for (int32_t c = 0; c < channels; ++c) {
        bias32[c] = (int32_t)(next_value(state) % 2097153u) - 1048576;
        bias16[c] = (int16_t)((int32_t)(next_value(state) % 65536u) - 32768);
        multiplier[c] = (int32_t)(1073741824u + next_value(state) % 1073741823u);
        shift[c] = (int8_t)(-1 - (int32_t)(next_value(state) % 31u));
    }
    const int32_t zero_point = (int32_t)(next_value(state) % 256u) - 128;
    for (int32_t k = 0; k < OUTPUTS; ++k) {
        out[k] = 0x5A;
    }
    /* every buffer exactly what the contract lets the helper touch, against no-access memory */
    int8_t *guarded_out = guarded_copy(0, out, pixels * channels);
    lp_pointwise_few_s8(guarded_out, guarded_copy(1, x, pixels * in_c),
                        guarded_copy(2, w, (channels - 1) * w_stride + in_c),
                        guarded_copy(3, bias_bytes == 4 ? (const void *)bias32 : (const void *)bias16,
                                     channels * bias_bytes),
                        bias_bytes, guarded_copy(4, multiplier, channels * 4), guarded_copy(5, shift, channels),
                        zero_point, pixels, in_c, channels, w_stride);
    guarded_back(0, out, pixels * channels);
    for (int32_t p = 0; p < pixels; ++p) {
        for (int32_t c = 0; c < channels; ++c) {
            int32_t sum = bias_bytes == 4 ? bias32[c] : bias16[c];
            for (int32_t i = 0; i < in_c; ++i) {
                sum += x[p * in_c + i] * w[c * w_stride + i];
            }
            const int32_t requantized = lp_requantize_double_small(sum, multiplier[c], shift[c]);
            const int8_t want = (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
            ++checks;
            if (out[p * channels + c] != want) {
                if (wrong++ == 0 && failures == 0) {
                    printf("FAIL pixels %d in_c %d channels %d w_stride %d bias %d offset %d: out[%d][%d] %d, want %d\n",
                           (int)pixels, (int)in_c, (int)channels, (int)w_stride, (int)bias_bytes, (int)offset,
                           (int)p, (int)c, (int)out[p * channels + c], (int)want);
                }
            }
        }
    }
    for (int32_t k = pixels * channels; k < OUTPUTS; ++k) {
        ++checks;
        wrong += out[k] != 0x5A;
    }
    return wrong;
}

int main(void)
{
    uint32_t state = 2026u;
    int32_t variant = 0;
    for (int32_t in_c = 1; in_c <= 4; ++in_c) {
        for (int32_t pixels = 1; pixels <= 9; ++pixels) {
            for (int32_t channels = 1; channels <= 9; ++channels) {
                for (int32_t w_stride = in_c; w_stride <= 5; w_stride += w_stride < 4 ? 4 - w_stride : 1) {
                    ++variant;
                    failures += one_case(pixels, in_c, channels, w_stride, variant % 2 ? 4 : 2, variant % 4,
                                         variant % 7 == 0, &state) != 0;
                }
            }
        }
    }
    if (failures) {
        printf("%d of the cases failed (%d checks)\n", (int)failures, (int)checks);
        return 1;
    }
    printf("ok %d\n", (int)checks);
    return 0;
}
