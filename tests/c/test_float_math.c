/* Unit test of the bundle's portable float math (packager/templates/float_math_*.h.in, with the prefix lp):
 * lp_expf and lp_logf.
 *
 * 1. On the cases of float_math_cases.h (written by tests/packager/test_float_math_in_c.py: each function's NaN,
 *    infinities, signed zeros, overflow and underflow thresholds and their neighbours, subnormal results and
 *    operands, and random operands), each result is at most one float step (1 ULP) from the correctly rounded
 *    one there (computed in double precision), and equal to it where the case says so (the special values).
 *    A NaN is any NaN.
 * 2. Every FLOAT_MATH_SWEEP-th float of each function's domain (-D; default 16411) is computed; built with
 *    -DFLOAT_MATH_DENSE (the host only: it takes a double-precision libm), each result's error against the
 *    double-precision exp or log is at most 1 ULP of the correctly rounded result, its largest printed.
 * 3. A checksum of every result of (1) and (2) is printed, "sum <hex>": the same bits on every core and
 *    compiler is the helpers' contract, which the test checks by comparing the sums.
 * Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "float_math.h"
#include "float_math_cases.h" /* FLOAT_MATH_CASES: { function (0 expf, 1 logf), x, correctly rounded, exactly } */

#ifndef FLOAT_MATH_SWEEP
#define FLOAT_MATH_SWEEP 16411u
#endif

#ifdef FLOAT_MATH_DENSE
#include <math.h>
#endif

static int is_nan_bits(uint32_t bits)
{
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0u;
}

static uint32_t checksum = 2166136261u;
static int32_t checks = 0, failures = 0;

static void sum_in(uint32_t bits)
{
    uint32_t word = is_nan_bits(bits) ? 0x7fc00000u : bits; /* a NaN's payload is not the contract */
    for (int byte = 0; byte < 4; ++byte) {
        checksum = (checksum ^ (word & 0xffu)) * 16777619u;
        word >>= 8;
    }
}

static float apply(uint32_t function, float x)
{
    return function == 0u ? lp_expf(x) : lp_logf(x);
}

#ifdef FLOAT_MATH_DENSE
/* The error of `ours` in ULPs of the correctly rounded result of `exact` (its float rounding's ULP). */
static double ulp_error(float ours, double exact)
{
    const float rounded = (float)exact;
    if (isinf(rounded) || rounded == 0.0f) {
        return ours == rounded ? 0.0 : (isinf(ours) || ours == 0.0f || fabs((double)ours) <= 0x1p-149 ? 1.0 : 1e9);
    }
    int exponent;
    (void)frexp((double)rounded, &exponent);
    if (exponent < -125) {
        exponent = -125; /* subnormal results: the ULP is 2^-149 */
    }
    const double ulp = ldexp(1.0, exponent - 24);
    return fabs((double)ours - exact) / ulp;
}

static double worst[2] = {0.0, 0.0};
#endif

/* Every FLOAT_MATH_SWEEP-th float from bits `first` to `last` through `function`, summed (and, with
   FLOAT_MATH_DENSE, checked against double precision). */
static void sweep(uint32_t function, uint32_t first, uint32_t last)
{
    for (uint32_t bits = first; bits <= last && bits >= first; bits += FLOAT_MATH_SWEEP) {
        float x;
        memcpy(&x, &bits, sizeof x);
        const float ours = apply(function, x);
        uint32_t ours_bits;
        memcpy(&ours_bits, &ours, sizeof ours_bits);
        sum_in(ours_bits);
        checks += 1;
#ifdef FLOAT_MATH_DENSE
        const double exact = function == 0u ? exp((double)x) : log((double)x);
        const double error = ulp_error(ours, exact);
        if (error > worst[function]) {
            worst[function] = error;
        }
        if (error > 1.0 && failures++ < 10) {
            printf("%s(%08lx) = %.9g: %.3f ULP from %.17g\n", function == 0u ? "expf" : "logf", (unsigned long)bits,
                   (double)ours, error, exact);
        }
#endif
    }
}

/* Whether `ours` is at most one float step from `expected` (both of one sign; 0 and 2^-149 one step apart,
   FLT_MAX and infinity too), or both NaN. */
static int within_one_step(uint32_t ours, uint32_t expected)
{
    if (is_nan_bits(ours) || is_nan_bits(expected)) {
        return is_nan_bits(ours) && is_nan_bits(expected);
    }
    if ((ours >> 31) != (expected >> 31)) {
        return (ours << 1) == 0u && (expected << 1) == 0u;
    }
    return ours - expected + 1u <= 2u;
}

int main(void)
{
    const size_t count = sizeof FLOAT_MATH_CASES / sizeof FLOAT_MATH_CASES[0];
    for (size_t i = 0; i < count; ++i) {
        const uint32_t *c = FLOAT_MATH_CASES[i];
        float x;
        memcpy(&x, &c[1], sizeof x);
        const float ours = apply(c[0], x);
        uint32_t ours_bits;
        memcpy(&ours_bits, &ours, sizeof ours_bits);
        sum_in(ours_bits);
        checks += 1;
        const int exact_nan = is_nan_bits(ours_bits) && is_nan_bits(c[2]);
        const int good = c[3] != 0u ? ours_bits == c[2] || exact_nan : within_one_step(ours_bits, c[2]);
        if (!good && failures++ < 10) {
            printf("%s(%08lx) = %08lx, correctly rounded %08lx%s\n", c[0] == 0u ? "expf" : "logf",
                   (unsigned long)c[1], (unsigned long)ours_bits, (unsigned long)c[2], c[3] != 0u ? " exactly" : "");
        }
    }
    sweep(0u, 0x00000000u, 0x42b17218u); /* expf: +0 to the overflow threshold */
    sweep(0u, 0x80000000u, 0xc2cff1b6u); /* expf: -0 to the underflow threshold */
    sweep(1u, 0x00000001u, 0x7f7fffffu); /* logf: every positive finite float */
#ifdef FLOAT_MATH_DENSE
    printf("worst expf %.4f ULP, logf %.4f ULP\n", worst[0], worst[1]);
#endif
    printf("sum %08lx\n", (unsigned long)checksum);
    if (failures != 0) {
        printf("FAILED %ld of %ld\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
