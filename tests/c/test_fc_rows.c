/* Unit test of the per-tensor fully connected rows (backends/cortex_m/helpers/templates/helium_fc_rows.h.in, after
 * helium_lanes.h.in, the Helium dual MAC and requantization epilogue and the bundle's scalar requantization, with
 * the prefix lp): lp_fc_rows_s8 and lp_fc_rows_s8_b16 against the plain sums of their contract requantized by the
 * scalar helpers (lp_requantize_double, lp_saturate_int8), over the cases of cortex_m_test_values.h's
 * fc_rows_test (row lengths 0..70, 0..4 tiles, every byte offset of the inputs and, here, of the weights, values
 * drawn and at the minimum, int32 and int16 biases) over the contract's ends: int32 biases from all of int32 (the
 * sums acc + bias wrap), shifts -31..31 (left shifts up to 31: acc * 2^shift wraps), multipliers INT32_MIN, 1,
 * negative and large ones (INT32_MIN times a sum shifted to INT32_MIN: VQRDMULH's saturation). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VMLADAVA, VQRDMULH). Prints "ok <cases> cases" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "fc_rows.h"

static int8_t w_store[4 * FC_ROWS_TILES_MAX * FC_ROWS_LEN_MAX + 3];

/* Case k's weights: channel c's row_len bytes from c * row_len, the run at a byte offset of its own. */
static int8_t *weights_of(const fc_rows_case *k)
{
    return w_store + (k->row_len + k->tiles) % 3;
}

static void weights(const fc_rows_case *k, uint32_t *state)
{
    fill_s8(weights_of(k), k->channels * k->row_len, state, k->all_min);
}

/* The helper on guarded copies of exactly the buffers it reads and writes (guarded_buffers.h). */
static int32_t call(int8_t *out, const fc_rows_case *k, const int32_t *bias, const int16_t *bias16, int wide)
{
    int8_t *const g_out = guarded_copy(0, out, k->channels);
    const int8_t *const g_x = guarded_copy(1, k->x, k->row_len);
    const int8_t *const g_w = guarded_copy(2, weights_of(k), k->channels * k->row_len);
    const int32_t returned
        = wide ? lp_fc_rows_s8(g_out, g_x, g_w, guarded_copy(3, bias, 4 * k->channels), k->multiplier, k->shift,
                               k->zero_point, k->row_len, k->tiles)
               : lp_fc_rows_s8_b16(g_out, g_x, g_w, guarded_copy(3, bias16, 2 * k->channels), k->multiplier, k->shift,
                                   k->zero_point, k->row_len, k->tiles);
    guarded_back(0, out, k->channels);
    return returned;
}

/* What the scalar loops the helper replaces store for output channel c. */
static int8_t expected(const fc_rows_case *k, int32_t c, int32_t bias)
{
    uint32_t sum = (uint32_t)bias; /* wrapping as int32 (no signed overflow) */
    for (int32_t i = 0; i < k->row_len; ++i) {
        sum += (uint32_t)(k->x[i] * weights_of(k)[c * k->row_len + i]);
    }
    const int32_t requantized = lp_requantize_double((int32_t)sum, k->multiplier, k->shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)k->zero_point));
}

int main(void)
{
    /* 11 shifts and 6 multipliers: every pair of them meets (shift 31 with INT32_MIN in cases 39, 105, ...) */
    static const int32_t shifts[] = {-1, -8, -31, 0, 3, -5, 31, 30, 1, 16, 24};
    static const int32_t multipliers[] = {1518500250, 1073741824, INT32_MAX, INT32_MIN, 1, -1277447166};
    /* int32 biases from all of int32 on both paths: each adds acc + bias as a wrap (the portable one in uint32) */
    const fc_rows_helper helper = {4, shifts, 11, multipliers, 6, 1, weights, call, expected};
    return fc_rows_test(&helper, 0);
}
