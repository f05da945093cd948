/* Unit test of the DSP cores' biased requantization (backends/cortex_m/helpers/templates/requantize_biased.h.in,
 * with the prefix lp) against the bundle's scalar helpers it replaces in an element loop (packager/templates/
 * fixed_point_requantize_double_small.h.in plus the zero point, and fixed_point_saturate_int8.h.in for the _s8
 * form), on its domain: every right shift 1..30, accumulators at -2^30, 2^30 - 1, around zero and at exact ties of
 * the rounding right shift of either sign (and their neighbours) and drawn ones, multipliers 0, 1, 2^30, INT32_MAX
 * and drawn ones, zero points from -128 to 127 and beyond where the bias stays within 2^30 - 2 (the bias computed
 * as backends/cortex_m/schedules/biased_requantize.py does). Built by tests/backends/cortex_m/
 * test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU (SMMLAR, SSAT with its shift),
 * and by tests/backends/riscv/test_riscv_helpers_c.py with the RISC-V out-of-line form
 * (backends/riscv/helpers/templates/requantize_biased_call.h.in, LP_REQUANTIZE_BIASED_S8_CALL defined), checked
 * beside the inlined one, on the host and under QEMU virt.
 * Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "requantize_biased.h"

#define SMALL (1 << 30) /* the accumulators lie in [-SMALL, SMALL) */
#define BIAS_LIMIT ((1 << 30) - 2)

static int32_t checks = 0, failures = 0;
static uint32_t state = 12345u;

static int32_t drawn(void)
{
    state = state * 1664525u + 1013904223u;
    return (int32_t)(state >> 1) - SMALL; /* in [-2^30, 2^30) */
}

static void check(int32_t acc, int32_t multiplier, int32_t right, int32_t zero_point)
{
    const int64_t wide_bias = ((int64_t)1 << (right - 1)) + (int64_t)zero_point * ((int64_t)1 << right);
    if (acc < -SMALL || acc >= SMALL || wide_bias > BIAS_LIMIT || wide_bias < -BIAS_LIMIT) {
        return; /* outside the contract: the schedule keeps the scalar helper */
    }
    const int32_t bias = (int32_t)wide_bias;
    const int32_t want = lp_requantize_double_small(acc, multiplier, -right) + zero_point;
    const int32_t got = lp_requantize_biased(acc, multiplier, right, bias);
    const int32_t want_s8 = lp_saturate_int8(want), got_s8 = lp_requantize_biased_s8(acc, multiplier, right, bias);
#if defined(LP_REQUANTIZE_BIASED_S8_CALL)
    const int32_t got_call = lp_requantize_biased_s8_call(acc, multiplier, right, bias);
    checks += 1;
    if (got_call != want_s8 && failures++ < 8) {
        printf("FAIL acc %ld multiplier %ld right %ld zero point %ld: out of line got %ld, expected %ld\n", (long)acc,
               (long)multiplier, (long)right, (long)zero_point, (long)got_call, (long)want_s8);
    }
#endif
    checks += 2;
    if ((got != want || got_s8 != want_s8) && failures++ < 8) {
        printf("FAIL acc %ld multiplier %ld right %ld zero point %ld: got %ld (s8 %ld), expected %ld (s8 %ld)\n",
               (long)acc, (long)multiplier, (long)right, (long)zero_point, (long)got, (long)got_s8, (long)want,
               (long)want_s8);
    }
}

int main(void)
{
    static const int32_t multipliers[] = {0, 1, 1 << 30, INT32_MAX, 1073741825, 1518500250, 2021284194, 1729217751};
    static const int32_t zero_points[] = {0, 1, -1, 5, -22, 127, -128, 300, -300, 100000};
    for (int32_t right = 1; right <= 30; ++right) {
        for (int32_t m = 0; m < (int32_t)(sizeof multipliers / sizeof multipliers[0]); ++m) {
            const int32_t multiplier = multipliers[m];
            for (int32_t z = 0; z < (int32_t)(sizeof zero_points / sizeof zero_points[0]); ++z) {
                const int32_t zero_point = zero_points[z];
                static const int32_t fixed[] = {-SMALL, SMALL - 1, 0, 1, -1, 2, -2, 3, -3, 1 << 20, -(1 << 20)};
                for (int32_t k = 0; k < (int32_t)(sizeof fixed / sizeof fixed[0]); ++k) {
                    check(fixed[k], multiplier, right, zero_point);
                }
                /* accumulators whose high product lands on a tie of the right shift (either sign), and beside it:
                   for multiplier 2^30 the high product of 2 acc is acc / 2 rounded, so acc = 2 * odd multiples of
                   2^(right - 1) */
                for (int32_t t = -3; t <= 3; ++t) {
                    const int64_t tie = (int64_t)(2 * t + 1) * ((int64_t)1 << right);
                    for (int32_t d = -2; d <= 2; ++d) {
                        if (tie + d >= -SMALL && tie + d < SMALL) {
                            check((int32_t)(tie + d), multiplier, right, zero_point);
                        }
                    }
                }
                for (int32_t k = 0; k < 64; ++k) {
                    const int32_t acc = drawn();
                    check(acc, multiplier, right, zero_point);
                    check(acc >> (k % 31), multiplier, right, zero_point); /* small ones too */
                }
            }
        }
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
