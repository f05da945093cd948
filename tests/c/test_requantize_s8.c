/* Unit test of the Helium requantization epilogue (backends/cortex_m/helpers/templates/helium_requantize.h.in,
 * after helium_lanes.h.in, with the prefix lp) against the bundle's scalar helpers it replaces
 * (packager/templates/fixed_point_requantize_double.h.in and fixed_point_saturate_int8.h.in): for every shift
 * -31..30, accumulators at INT32_MIN, INT32_MAX and around zero, exact ties of the rounding right shift of
 * either sign (and their neighbours), multipliers 0, 1, 2^30, INT32_MAX, INT32_MIN and drawn ones, biases
 * that make acc + bias wrap, zero points that saturate either end, int32 and int16 biases, and every count
 * 0..9 (the predicated last lanes: nothing written past count). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m55 under QEMU
 * (VQRDMULH, VRSHL, VCTP); and, for the RISC-V epilogue of the same contract and names
 * (backends/riscv/helpers/templates/requantize_small.h.in), by tests/backends/riscv/test_riscv_helpers_c.py on the
 * host and under QEMU virt. The Helium build without LP_LEFT_SHIFTS (helium_left_shifts.h.in: a bundle whose every
 * shift is <= 0) draws shifts -31..0 only. The table forms (_s8_lut, _s8_lut_b16: each output a 256-entry table's
 * entry at the value + 128) against the same values looked up, with a drawn table; the RISC-V epilogue has none
 * (LP_NO_TABLES). Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_s8.h"

#define LANES 9
#define GUARD 3 /* bytes after the outputs that must keep their value */

static int32_t checks = 0, failures = 0;
#if !defined(LP_NO_TABLES)
static int8_t table[256]; /* drawn in main */
#endif

/* What the scalar epilogue the helper replaces stores. */
static int8_t expected_out(int32_t acc, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    const int32_t x = (int32_t)((uint32_t)acc + (uint32_t)bias);
    const int32_t requantized = lp_requantize_double(x, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

#if defined(LP_HELIUM)
/* The vector requantization of lanes 0..3 with the zero point a constant -128 (a literal, so the tie fix-up is left
   out: LP_CLAMPS_TIES) against the scalar epilogue, each lane compared. */
static void check_constant_floor(const int32_t *acc, const int32_t *bias, const int32_t *multiplier,
                                 const int8_t *shift)
{
    int8_t out[4];
    int32_t c;
    vstrbq_s32(out, lp_requantize_s8_lanes(vaddq_s32(vldrwq_s32(acc), vldrwq_s32(bias)), vldrwq_s32(multiplier),
                                           vldrbq_s32(shift), -128));
    for (c = 0; c < 4; ++c) {
        const int8_t want = expected_out(acc[c], bias[c], multiplier[c], shift[c], -128);
        checks += 1;
        if (out[c] != want && failures++ < 8) {
            printf("FAIL constant zero point -128, lane %ld: acc %ld bias %ld multiplier %ld shift %d: got %d,"
                   " expected %d\n", (long)c, (long)acc[c], (long)bias[c], (long)multiplier[c], (int)shift[c],
                   out[c], want);
        }
    }
}
#endif

/* Both helpers on count lanes of acc, bias, multiplier, shift; every output compared, the guard bytes kept (and
   where the zero point is -128, the vector lanes with it a constant: check_constant_floor). */
static void check(const int32_t *acc, const int32_t *bias, const int32_t *multiplier, const int8_t *shift,
                  int32_t zero_point, int32_t count)
{
    int16_t bias16[LANES];
    int8_t out[LANES + GUARD], out16[LANES + GUARD];
    int32_t c;
    for (c = 0; c < LANES; ++c) {
        bias16[c] = (int16_t)bias[c];
    }
    for (c = 0; c < LANES + GUARD; ++c) {
        out[c] = out16[c] = (int8_t)0x5a;
    }
    /* every buffer exactly the lanes', against no-access memory (guarded_buffers.h); each output in turn */
    const int32_t *const g_acc = guarded_copy(0, acc, 4 * count), *const g_bias = guarded_copy(1, bias, 4 * count);
    const int16_t *const g_bias16 = guarded_copy(2, bias16, 2 * count);
    const int32_t *const g_multiplier = guarded_copy(3, multiplier, 4 * count);
    const int8_t *const g_shift = guarded_copy(4, shift, count);
    lp_requantize_s8(guarded_copy(5, out, count), g_acc, g_bias, g_multiplier, g_shift, zero_point, count);
    guarded_back(5, out, count);
#if defined(LP_HELIUM)
    if (zero_point == -128 && count >= 4) {
        check_constant_floor(acc, bias, multiplier, shift);
    }
#endif
    lp_requantize_s8_b16(guarded_copy(5, out16, count), g_acc, g_bias16, g_multiplier, g_shift, zero_point, count);
    guarded_back(5, out16, count);
#if !defined(LP_NO_TABLES)
    int8_t looked[LANES + GUARD], looked16[LANES + GUARD];
    for (c = 0; c < LANES + GUARD; ++c) {
        looked[c] = looked16[c] = (int8_t)0x5a;
    }
    const int8_t *const g_table = guarded_copy(6, table, sizeof table);
    lp_requantize_s8_lut(guarded_copy(5, looked, count), g_acc, g_bias, g_multiplier, g_shift, zero_point, count,
                         g_table);
    guarded_back(5, looked, count);
    lp_requantize_s8_lut_b16(guarded_copy(5, looked16, count), g_acc, g_bias16, g_multiplier, g_shift, zero_point,
                             count, g_table);
    guarded_back(5, looked16, count);
    for (c = 0; c < LANES + GUARD; ++c) {
        const int8_t want = c < count ? table[out[c] + 128] : (int8_t)0x5a;
        const int8_t want16 = c < count ? table[out16[c] + 128] : (int8_t)0x5a;
        checks += 2;
        if ((looked[c] != want || looked16[c] != want16) && failures++ < 8) {
            printf("FAIL table lane %ld of %ld: value %d/%d: got %d/%d, expected %d/%d\n", (long)c, (long)count,
                   out[c], out16[c], looked[c], looked16[c], want, want16);
        }
    }
#endif
    for (c = 0; c < LANES + GUARD; ++c) {
        const int8_t want = c < count ? expected_out(acc[c], bias[c], multiplier[c], shift[c], zero_point)
                                      : (int8_t)0x5a;
        const int8_t want16 = c < count ? expected_out(acc[c], bias16[c], multiplier[c], shift[c], zero_point)
                                        : (int8_t)0x5a;
        checks += 2;
        if (out[c] != want || out16[c] != want16) {
            if (failures++ < 8) {
                printf("FAIL lane %ld of %ld: acc %ld bias %ld multiplier %ld shift %d zero point %ld: got %d/%d,"
                       " expected %d/%d\n", (long)c, (long)count, (long)acc[c < LANES ? c : 0],
                       (long)bias[c < LANES ? c : 0], (long)multiplier[c < LANES ? c : 0],
                       (int)shift[c < LANES ? c : 0], (long)zero_point, out[c], out16[c], want, want16);
            }
        }
    }
}

/* Accumulators that, with multiplier INT32_MAX (a high multiply that returns acc for |acc| <= 2^30) and shift
   -e, put the rounding right shift on a tie of either sign and on its neighbours; then the extremes. */
static int32_t special_acc(int32_t e, int32_t i)
{
    static const int32_t extremes[] = {INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, 0, 1, -1, 1 << 30,
                                       -(1 << 30), (1 << 30) + 1};
    const int32_t n_ties = 6;
    if (i < n_ties && e >= 1 && e <= 30) {
        const int32_t half = (int32_t)1 << (e - 1), sign = i % 2 == 0 ? 1 : -1;
        const int32_t around = (i / 2) - 1; /* -1, 0, +1 */
        return sign * (3 * half > (1 << 30) ? half : 3 * half) + around;
    }
    return extremes[i % (int32_t)(sizeof extremes / sizeof extremes[0])];
}

/* 32 drawn bits as an int32 (two values of the sequence). */
static int32_t draw32(uint32_t *state)
{
    const uint32_t high = next_value(state) << 16;
    return (int32_t)(high ^ next_value(state));
}

/* The largest shift drawn: 30, or 0 for the Helium requantization without LP_LEFT_SHIFTS (right shifts only). */
#if defined(LP_HELIUM) && !defined(LP_LEFT_SHIFTS)
#define LARGEST_SHIFT 0
#else
#define LARGEST_SHIFT 30
#endif

/* A drawn shift within -31..LARGEST_SHIFT: value, or its negation above LARGEST_SHIFT. */
static int8_t within_largest(int32_t value)
{
    return (int8_t)(value > LARGEST_SHIFT ? -value : value);
}

int main(void)
{
    static const int32_t multipliers[] = {INT32_MAX, 1 << 30, 0, 1, INT32_MIN, 1518500250, 1073741825, -1073741824};
    static const int32_t zero_points[] = {0, -128, 127, 5, INT32_MAX};
    uint32_t state = 1;
    int32_t shift_value, round, c;
#if !defined(LP_NO_TABLES)
    uint32_t table_state = 7; /* its own sequence: the other checks draw the values they drew before */
    for (c = 0; c < 256; ++c) {
        table[c] = (int8_t)(int32_t)(next_value(&table_state) % 256u - 128u);
    }
#endif
    for (shift_value = -31; shift_value <= LARGEST_SHIFT; ++shift_value) {
        for (round = 0; round < 24; ++round) {
            int32_t acc[LANES], bias[LANES], multiplier[LANES];
            int8_t shift[LANES];
            for (c = 0; c < LANES; ++c) {
                const int32_t lane = round * LANES + c;
                acc[c] = round < 2 ? special_acc(-shift_value, lane) : draw32(&state);
                bias[c] = round < 2 ? 0 : (round == 2 ? INT32_MAX : (round % 3 == 1 ? draw32(&state) % 40000 : 0));
                multiplier[c] = round < 2 ? INT32_MAX : (round % 4 == 0 ? multipliers[(round + c) % 8]
                                                                          : (int32_t)(next_value(&state) << 15));
                /* mostly this shift, every third lane another (per-channel shifts); the special rounds'
                   ties all at this shift */
                shift[c] = within_largest(round >= 2 && c % 3 == 2 ? (shift_value + 7 * c + 31) % 62 - 31
                                                                   : shift_value);
            }
            check(acc, bias, multiplier, shift, zero_points[round % 5],
                  round < 2 ? LANES : 1 + (round + shift_value + 31) % LANES);  /* every special lane */
        }
    }
    {   /* every count, nothing past it (count 0 writes nothing) */
        int32_t acc[LANES], bias[LANES], multiplier[LANES], count;
        int8_t shift[LANES];
        for (c = 0; c < LANES; ++c) {
            acc[c] = (int32_t)(next_value(&state) << 12) - (1 << 27);
            bias[c] = c;
            multiplier[c] = 1518500250;
            shift[c] = (int8_t)-(c + 1);
        }
        for (count = 0; count <= LANES; ++count) {
            check(acc, bias, multiplier, shift, -3, count);
        }
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
