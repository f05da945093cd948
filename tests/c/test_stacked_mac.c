/* Unit test of the Cortex-M stacked-rows MAC (backends/cortex_m/helpers/templates/stacked_mac.h.in after
 * dsp_words.h.in, with the prefix lp): lp_stacked_mac_s8x4 against the plain sums of four channels' int8 weights,
 * stacked here as tvm_ext/kernels/dense.py's stack_rows stacks them, for every length that is a multiple of 4 up
 * to 160 and the lengths about its chunks of 508 inputs (one chunk, one and a group, several and a part), inputs
 * at every byte alignment, values over the whole int8 range: -128 forced in (an odd
 * channel's -128 only over an even channel's non-negative weight, the layout's bound), and all at the minimum
 * (the largest products); each accumulator gains its sum and keeps what it held. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (the portable C) and for cortex-m4f under QEMU
 * (SXTB16, LDRD, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "stacked_mac.h"

#define LEN_MAX 2036
#define SWEEP_LEN_MAX 160 /* every multiple of 4 up to it; then LONG_LENGTHS */
static const int32_t LONG_LENGTHS[] = {504, 508, 512, 1016, 1524, LEN_MAX};
#define CASES_PER_VALUES (SWEEP_LEN_MAX / 4 + 1 + (int32_t)(sizeof LONG_LENGTHS / sizeof LONG_LENGTHS[0]))

/* The four channels' weights weight[c * len + k] stacked (the template's contract): per group of four inputs,
   word 2p + j holds (lo, hi) of inputs 4g + j and 4g + j + 2 of the pair p. */
static void stack(int8_t *stacked, const int8_t *weight, int32_t len)
{
    for (int32_t k = 0; k < len; ++k) {
        for (int32_t p = 0; p < 2; ++p) {
            const int32_t r = weight[2 * p * len + k], s = weight[(2 * p + 1) * len + k];
            int8_t *half = stacked + 16 * (k / 4) + 4 * (2 * p + k % 2) + 2 * (k % 4 / 2);
            half[0] = (int8_t)r;
            half[1] = (int8_t)(s - (r < 0 ? 1 : 0));
        }
    }
}

int main(void)
{
    static int8_t x[LEN_MAX + 4], weight[4 * LEN_MAX];
    static int8_t stacked[4 * LEN_MAX] __attribute__((aligned(4)));
    uint32_t state = 1;
    int32_t cases = 0, failures = 0;
    for (int32_t all_min = 0; all_min < 2; ++all_min) {
        for (int32_t i = 0; i < CASES_PER_VALUES; ++i) {
            const int32_t len = i <= SWEEP_LEN_MAX / 4 ? 4 * i : LONG_LENGTHS[i - SWEEP_LEN_MAX / 4 - 1];
            const int32_t x_offset = i % 4;
            fill_s8(x, LEN_MAX + 4, &state, all_min);
            fill_s8(weight, 4 * LEN_MAX, &state, all_min);
            for (int32_t k = 0; k < len; ++k) {  /* the layout's bound: no borrow below -128 */
                for (int32_t p = 0; p < 2; ++p) {
                    if (weight[2 * p * len + k] < 0 && weight[(2 * p + 1) * len + k] == -128) {
                        weight[(2 * p + 1) * len + k] = (int8_t)-127;
                    }
                }
            }
            stack(stacked, weight, len);
            int32_t got[4], expected[4];
            for (int32_t c = 0; c < 4; ++c) {
                got[c] = expected[c] = start_value(c);
            }
            plain_window_mac(expected, x + x_offset, NULL, weight, len, len, 1, len);
            /* every buffer exactly what the call reads and writes, against no-access memory */
            const int32_t returned = lp_stacked_mac_s8x4(guarded_copy(0, got, 16), guarded_copy(1, x + x_offset, len),
                                                         guarded_copy(2, stacked, 4 * len), len);
            guarded_back(0, got, 16);
            if (call_wrong(returned, got, expected, 4)) {
                failures += 1;
                printf("wrong stacked MAC: length %ld, all at the minimum %ld\n", (long)len, (long)all_min);
            }
            cases += 1;
        }
    }
    return cases_verdict(cases, failures);
}
