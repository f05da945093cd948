/* Unit test of the Helium int8 ADD (backends/cortex_m/helpers/templates/helium_add.h.in, after helium_lanes.h.in
 * and helium_requantize.h.in, with the prefix lp) against TFLite's reference AddElementwise written with the
 * bundle's scalar double rounding (packager/templates/fixed_point_requantize_double.h.in): every pair of int8
 * operands (256 x 256, in place into the first operand too) for parameter sets of TFLite's ADD (left shift 20,
 * input shifts 0 and below, output shifts -1 and below, and 0: the portable path), either operand, both or
 * neither of multiplier 1/2 (the halved operand's path without a table, and the two tables'), offsets at either
 * end, fused activation ranges, every count 0..9 (the predicated last lanes: nothing written past count), and
 * runs of one ADD over one set of tables (two calls, the second from an odd element). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VLDRW gathers, VMLA, VQRDMLAH, VRSHL, VCTP). Prints "ok <count>" and exits 0, or names the first failure and
 * exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "add_s8.h"
#include "cortex_m_test_values.h"

#define PAIRS 256
#define GUARD 3 /* bytes after the outputs that must keep their value */

/* One parameter set of the helper (as TFLite's ADD computes them from the operands' and output's scales). */
struct add_params {
    int32_t a_offset, b_offset, left_shift, a_multiplier, a_shift, b_multiplier, b_shift;
    int32_t out_multiplier, out_shift, out_zero_point, low, high;
};

static int32_t checks = 0, failures = 0;

/* TFLite's AddElementwise of one pair with the scalar double rounding. */
static int8_t expected_add(int8_t a, int8_t b, const struct add_params *p)
{
    const int32_t a_scaled = lp_requantize_double((a + p->a_offset) * (1 << p->left_shift), p->a_multiplier,
                                                  p->a_shift);
    const int32_t b_scaled = lp_requantize_double((b + p->b_offset) * (1 << p->left_shift), p->b_multiplier,
                                                  p->b_shift);
    const int32_t value = lp_requantize_double(a_scaled + b_scaled, p->out_multiplier, p->out_shift)
                          + p->out_zero_point;
    return (int8_t)(value < p->low ? p->low : (value > p->high ? p->high : value));
}

/* The helper on count elements (into out, and in place into a copy of a); every output compared, the guard
   bytes kept. */
static void check(const int8_t *a, const int8_t *b, int32_t count, const struct add_params *p)
{
    int8_t out[PAIRS + GUARD], in_place[PAIRS + GUARD];
    int32_t values[512], i;
    for (i = 0; i < PAIRS + GUARD; ++i) {
        out[i] = (int8_t)0x5a;
        in_place[i] = i < count ? a[i] : (int8_t)0x5a;
    }
    memset(values, 0, sizeof values); /* copied whole below; the helper fills only what its path reads */
    lp_add_s8_tables(values, p->a_offset, p->b_offset, p->left_shift, p->a_multiplier, p->a_shift, p->b_multiplier,
                     p->b_shift, p->out_shift);
    /* the first count - count / 3 elements, then the rest (runs over one set of tables); every run and the tables
       handed over exactly, against no-access memory (guarded_buffers.h) */
    const int32_t first = count - count / 3;
    const int32_t *const tables = guarded_copy(3, values, (int32_t)sizeof values);
    lp_add_s8(guarded_copy(0, out, first), guarded_copy(1, a, first), guarded_copy(2, b, first), first, tables,
              p->a_offset, p->b_offset, p->left_shift, p->a_multiplier, p->a_shift, p->b_multiplier, p->b_shift,
              p->out_multiplier, p->out_shift, p->out_zero_point, p->low, p->high);
    guarded_back(0, out, first);
    lp_add_s8(guarded_copy(0, out + first, count / 3), guarded_copy(1, a + first, count / 3),
              guarded_copy(2, b + first, count / 3), count / 3, tables, p->a_offset, p->b_offset, p->left_shift,
              p->a_multiplier, p->a_shift, p->b_multiplier, p->b_shift, p->out_multiplier, p->out_shift,
              p->out_zero_point, p->low, p->high);
    guarded_back(0, out + first, count / 3);
    int8_t *const run = guarded_copy(0, in_place, count);
    lp_add_s8(run, run, guarded_copy(2, b, count), count, tables, p->a_offset, p->b_offset, p->left_shift,
              p->a_multiplier, p->a_shift, p->b_multiplier, p->b_shift, p->out_multiplier, p->out_shift,
              p->out_zero_point, p->low, p->high);
    guarded_back(0, in_place, count);
    for (i = 0; i < PAIRS + GUARD; ++i) {
        const int8_t want = i < count ? expected_add(a[i], b[i], p) : (int8_t)0x5a;
        checks += 2;
        if (out[i] != want || in_place[i] != want) {
            if (failures++ < 8) {
                printf("FAIL element %ld of %ld: a %d b %d out shift %ld: got %d/%d, expected %d\n", (long)i,
                       (long)count, i < count ? a[i] : 0, i < count ? b[i] : 0, (long)p->out_shift, out[i],
                       in_place[i], want);
            }
        }
    }
}

int main(void)
{
    static const struct add_params sets[] = {
        /* a the larger scale (2^30, 0: exactly halved), b smaller; output finer than the operands' */
        {128, -5, 20, 1 << 30, 0, 1518500250, -1, 1992864825, -19, -3, -128, 127},
        /* b the larger scale, offsets at either end, a ReLU-like range */
        {-127, 128, 20, 1395864371, -3, 1 << 30, 0, 1288490189, -17, 17, -20, 127},
        /* equal scales, a clamp on both sides, a small output shift */
        {0, 0, 20, 1 << 30, 0, 1 << 30, 0, 2147483647, -1, 0, -100, 100},
        /* equal scales, tiny multipliers (ties of either sign), an output shift of 0 (the portable path) */
        {3, -3, 20, 1 << 30, 0, 1 << 30, 0, 1 << 30, 0, 127, -128, 127},
        /* left shift 7 (no model's int8 ADD; checks the tables' shift), deep input shifts */
        {1, 2, 7, 2000000000, -12, 1500000000, -9, 1700000000, -3, -128, -128, 127},
    };
    int8_t a[PAIRS], b[PAIRS];
    uint32_t state = 1;
    int32_t set, row, i;
    for (set = 0; set < (int32_t)(sizeof sets / sizeof sets[0]); ++set) {
        for (row = 0; row < PAIRS; ++row) {  /* every pair: a row of one a against every b */
            for (i = 0; i < PAIRS; ++i) {
                a[i] = (int8_t)(row - 128);
                b[i] = (int8_t)(i - 128);
            }
            check(a, b, PAIRS, &sets[set]);
        }
        fill_s8(a, PAIRS, &state, 0);
        fill_s8(b, PAIRS, &state, 0);
        for (i = 0; i <= 9; ++i) {  /* every count up to 9, nothing past it (count 0 writes nothing) */
            check(a, b, i, &sets[set]);
        }
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
