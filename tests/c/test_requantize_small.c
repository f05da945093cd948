/* Unit test of the DSP requantization epilogue (backends/cortex_m/helpers/templates/requantize_small.h.in, with
 * the prefix lp) against the bundle's scalar helpers it replaces (packager/templates/
 * fixed_point_requantize_double_small.h.in and fixed_point_saturate_int8.h.in), on their domain: every shift
 * -31..-1, with the other lanes of a tile at other shifts (each lane's own byte of the shift word), sums
 * acc + bias at -2^30, 2^30 - 1 and around zero, exact ties of the rounding right shift of either sign (and
 * their neighbours), multipliers 0, 1, 2^30, INT32_MAX, INT32_MIN + 1 and drawn ones, biases that move the
 * sum across zero, zero points that saturate either end, int32 and int16 biases, and every count 0..9 (a
 * tile, two, and the lanes after them: nothing written past count); the lookup variants (_lut_s8, _lut_s8_b16)
 * against the same value looked up in a table of distinct entries (every index 0..255 reachable), where the
 * header defines them (LP_REQUANTIZE_SMALL_LUT: the Cortex-M and the RISC-V ones); the zero point
 * -128 through a call that passes it as a constant (the Cortex-M helpers then leave out the negative's lowering);
 * every int8 zero point at every shift on the ties, and 10^7 drawn lanes (sums of every magnitude). Built by
 * tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under QEMU
 * (SMMULR, ASR by a register's low byte, SSAT). Prints "ok <count>" and exits 0, or names the first failure
 * and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_small.h"

#define LANES 9
#define GUARD 3 /* bytes after the outputs that must keep their value */
#define SMALL (1 << 30) /* the sums lie in [-SMALL, SMALL) */
#if !defined(RANDOM_CALLS)
#define RANDOM_CALLS 1200000 /* calls of LANES drawn lanes each (over 10^7 cases) */
#endif

static int32_t checks = 0, failures = 0;

/* What the scalar epilogue the helper replaces stores. */
static int8_t expected_out(int32_t acc, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    const int32_t requantized = lp_requantize_double_small(acc + bias, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* Where a helper writes the outputs `out` of count lanes: a guarded copy (guarded_buffers.h) in slot 5 where guarded
   (copied back by outputs_back), else out. */
static int8_t *outputs_at(int8_t *out, int32_t count, int guarded)
{
    return guarded ? guarded_copy(5, out, count) : out;
}

static void outputs_back(int8_t *out, int32_t count, int guarded)
{
    if (guarded) {
        guarded_back(5, out, count);
    }
}

/* The int32-bias helper and its lookup variant with the zero point -128 as a constant at the call (the helpers then
   leave out the negative's lowering: requantize_small_lowers). */
static void requantize_floor(int8_t *out, int8_t *lut, const int32_t *acc, const int32_t *bias,
                             const int32_t *multiplier, const int8_t *shift, int32_t count, const int8_t *table,
                             int guarded)
{
    lp_requantize_small_s8(outputs_at(out, count, guarded), acc, bias, multiplier, shift, -128, count);
    outputs_back(out, count, guarded);
#if defined(LP_REQUANTIZE_SMALL_LUT)
    lp_requantize_small_lut_s8(outputs_at(lut, count, guarded), acc, bias, multiplier, shift, -128, count, table);
    outputs_back(lut, count, guarded);
#else
    (void)lut;
    (void)table;
    (void)guarded;
#endif
}

/* Both helpers on count lanes of acc, bias (int32, and the same values as int16 where the int16 ones are
   given), multiplier, shift; every output compared, the guard bytes kept. Where guarded, every buffer handed over
   exactly (the table its 256 bytes) against no-access memory (guarded_buffers.h; under QEMU each guarded access
   takes the slow path, so the sweeps of values run on the plain buffers). */
static void check(const int32_t *acc, const int32_t *bias, const int16_t *bias16, const int32_t *multiplier,
                  const int8_t *shift, int32_t zero_point, int32_t count, int guarded)
{
    int8_t out[LANES + GUARD], out16[LANES + GUARD], lut[LANES + GUARD], lut16[LANES + GUARD], table[256];
    int32_t c;
    for (c = 0; c < 256; ++c) {
        table[c] = (int8_t)(uint8_t)(c * 37 + 11); /* a permutation of the int8 values: each index its own */
    }
    for (c = 0; c < LANES + GUARD; ++c) {
        out[c] = out16[c] = lut[c] = lut16[c] = (int8_t)0x5a;
    }
    const int32_t *const g_acc = guarded ? guarded_copy(0, acc, 4 * count) : acc;
    const int32_t *const g_bias = guarded ? guarded_copy(1, bias, 4 * count) : bias;
    const int16_t *const g_bias16 = guarded && bias16 != NULL ? guarded_copy(2, bias16, 2 * count) : bias16;
    const int32_t *const g_multiplier = guarded ? guarded_copy(3, multiplier, 4 * count) : multiplier;
    const int8_t *const g_shift = guarded ? guarded_copy(4, shift, count) : shift;
    const int8_t *const g_table = guarded ? guarded_copy(6, table, 256) : table;
    if (zero_point == -128) { /* the constant's form: the same outputs */
        requantize_floor(out, lut, g_acc, g_bias, g_multiplier, g_shift, count, g_table, guarded);
    } else {
        lp_requantize_small_s8(outputs_at(out, count, guarded), g_acc, g_bias, g_multiplier, g_shift, zero_point,
                               count);
        outputs_back(out, count, guarded);
    }
    if (bias16 != NULL) {
        lp_requantize_small_s8_b16(outputs_at(out16, count, guarded), g_acc, g_bias16, g_multiplier, g_shift,
                                   zero_point, count);
        outputs_back(out16, count, guarded);
    }
#if defined(LP_REQUANTIZE_SMALL_LUT) /* the lookup variants (the DSP and the RISC-V epilogues define them) */
    if (zero_point != -128) {
        lp_requantize_small_lut_s8(outputs_at(lut, count, guarded), g_acc, g_bias, g_multiplier, g_shift, zero_point,
                                   count, g_table);
        outputs_back(lut, count, guarded);
    }
    if (bias16 != NULL) {
        lp_requantize_small_lut_s8_b16(outputs_at(lut16, count, guarded), g_acc, g_bias16, g_multiplier, g_shift,
                                       zero_point, count, g_table);
        outputs_back(lut16, count, guarded);
    }
#endif
    for (c = 0; c < LANES + GUARD; ++c) {
        const int8_t want = c < count ? expected_out(acc[c], bias[c], multiplier[c], shift[c], zero_point)
                                      : (int8_t)0x5a;
#if defined(LP_REQUANTIZE_SMALL_LUT)
        const int8_t want_lut = c < count ? table[want + 128] : (int8_t)0x5a;
#else
        const int8_t want_lut = (int8_t)0x5a; /* lut and lut16 untouched */
        (void)table;
#endif
        checks += bias16 != NULL ? 4 : 2;
        if (out[c] != want || (bias16 != NULL && out16[c] != want) || lut[c] != want_lut
                || (bias16 != NULL && lut16[c] != want_lut)) {
            if (failures++ < 8) {
                printf("FAIL lane %ld of %ld: acc %ld bias %ld multiplier %ld shift %d zero point %ld: got %d/%d,"
                       " expected %d (looked up: got %d/%d, expected %d)\n", (long)c, (long)count,
                       (long)acc[c < LANES ? c : 0], (long)bias[c < LANES ? c : 0],
                       (long)multiplier[c < LANES ? c : 0], (int)shift[c < LANES ? c : 0], (long)zero_point,
                       out[c], out16[c], want, lut[c], lut16[c], want_lut);
            }
        }
    }
}

/* Sums that, with multiplier INT32_MAX (a high multiply that returns acc for |acc| < 2^30) and shift -e, put
   the rounding right shift on a tie of either sign and on its neighbours; then the domain's ends. */
static int32_t special_acc(int32_t e, int32_t i)
{
    static const int32_t extremes[] = {-SMALL, SMALL - 1, -SMALL + 1, SMALL - 2, 0, 1, -1, 2, -2, 3};
    const int32_t n_ties = 6;
    if (i < n_ties && e >= 1 && e <= 29) {
        const int32_t half = (int32_t)1 << (e - 1), sign = i % 2 == 0 ? 1 : -1;
        const int32_t around = (i / 2) - 1; /* -1, 0, +1 */
        return sign * (3 * half >= SMALL - 1 ? half : 3 * half) + around;
    }
    return extremes[i % (int32_t)(sizeof extremes / sizeof extremes[0])];
}

/* A drawn sum in [-SMALL, SMALL). */
static int32_t draw_small(uint32_t *state)
{
    const uint32_t high = next_value(state) << 15;
    return (int32_t)((high ^ next_value(state)) & (2u * SMALL - 1u)) - SMALL;
}

int main(void)
{
    static const int32_t multipliers[] = {INT32_MAX, 1 << 30, 0, 1, INT32_MIN + 1, 1518500250, 1073741825,
                                          -1073741824};
    static const int32_t zero_points[] = {0, -128, 127, 5, -1000, -(1 << 28), (1 << 28) - 1};
    uint32_t state = 1;
    int32_t shift_value, round, c;
    for (shift_value = -31; shift_value <= -1; ++shift_value) {
        for (round = 0; round < 24; ++round) {
            int32_t acc[LANES], bias[LANES], multiplier[LANES];
            int16_t bias16[LANES];
            int8_t shift[LANES];
            for (c = 0; c < LANES; ++c) {
                const int32_t lane = round * LANES + c;
                const int32_t sum = round < 2 ? special_acc(-shift_value, lane) : draw_small(&state);
                /* the bias takes part of the sum (within int16): acc + bias is the sum */
                bias[c] = round < 2 ? 0 : (int32_t)(next_value(&state) % 60001) - 30000;
                bias16[c] = (int16_t)bias[c];
                acc[c] = sum - bias[c];
                multiplier[c] = round < 2 ? INT32_MAX : (round % 4 == 0 ? multipliers[(round + c) % 8]
                                                                          : (int32_t)(next_value(&state) << 15));
                /* mostly this shift, every third lane another (per-channel shifts: each lane reads its own
                   byte of the tile's shift word); the special rounds' ties all at this shift */
                shift[c] = (int8_t)(round >= 2 && c % 3 == 2 ? -1 - (-1 - shift_value + 7 * c) % 31 : shift_value);
            }
            check(acc, bias, bias16, multiplier, shift, zero_points[round % 7],
                  round < 2 ? LANES : 1 + (round + shift_value + 31) % LANES, 1);  /* every special lane */
        }
    }
    {   /* every zero point -128..127 at every shift, on the ties and the domain's ends, with multipliers 2^30,
           INT32_MAX and one drawn */
        int32_t zero_point, lane;
        for (zero_point = -128; zero_point <= 127; ++zero_point) {
            for (shift_value = -31; shift_value <= -1; ++shift_value) {
                for (round = 0; round < 3; ++round) {
                    int32_t acc[LANES], bias[LANES], multiplier[LANES];
                    int16_t bias16[LANES];
                    int8_t shift[LANES];
                    for (c = 0; c < LANES; ++c) {
                        lane = round * LANES + c;
                        acc[c] = special_acc(-shift_value, lane % 10);
                        /* with multiplier 2^30 the high multiply halves: ties at twice the sum */
                        if (round == 1 && lane % 10 < 6) {
                            acc[c] = acc[c] * 2 > -SMALL && acc[c] * 2 < SMALL ? acc[c] * 2 : acc[c];
                        }
                        bias[c] = 0;
                        bias16[c] = 0;
                        multiplier[c] = round == 0 ? INT32_MAX : (round == 1 ? 1 << 30 : 1518500250);
                        shift[c] = (int8_t)shift_value;
                    }
                    check(acc, bias, bias16, multiplier, shift, zero_point, LANES, 0);
                }
            }
        }
    }
    {   /* drawn cases: sums of every magnitude (a drawn sum shifted right 0..30: the ties of small shifts too),
           multipliers mostly the quantized ones (2^30..2^31 - 1), every shift, int8 zero points and the domain's
           ends */
        int32_t call;
        for (call = 0; call < RANDOM_CALLS; ++call) {
            int32_t acc[LANES], bias[LANES], multiplier[LANES];
            int16_t bias16[LANES];
            int8_t shift[LANES];
            const uint32_t pick = next_value(&state);
            const int32_t zero_point = pick % 16u == 0 ? (pick % 32u == 0 ? -(1 << 28) : (1 << 28) - 1)
                                                       : (int32_t)((pick >> 8) % 256u) - 128;
            for (c = 0; c < LANES; ++c) {
                const int32_t sum = draw_small(&state) >> (next_value(&state) % 31u);
                const uint32_t m = next_value(&state) << 15 ^ next_value(&state);
                bias[c] = (int32_t)(next_value(&state) % 65536u) - 32768;
                bias16[c] = (int16_t)bias[c];
                acc[c] = (int32_t)((uint32_t)sum - (uint32_t)bias[c]);
                multiplier[c] = m % 8u == 0 ? (int32_t)(m | 1u) /* any drawn */
                                            : (int32_t)((m & 0x3fffffffu) | 0x40000000u);
                shift[c] = (int8_t)(-1 - (int32_t)(next_value(&state) % 31u));
            }
            check(acc, bias, bias16, multiplier, shift, zero_point, LANES, 0);
        }
    }
    {   /* every count, nothing past it (count 0 writes nothing); int32 biases beyond int16 */
        int32_t acc[LANES], bias[LANES], multiplier[LANES], count;
        int8_t shift[LANES];
        for (c = 0; c < LANES; ++c) {
            acc[c] = (int32_t)(next_value(&state) << 12) - (1 << 27);
            bias[c] = (c % 2 == 0 ? 1 : -1) * (1 << 24) + c;
            multiplier[c] = 1518500250;
            shift[c] = (int8_t)-(c + 1);
        }
        for (count = 0; count <= LANES; ++count) {
            check(acc, bias, NULL, multiplier, shift, -3, count, 1);
        }
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
