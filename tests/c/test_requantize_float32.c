/* Unit test of the bundle's integer form of onnxruntime's float32 requantization
 * (packager/templates/fixed_point_requantize_float32.h.in, with the prefix lp) against the float operations it
 * replaces: (float)acc * multiplier, clamped, rounded with C99's nearbyintf (ties to even in the default rounding
 * mode). Sums: every value in -70000..70000 (every tie of the multipliers 1/2, 1/4 and 3/8 in the output's range),
 * around 2^24, 2^31 - 1 and -2^31 (where float32(acc) rounds), and drawn over the whole int32 range; multipliers: the
 * ties', drawn ones over 2^-30..2^2 (their products near every half), the smallest normal and a subnormal one, and
 * 1e30 (overflow to infinity), and infinite ones (times nonzero sums); clamps: int8's bounds around zero points
 * -128..127 and narrower ones. Built by
 * tests/packager/test_requantize_float32_in_c.py on the host (strict warnings, sanitizers) and for rv32imc under
 * QEMU (soft float: the reference is the C library's). Prints "ok <count>" and exits 0, or names the first
 * failures and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "requantize_float32.h"

static uint32_t state = 2024u;

static uint32_t draw_bits(void)
{
    state = state * 1664525u + 1013904223u;
    return state;
}

static int32_t expected(int32_t acc, float multiplier, int32_t low, int32_t high)
{
    volatile float v = (float)acc;
    v = v * multiplier;
    const float clamped = v < (float)low ? (float)low : (v > (float)high ? (float)high : v);
    return (int32_t)nearbyintf(clamped);
}

static int32_t checks = 0, failures = 0;

static void check(int32_t acc, float multiplier, int32_t low, int32_t high)
{
    const int32_t ours = lp_requantize_float32(acc, multiplier, low, high);
    const int32_t want = expected(acc, multiplier, low, high);
    checks += 1;
    if (ours != want && failures++ < 10) {
        printf("lp_requantize_float32(%ld, %a, %ld, %ld) = %ld, expected %ld\n", (long)acc, (double)multiplier,
               (long)low, (long)high, (long)ours, (long)want);
    }
}

int main(void)
{
    static const float fixed[] = {0.5f, 0.25f, 0.375f, 1.0f, 3.0f, 1.1754944e-38f, 1e-45f, 1e30f, 1.0f / 3.0f};
    for (size_t m = 0; m < sizeof fixed / sizeof fixed[0]; ++m) {
        for (int32_t acc = -70000; acc <= 70000; acc += (m < 4 ? 1 : 7)) {
            check(acc, fixed[m], -128 - 5, 127 - 5);
        }
    }
    for (int32_t k = 0; k < 60000; ++k) {
        /* a multiplier of 2^-30..2^2, an int32 sum of any size, an int8 clamp around any zero point */
        const int32_t exponent = (int32_t)(draw_bits() % 33u) - 30;
        const float multiplier = ldexpf(1.0f + (float)(draw_bits() & 0x7fffffu) / 8388608.0f, exponent);
        const int32_t shift = (int32_t)(draw_bits() % 32u);
        const int32_t acc = (int32_t)draw_bits() >> shift;
        const int32_t zero_point = (int32_t)(draw_bits() % 256u) - 128;
        const int32_t low = (k % 5 == 0) ? -zero_point : -128 - zero_point, high = 127 - zero_point;
        check(acc, multiplier, low, high);
        check(acc, -multiplier, low, high);
        /* a sum whose product lies near a half: acc = (n + 1/2) / multiplier, and its neighbours */
        const float target = (float)((int32_t)(draw_bits() % 255u) - 127) + 0.5f;
        const float near = target / multiplier;
        if (near > -2.0e9f && near < 2.0e9f) {
            for (int32_t d = -2; d <= 2; ++d) {
                check((int32_t)near + d, multiplier, -128 - zero_point, high);
            }
        }
    }
    static const int32_t edges[] = {16777215, 16777216, 16777217, 16777219, 33554435, 2147483647, -2147483647 - 1,
                                    -16777217, -16777219, 1, -1, 0};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; ++e) {
        for (int32_t exponent = -40; exponent <= 2; ++exponent) {
            check(edges[e], ldexpf(1.0f, exponent), -128, 127);
            check(edges[e], ldexpf(1.5f, exponent), -128, 127);
            check(edges[e], ldexpf(1.9999999f, exponent), -255, 255);
        }
    }
    /* an infinite multiplier times a nonzero sum: the bound of the product's sign (no float operation in ours) */
    static const int32_t nonzero[] = {1, -1, 70000, -70000, 2147483647, -2147483647 - 1};
    for (size_t e = 0; e < sizeof nonzero / sizeof nonzero[0]; ++e) {
        check(nonzero[e], INFINITY, -128, 127);
        check(nonzero[e], -INFINITY, -100, 27);
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
