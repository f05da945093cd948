/* Unit test of the DSP cores' int8 ADD, SUB and SQUARED_DIFFERENCE output stage from tabled values
 * (backends/cortex_m/helpers/templates/add_s8_values.h.in, with the prefix lp) against TFLite's reference
 * AddElementwise and SubElementwise (and TFLite Micro's SquaredDifference, squared_difference.cc) written with the
 * bundle's scalar double rounding
 * (packager/templates/fixed_point_requantize_double.h.in): every pair of int8 operands (256 x 256) for parameter sets
 * of TFLite's ADD (left shift 20, input shifts 0 and below, output shifts -1 and below), either operand, both or
 * neither of multiplier 1/2 (the halved operand taken as x << 20 with its zero point's term in the other's table,
 * as tvm_ext/transform/int8/binary.py values_call writes the kernel), ADD and SUB, offsets at either end, fused
 * activation ranges; SQUARED_DIFFERENCE (left shift 7, the difference d of the terms as they are, then s = 2 d^2 as
 * backends/cortex_m/schedules/dsp_add.py computes it: |d| near 2^15, s up to about 2.13e9) of either operand form,
 * output shifts down to -31. The tables, the bias and the bound on int32 steps are computed here as
 * tvm_ext/kernels/int8_tables.py scaled_operand_table and tvm_ext/kernels/elementwise.py add_from_values do. Built
 * by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU
 * (SMMLAR, SSAT), and by tests/backends/riscv/test_riscv_helpers_c.py for the RISC-V profiles under QEMU (portable
 * C, RV32IM's MULH). Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "add_s8_values.h"

/* One parameter set (as TFLite's ADD computes them from the operands' and output's scales); sign -1: SUB;
 * squared 1: SQUARED_DIFFERENCE (with sign -1). */
struct add_params {
    int32_t a_offset, b_offset, left_shift, a_multiplier, a_shift, b_multiplier, b_shift;
    int32_t out_multiplier, out_shift, out_zero_point, low, high, sign, squared;
};

static int32_t checks = 0, failures = 0;

/* TFLite's AddElementwise (SubElementwise) of one pair with the scalar double rounding. */
static int8_t expected(int8_t a, int8_t b, const struct add_params *p)
{
    const int32_t a_scaled = lp_requantize_double((a + p->a_offset) * (1 << p->left_shift), p->a_multiplier,
                                                  p->a_shift);
    const int32_t b_scaled = lp_requantize_double((b + p->b_offset) * (1 << p->left_shift), p->b_multiplier,
                                                  p->b_shift);
    const int32_t raw = p->sign > 0 ? a_scaled + b_scaled : a_scaled - b_scaled;
    const int32_t value = lp_requantize_double(raw, p->out_multiplier, p->out_shift) + p->out_zero_point;
    return (int8_t)(value < p->low ? p->low : (value > p->high ? p->high : value));
}

/* TFLite Micro's SquaredDifference of one pair with the scalar double rounding: the operands rescaled as ADD's,
 * their difference squared (below 2^30: each rescaled value is below 2^14 in magnitude), rescaled to the output. */
static int8_t expected_squared(int8_t a, int8_t b, const struct add_params *p)
{
    const int32_t a_scaled = lp_requantize_double((a + p->a_offset) * (1 << p->left_shift), p->a_multiplier,
                                                  p->a_shift);
    const int32_t b_scaled = lp_requantize_double((b + p->b_offset) * (1 << p->left_shift), p->b_multiplier,
                                                  p->b_shift);
    const int32_t raw_diff = a_scaled - b_scaled;
    const int32_t value = lp_requantize_double(raw_diff * raw_diff, p->out_multiplier, p->out_shift)
                          + p->out_zero_point;
    return (int8_t)(value < p->low ? p->low : (value > p->high ? p->high : value));
}

/* Whether an operand's rescale is TFLite's exact halving (multiplier 1/2): the kernel's shifted operand. */
static int halved(int32_t multiplier, int32_t shift, int32_t left_shift)
{
    return multiplier == (1 << 30) && shift == 0 && left_shift >= 1;
}

#if defined(LP_ADD_VALUES_LANES)
/* Every pair of one ADD or SUB parameter set through Helium's four-lane helper (helium_add_values.h.in): a's row of
 * 256 pairs (b = -128..127) in calls of 1 to 4 lanes (each count in turn, so the predicated lanes are checked too),
 * the tabled operand as the helper's a (a shifted operand its b, times its scale). */
static void check_lanes(const struct add_params *p, int32_t values[2][256], const int shifted[2],
                        int32_t shifted_scale, int32_t right, int32_t bias)
{
    const int32_t tabled = shifted[0] ? 1 : 0;
    const int32_t signs[2] = {1, p->sign};
    const int32_t b_scale = shifted[1 - tabled] ? signs[1 - tabled] * shifted_scale : 0;
    for (int32_t a = -128; a < 128; ++a) {
        int8_t as[256], bs[256], out[256];
        for (int32_t k = 0; k < 256; ++k) {
            as[k] = (int8_t)a;
            bs[k] = (int8_t)(k - 128);
        }
        const int8_t *first = tabled == 0 ? as : bs, *second = tabled == 0 ? bs : as;
        for (int32_t index = 0, turn = a; index < 256; ++turn) {
            const int32_t lanes = 256 - index < 1 + (turn & 3) ? 256 - index : 1 + (turn & 3);
            lp_add_s8_values4(&out[index], &first[index], &second[index], index, values[tabled], values[1 - tabled],
                              b_scale, p->out_multiplier, right, bias, p->low, p->high, lanes);
            index += lanes;
        }
        for (int32_t k = 0; k < 256; ++k) {
            const int8_t want = expected((int8_t)a, bs[k], p);
            ++checks;
            if (out[k] != want && failures++ < 8) {
                printf("FAIL lanes a %ld b %ld sign %ld out shift %ld: got %d, expected %d\n", (long)a,
                       (long)bs[k], (long)p->sign, (long)p->out_shift, out[k], want);
            }
        }
    }
}
#endif

/* Every pair of one parameter set through the tables (or shifts), the helper and the clamp. ADD's and SUB's terms
 * are the rescaled values doubled (factor 2), SQUARED_DIFFERENCE's as they are (factor 1), as
 * tvm_ext/transform/int8/binary.py values_call writes them. */
static void check(const struct add_params *p)
{
    int32_t values[2][256];
    const int32_t offsets[2] = {p->a_offset, p->b_offset}, signs[2] = {1, p->sign};
    const int32_t multipliers[2] = {p->a_multiplier, p->b_multiplier}, shifts[2] = {p->a_shift, p->b_shift};
    int shifted[2] = {halved(p->a_multiplier, p->a_shift, p->left_shift),
                      halved(p->b_multiplier, p->b_shift, p->left_shift)};
    shifted[0] = shifted[0] && !shifted[1]; /* equal scales: a tabled, b shifted */
    const int32_t factor = p->squared ? 1 : 2;
    const int32_t shifted_scale = factor * (1 << (p->left_shift - 1)); /* a shifted operand's x times this */
    int64_t largest_sum = 0;
    for (int32_t k = 0; k < 2; ++k) {
        int64_t largest = (int64_t)128 * shifted_scale;
        if (!shifted[k]) {
            /* the other operand's zero point term (offset = -zero point) where that one is shifted */
            const int32_t plus = shifted[1 - k] ? signs[1 - k] * offsets[1 - k] * shifted_scale : 0;
            largest = 0;
            for (int32_t x = -128; x < 128; ++x) {
                const int32_t v = factor * signs[k] * lp_requantize_double((x + offsets[k]) * (1 << p->left_shift),
                                                                      multipliers[k], shifts[k]) + plus;
                values[k][(uint8_t)(int8_t)x] = v;
                largest = (v < 0 ? -(int64_t)v : v) > largest ? (v < 0 ? -(int64_t)v : v) : largest;
            }
        }
        largest_sum += largest;
    }
    if (p->squared) {
        largest_sum = 2 * largest_sum * largest_sum; /* s = 2 d^2 */
    }
    const int32_t right = -p->out_shift;
    /* the bias in 64 bits first: a set whose bias leaves int32 is outside the bounds, not wrapped into them */
    const int64_t wide_bias = ((int64_t)1 << (right - 1)) + (int64_t)p->out_zero_point * ((int64_t)1 << right);
    const int32_t bias = (int32_t)wide_bias;
    const int64_t largest_product = (largest_sum * p->out_multiplier + ((int64_t)1 << 31)) >> 32;
    const int64_t magnitude_bias = wide_bias < 0 ? -wide_bias : wide_bias;
    if (largest_sum > INT32_MAX || largest_product + 2 + magnitude_bias > INT32_MAX) {
        printf("FAIL a parameter set outside the helper's bounds (out shift %ld)\n", (long)p->out_shift);
        ++failures;
        return;
    }
#if defined(LP_ADD_VALUES_LANES)
    if (!p->squared) {
        check_lanes(p, values, shifted, shifted_scale, right, bias);
    }
#endif
    for (int32_t a = -128; a < 128; ++a) {
        for (int32_t b = -128; b < 128; ++b) {
            const int32_t xs[2] = {a, b};
            int32_t s = 0;
            for (int32_t k = 0; k < 2; ++k) {
                s += shifted[k] ? signs[k] * xs[k] * shifted_scale : values[k][(uint8_t)(int8_t)xs[k]];
            }
            if (p->squared) {
                s = s * s * 2;
            }
            int32_t got = lp_add_s8_value(s, p->out_multiplier, right, bias);
            got = got < p->low ? p->low : (got > p->high ? p->high : got);
            const int8_t want = p->squared ? expected_squared((int8_t)a, (int8_t)b, p)
                                           : expected((int8_t)a, (int8_t)b, p);
            ++checks;
            if ((int8_t)got != want && failures++ < 8) {
                printf("FAIL a %ld b %ld sign %ld squared %ld out shift %ld: got %ld, expected %d\n", (long)a,
                       (long)b, (long)p->sign, (long)p->squared, (long)p->out_shift, (long)got, want);
            }
        }
    }
}

int main(void)
{
    static const struct add_params sets[] = {
        /* a the larger scale (2^30, 0: exactly halved), b smaller; output finer than the operands' */
        {128, -5, 20, 1 << 30, 0, 1518500250, -1, 1992864825, -19, -3, -128, 127, 1, 0},
        /* b the larger scale, offsets at either end, a ReLU-like range */
        {-127, 128, 20, 1395864371, -3, 1 << 30, 0, 1288490189, -17, 17, -20, 127, 1, 0},
        /* equal scales, a clamp on both sides, a small output shift */
        {0, 0, 20, 1 << 30, 0, 1 << 30, 0, 2147483647, -1, 0, -100, 100, 1, 0},
        /* equal scales, tiny multipliers (ties of either sign) */
        {3, -3, 20, 1 << 30, 0, 1 << 30, 0, 1 << 30, -1, 127, -128, 127, 1, 0},
        /* neither halved (both tabled), deep input shifts */
        {1, 2, 20, 2000000000, -12, 1500000000, -9, 1700000000, -3, -128, -128, 127, 1, 0},
        /* SUB of each form: a halved, b halved, neither, equal scales */
        {128, -5, 20, 1 << 30, 0, 1518500250, -1, 1992864825, -19, -3, -128, 127, -1, 0},
        {-127, 128, 20, 1395864371, -3, 1 << 30, 0, 1288490189, -17, 17, -20, 127, -1, 0},
        {1, 2, 20, 2000000000, -12, 1500000000, -9, 1700000000, -3, -128, -128, 127, -1, 0},
        {5, -9, 20, 1 << 30, 0, 1 << 30, 0, 1431655765, -20, 0, -128, 127, -1, 0},
        /* a large output shift and zero point: the bias near its bound */
        {-100, 100, 20, 1 << 30, 0, 1200000000, -2, 1100000000, -22, 120, -128, 127, 1, 0},
        /* SQUARED_DIFFERENCE (left shift 7): a halved (shifted), b tabled near 1/2, offsets at opposite ends (|d| up
           to about 32636, s = 2 d^2 near 2.13e9) */
        {128, -127, 7, 1 << 30, 0, 2147000000, -1, 2147483647, -23, -128, -128, 127, -1, 1},
        {128, -127, 7, 1 << 30, 0, 2147000000, -1, 1500000000, -24, 5, -128, 127, -1, 1},
        /* b halved (shifted, negated), a tabled near 1/2 */
        {-127, 128, 7, 2147000000, -1, 1 << 30, 0, 1992864825, -25, -20, -128, 127, -1, 1},
        /* equal scales: a tabled, b shifted; a clamp on both sides */
        {128, -127, 7, 1 << 30, 0, 1 << 30, 0, 1288490189, -22, -50, -60, 90, -1, 1},
        /* neither halved (both tabled), deep input shifts, a small output shift */
        {1, 2, 7, 2000000000, -6, 1500000000, -4, 1700000000, -9, -128, -128, 127, -1, 1},
        /* output shift -31: the largest right shift, its bias 2^30 (zero point 0) or -2^30 (zero point -1) */
        {128, -127, 7, 1 << 30, 0, 2147000000, -1, 2147483647, -31, 0, -128, 127, -1, 1},
        {-127, 128, 7, 2147000000, -1, 1 << 30, 0, 2147483647, -31, -1, -128, 127, -1, 1},
        {128, -127, 7, 1 << 30, 0, 1 << 30, 0, 2147483647, -30, -1, -128, 127, -1, 1},
    };
    for (int32_t set = 0; set < (int32_t)(sizeof sets / sizeof sets[0]); ++set) {
        check(&sets[set]);
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
