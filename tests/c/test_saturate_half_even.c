/* Unit test of the bundle's saturating rounding (packager/templates/saturate_half_even.h.in, with the prefix lp)
 * against the clamp then C99's nearbyintf (ties to even in the default rounding mode) that onnxruntime computes:
 * for the int8 range with zero points -128, -7, 0, 5 and 127, the uint8 range with 0, 128 and 255 and the int16
 * range with 0 (the helper's three forms where the core saturates: SSAT, USAT, the compares), every multiple of 1/4
 * in -400..400 and its float neighbours, the edges of int32 and beyond (to the infinities), and values drawn at every
 * exponent. Built by tests/packager/test_saturate_half_even_in_c.py on the host (strict warnings, sanitizers: the
 * float clamp's form) and under QEMU on cortex-m4f and cortex-m55 (VCVTR, QADD, SSAT). Prints "ok <count>" and exits 0, or names
 * the first failures and exits 1. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "float_rounding_cases.h"
#include "saturate_half_even.h"

static int32_t checks = 0, failures = 0;

static void expect(int32_t ours, float value, int32_t zero_point, int32_t low, int32_t high)
{
    const float below = (float)(low - zero_point), above = (float)(high - zero_point);
    const float clamped = fminf(fmaxf(value, below), above);
    const int32_t want = (int32_t)nearbyintf(clamped) + zero_point;
    checks += 1;
    if (ours != want && failures++ < 10) {
        printf("lp_saturate_half_even(%a, %ld, %ld, %ld) = %ld, expected %ld\n", (double)value, (long)zero_point,
               (long)low, (long)high, (long)ours, (long)want);
    }
}

/* The helper called as the kernels call it: the range's bounds constants. */
static void check(float value)
{
    static const int32_t int8_zero_points[] = {-128, -7, 0, 5, 127};
    static const int32_t uint8_zero_points[] = {0, 128, 255};
    for (size_t z = 0; z < sizeof int8_zero_points / sizeof int8_zero_points[0]; ++z) {
        expect(lp_saturate_half_even(value, int8_zero_points[z], -128, 127), value, int8_zero_points[z], -128, 127);
    }
    for (size_t z = 0; z < sizeof uint8_zero_points / sizeof uint8_zero_points[0]; ++z) {
        expect(lp_saturate_half_even(value, uint8_zero_points[z], 0, 255), value, uint8_zero_points[z], 0, 255);
    }
    expect(lp_saturate_half_even(value, 0, -32768, 32767), value, 0, -32768, 32767);
}

int main(void)
{
    static const float edges[] = {32767.5f, 32768.5f, 40000.0f, 4194304.5f, 8388608.0f, 2147483520.0f,
                                  2147483648.0f, 4294967296.0f, 1e20f, FLT_MAX, INFINITY, 0.49999997f, 0.50000006f,
                                  1e-45f, 0.0f};
    /* any finite float of magnitude 2^-30..2^40, either sign */
    const float_rounding_cases cases = {1600, edges, sizeof edges / sizeof edges[0], 20000, -30, 71u, INFINITY};
    check_float_rounding_cases(&cases, check);
    return float_rounding_verdict(checks, failures);
}
