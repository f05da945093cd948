/* Unit test of the RISC-V requantization epilogue of TFLite's double rounding for any sum and shift
 * (backends/riscv/helpers/templates/requantize_small.h.in: lp_requantize_double_s8 and lp_requantize_double_s8_b16,
 * with the prefix lp) against the bundle's scalar helpers it replaces (lp_requantize_double, lp_saturate_int8):
 * every shift -31..30, sums over the whole int32 range (its ends, ties of the rounding right shift and their
 * neighbours, drawn values; acc + bias wrapping), multipliers at the extremes (INT32_MIN included) and drawn,
 * zero points in and beyond int8, int32 and int16 biases, counts 0..LANES with nothing written past them. Built by
 * tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc and rv32imafc, under QEMU virt. Prints
 * "ok <checks>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "requantize_small.h"

#define LANES 11
#define GUARD 3 /* bytes after the outputs that must keep their value */

static int32_t checks = 0, failures = 0;

/* What the scalar epilogue the helper replaces stores for the sum acc + bias (wrapping as int32). */
static int8_t expected_out(int32_t acc, int32_t bias, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    const int32_t requantized = lp_requantize_double((int32_t)((uint32_t)acc + (uint32_t)bias), multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* Both helpers on count lanes (bias16: the int16 biases, used where not NULL, and then bias holds their values). */
static void check(const int32_t *acc, const int32_t *bias, const int16_t *bias16, const int32_t *multiplier,
                  const int8_t *shift, int32_t zero_point, int32_t count)
{
    int8_t out[LANES + GUARD], out16[LANES + GUARD];
    int32_t c;
    for (c = 0; c < LANES + GUARD; ++c) {
        out[c] = out16[c] = (int8_t)0x5a;
    }
    int32_t returned = lp_requantize_double_s8(out, acc, bias, multiplier, shift, zero_point, count);
    if (bias16 != NULL) {
        returned |= lp_requantize_double_s8_b16(out16, acc, bias16, multiplier, shift, zero_point, count);
    }
    for (c = 0; c < LANES + GUARD; ++c) {
        const int8_t want = c < count ? expected_out(acc[c], bias[c], multiplier[c], shift[c], zero_point)
                                      : (int8_t)0x5a;
        checks += 1;
        if (returned != 0 || out[c] != want || (bias16 != NULL && out16[c] != want)) {
            if (failures++ < 8) {
                printf("FAIL lane %ld of %ld: acc %ld bias %ld multiplier %ld shift %d zero point %ld: got %d/%d,"
                       " expected %d\n", (long)c, (long)count, (long)acc[c < LANES ? c : 0],
                       (long)bias[c < LANES ? c : 0], (long)multiplier[c < LANES ? c : 0],
                       (int)shift[c < LANES ? c : 0], (long)zero_point, out[c], out16[c], want);
            }
        }
    }
}

/* A sum at the int32 range's ends, on a tie of the rounding right shift by e (multiplier INT32_MAX keeps it
   nearly) or beside one, or drawn over the whole range. */
static int32_t special_acc(int32_t e, int32_t i, uint32_t *state)
{
    static const int32_t extremes[] = {INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, 0, 1, -1};
    const int32_t n = (int32_t)(sizeof extremes / sizeof extremes[0]);
    if (i < n) {
        return extremes[i];
    }
    if (i < n + 6 && e >= 1 && e <= 30) {
        const int32_t half = (int32_t)1 << (e - 1), sign = i % 2 == 0 ? 1 : -1;
        return sign * half + (i - n) / 2 - 1;
    }
    return (int32_t)((next_value(state) << 16) ^ next_value(state));
}

int main(void)
{
    static const int32_t multipliers[] = {INT32_MAX, 1 << 30, 0, 1, INT32_MIN, INT32_MIN + 1, 1518500250,
                                          -1073741824};
    static const int32_t zero_points[] = {0, -128, 127, 5, -1000, 300};
    uint32_t state = 7;
    int32_t shift_value, round, c;
    for (shift_value = -31; shift_value <= 30; ++shift_value) {
        for (round = 0; round < 12; ++round) {
            int32_t acc[LANES], bias[LANES], multiplier[LANES];
            int16_t bias16[LANES];
            int8_t shift[LANES];
            const int narrow = round % 2 == 1;
            for (c = 0; c < LANES; ++c) {
                const int32_t lane = round * LANES + c;
                bias16[c] = (int16_t)(int32_t)(next_value(&state) % 65536u - 32768u);
                bias[c] = narrow ? bias16[c] : (round < 4 ? 0 : (int32_t)(next_value(&state) << 8));
                acc[c] = special_acc(shift_value < 0 ? -shift_value : 0, lane % 20, &state);
                multiplier[c] = round < 4 ? (round < 2 ? INT32_MAX : multipliers[(lane + c) % 8])
                                          : (int32_t)((next_value(&state) << 8) ^ next_value(&state));
                /* mostly this shift, every third lane another */
                shift[c] = (int8_t)(c % 3 == 2 ? (shift_value + 31 + 7 * c) % 62 - 31 : shift_value);
            }
            check(acc, bias, narrow ? bias16 : NULL, multiplier, shift, zero_points[round % 6],
                  round < 4 ? LANES : (round + shift_value + 31) % (LANES + 1));
        }
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld checks\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
