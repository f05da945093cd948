/* Unit test of the Cortex-M backend's int8 SOFTMAX (backends/cortex_m/helpers/templates/softmax_s8.h.in, with the
 * prefix lp): on exp tables of TFLite's form (term 0 INT32_MAX, falling terms, zeros past a cutoff) decaying fast
 * to slowly, row depths 1..40, 255 and 700 (the sum past 2^28: every output -128) over pseudo-random rows
 * (spread and crowded, the extremes -128 and 127 included), written apart and in place, the helper's
 * outputs are those of TFLite's arithmetic as tvm_ext/kernels/softmax.py writes it (in 64-bit C: the signed
 * roundings, the saturating products). Where LP_SOFTMAX_S8_SHARED (the RISC-V out-of-line form's header:
 * backends/riscv/helpers/templates/softmax_s8_shared.h.in), lp_softmax_s8_shared's outputs too. Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host and for cortex-m4f under QEMU, and by
 * tests/backends/riscv/test_riscv_helpers_c.py for each RISC-V profile under QEMU virt (both forms). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guarded_buffers.h"
#include "softmax_s8.h"

#define MAX_DEPTH 700

static uint32_t state = 12345u;

static uint32_t next_random(void)
{
    state = state * 1664525u + 1013904223u;
    return state >> 8;
}

static int32_t high_mul(int32_t a, int32_t b) /* gemmlowp's SaturatingRoundingDoublingHighMul */
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t product = (int64_t)a * (int64_t)b;
    const int64_t nudge = product >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30);
    return (int32_t)((product + nudge) / ((int64_t)1 << 31));
}

static int64_t divide_by_pot(int64_t x, int32_t exponent) /* gemmlowp's RoundingDivideByPOT, in 64 bits */
{
    const int64_t mask = ((int64_t)1 << exponent) - 1;
    const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + ((x & mask) > threshold ? 1 : 0);
}

static int32_t saturating_shift(int32_t x, int32_t shift)
{
    const int64_t threshold = ((int64_t)1 << (31 - shift)) - 1;
    if (x > threshold) {
        return INT32_MAX;
    }
    return x < -threshold ? INT32_MIN : x * (1 << shift);
}

static int32_t leading_zeros(uint32_t x)
{
    int32_t zeros = 0;
    while (zeros < 32 && (x & 0x80000000u) == 0u) {
        x <<= 1;
        zeros++;
    }
    return zeros;
}

/* gemmlowp's one_over_one_plus_x_for_x_in_0_1 of the sum (> 0) shifted to [2^31, 2^32) minus 2^31, as Q0.31 */
static int32_t reference_reciprocal(int32_t sum)
{
    const int32_t headroom = leading_zeros((uint32_t)sum);
    const int32_t shifted = (int32_t)(((int64_t)sum << headroom) - ((int64_t)1 << 31));
    const int64_t total = (int64_t)shifted + INT32_MAX;
    const int32_t half_denominator = (int32_t)((total + (total >= 0 ? 1 : -1)) / 2);
    int32_t x = 1515870810 + high_mul(half_denominator, -1010580540);
    for (int32_t step = 0; step < 3; ++step) {
        const int32_t one_minus = 536870912 - high_mul(half_denominator, x);
        x = x + saturating_shift(high_mul(x, one_minus), 2);
    }
    return saturating_shift(x, 1);
}

/* The helper's reciprocal against gemmlowp's at sums of one leading zero, stride apart from both ends of their
   range: each gives a half denominator of its own, so the sums spread over all of them. Its shortcuts (no
   saturation in the Newton-Raphson steps, x kept doubled) hold at each. (Each of the 2^30 such sums was checked so
   on the host once, 2026-11-30.) */
static int check_reciprocals(uint32_t stride)
{
    for (uint32_t k = 0; k < (1u << 30); k += stride) {
        for (uint32_t end = 0; end < 2u; ++end) {
            const int32_t sum = (int32_t)((1u << 30) + (end ? (1u << 30) - 1u - k : k));
            if (lp_softmax_reciprocal(sum, 1) != reference_reciprocal(sum)) {
                printf("wrong reciprocal of the sum %ld\n", (long)sum);
                return 1;
            }
        }
    }
    return 0;
}

static void reference(int8_t *out, const int8_t *in, int32_t depth, const int32_t *table)
{
    int32_t peak = -128, sum = 0, i;
    for (i = 0; i < depth; ++i) {
        peak = in[i] > peak ? in[i] : peak;
    }
    for (i = 0; i < depth; ++i) {
        sum += (int32_t)divide_by_pot(table[peak - in[i]], 12);
    }
    const int32_t reciprocal = reference_reciprocal(sum);
    const int32_t exponent = 35 - leading_zeros((uint32_t)sum);
    for (i = 0; i < depth; ++i) {
        const int64_t value = divide_by_pot(high_mul(reciprocal, table[peak - in[i]]), exponent) - 128;
        out[i] = (int8_t)(value > 127 ? 127 : value < -128 ? -128 : value);
    }
}

/* A table of TFLite's form: term k = INT32_MAX * (numerator / 1024)^k, 0 from the cutoff on. */
static void make_table(int32_t *table, int64_t numerator, int32_t cutoff)
{
    int64_t term = INT32_MAX;
    for (int32_t k = 0; k < 256; ++k) {
        table[k] = k < cutoff ? (int32_t)term : 0;
        term = term * numerator / 1024;
    }
}

static int check(const int32_t *table, int32_t depth, int32_t spread, int32_t rows)
{
    static int8_t in[2 * MAX_DEPTH], actual[2 * MAX_DEPTH], expected[2 * MAX_DEPTH];
    int32_t i;
    const int32_t base = (int32_t)(next_random() % 256u) - 128;
    for (i = 0; i < rows * depth; ++i) {
        int32_t value = base + (int32_t)(next_random() % (uint32_t)(2 * spread + 1)) - spread;
        if (next_random() % 13u == 0u) {
            value = next_random() % 2u ? 127 : -128;
        }
        in[i] = (int8_t)(value > 127 ? 127 : value < -128 ? -128 : value);
    }
    for (i = 0; i < rows; ++i) {
        reference(expected + i * depth, in + i * depth, depth, table);
    }
    memset(actual, 0x55, sizeof actual);
    /* every buffer exactly what the call reads and writes, against no-access memory */
    const int32_t bytes = rows * depth;
    const int32_t *const exp_table = guarded_copy(2, table, 256 * 4);
    int32_t returned = lp_softmax_s8(guarded_copy(0, actual, bytes), guarded_copy(1, in, bytes), rows, depth,
                                     exp_table);
    guarded_back(0, actual, bytes);
    if (returned != 0 || memcmp(actual, expected, (size_t)bytes) != 0) {
        return 1;
    }
#if defined(LP_SOFTMAX_S8_SHARED)
    memset(actual, 0x55, sizeof actual);
    returned = lp_softmax_s8_shared(guarded_copy(0, actual, bytes), guarded_copy(1, in, bytes), rows, depth,
                                    exp_table);
    guarded_back(0, actual, bytes);
    if (returned != 0 || memcmp(actual, expected, (size_t)bytes) != 0) {
        return 1;
    }
#endif
    int8_t *const row = guarded_copy(1, in, bytes);
    returned = lp_softmax_s8(row, row, rows, depth, exp_table); /* in place */
    guarded_back(1, in, bytes);
    return returned != 0 || memcmp(in, expected, (size_t)bytes) != 0;
}

int main(void)
{
    static const int64_t numerators[] = {1023, 1000, 900, 512, 100};
    static const int32_t cutoffs[] = {256, 200, 40, 3};
    static const int32_t spreads[] = {0, 2, 20, 255};
    static const int32_t long_rows[] = {255, MAX_DEPTH};
    int32_t table[256];
    long cases = 0;
    if (check_reciprocals(65521u) != 0) {
        return 1;
    }
    for (size_t n = 0; n < sizeof numerators / sizeof numerators[0]; ++n) {
        for (size_t c = 0; c < sizeof cutoffs / sizeof cutoffs[0]; ++c) {
            make_table(table, numerators[n], cutoffs[c]);
            for (size_t s = 0; s < sizeof spreads / sizeof spreads[0]; ++s) {
                for (int32_t depth = 1; depth <= 40; ++depth) {
                    if (check(table, depth, spreads[s], 2) != 0) {
                        printf("wrong: numerator %ld, cutoff %ld, spread %ld, depth %ld\n", (long)numerators[n],
                               (long)cutoffs[c], (long)spreads[s], (long)depth);
                        return 1;
                    }
                    cases++;
                }
                for (size_t d = 0; d < sizeof long_rows / sizeof long_rows[0]; ++d) {
                    if (check(table, long_rows[d], spreads[s], 1) != 0) {
                        printf("wrong: numerator %ld, cutoff %ld, spread %ld, depth %ld\n", (long)numerators[n],
                               (long)cutoffs[c], (long)spreads[s], (long)long_rows[d]);
                        return 1;
                    }
                    cases++;
                }
            }
        }
    }
    printf("ok %ld cases\n", cases);
    return 0;
}
