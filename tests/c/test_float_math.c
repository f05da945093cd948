/* Unit test of the bundle's portable float math (packager/templates/float_math_*.h.in, with the prefix lp):
 * lp_expf, lp_logf, lp_tanhf and lp_erff.
 *
 * 1. On the cases of float_math_cases.h (written by tests/packager/test_float_math_in_c.py: each function's NaN,
 *    infinities, signed zeros, overflow and underflow thresholds and their neighbours, subnormal results and
 *    operands, and random operands), each result is at most the case's float steps (1) from the correctly rounded
 *    one there (computed in double precision), and equal to it where the case says 0 steps (the special values).
 *    A NaN is any NaN.
 * 2. Every FLOAT_MATH_SWEEP-th float of each function's domain (-D; default 16411) is computed; built with
 *    -DFLOAT_MATH_DENSE (the host only: it takes a double-precision libm), each result's error against the
 *    double-precision function is at most MAX_ULP of the correctly rounded result, its largest printed. With
 *    -DFLOAT_MATH_ONLY=<function> only that function's domain is swept (-DFLOAT_MATH_SWEEP=1u: every float).
 * 3. A checksum of every result of (1) and (2) is printed, "sum <hex>": the same bits on every core and
 *    compiler is the helpers' contract, which the test checks by comparing the sums.
 * Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "float_math.h"
#include "float_math_cases.h" /* FLOAT_MATH_CASES: { function (FUNCTIONS), x, correctly rounded, float steps } */

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
static uint32_t checks = 0u; /* every float of the domains: up to 2^32 */
static int32_t failures = 0;

static void sum_in(uint32_t bits)
{
    uint32_t word = is_nan_bits(bits) ? 0x7fc00000u : bits; /* a NaN's payload is not the contract */
    for (int byte = 0; byte < 4; ++byte) {
        checksum = (checksum ^ (word & 0xffu)) * 16777619u;
        word >>= 8;
    }
}

/* The helpers under test, by number (the cases' first column), and their names. */
static float (*const HELPERS[])(float) = {lp_expf, lp_logf, lp_tanhf, lp_erff};
static const char *const FUNCTIONS[] = {"expf", "logf", "tanhf", "erff"};
#define FUNCTION_COUNT 4u

static float apply(uint32_t function, float x)
{
    return HELPERS[function](x);
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

/* Each function's largest error allowed on the dense sweep, in ULPs. */
static const double MAX_ULP[FUNCTION_COUNT] = {1.0, 1.0, 1.5, 1.0};
static double worst[FUNCTION_COUNT];
/* Each helper's function in double precision. */
static double (*const REFERENCES[FUNCTION_COUNT])(double) = {exp, log, tanh, erf};
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
        checks += 1u;
#ifdef FLOAT_MATH_DENSE
        const double exact = REFERENCES[function]((double)x);
        const double error = ulp_error(ours, exact);
        if (error > worst[function]) {
            worst[function] = error;
        }
        if (error > MAX_ULP[function] && failures++ < 10) {
            printf("%s(%08lx) = %.9g: %.3f ULP from %.17g\n", FUNCTIONS[function], (unsigned long)bits,
                   (double)ours, error, exact);
        }
#endif
    }
}

/* Whether `ours` is at most `steps` float steps from `expected` (both of one sign; 0 and 2^-149 one step apart,
   FLT_MAX and infinity too; the same bits for 0 steps), or both NaN. */
static int within_steps(uint32_t ours, uint32_t expected, uint32_t steps)
{
    if (is_nan_bits(ours) || is_nan_bits(expected)) {
        return is_nan_bits(ours) && is_nan_bits(expected);
    }
    if (steps == 0u) {
        return ours == expected;
    }
    if ((ours >> 31) != (expected >> 31)) {
        return (ours << 1) == 0u && (expected << 1) == 0u;
    }
    return ours - expected + steps <= 2u * steps;
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
        checks += 1u;
        if (!within_steps(ours_bits, c[2], c[3]) && failures++ < 10) {
            printf("%s(%08lx) = %08lx, correctly rounded %08lx (steps allowed: %lu)\n", FUNCTIONS[c[0]],
                   (unsigned long)c[1], (unsigned long)ours_bits, (unsigned long)c[2], (unsigned long)c[3]);
        }
    }
    static const uint32_t DOMAINS[][3] = {
        {0u, 0x00000000u, 0x42b17218u}, /* expf: +0 to the overflow threshold */
        {0u, 0x80000000u, 0xc2cff1b6u}, /* expf: -0 to the underflow threshold */
        {1u, 0x00000001u, 0x7f7fffffu}, /* logf: every positive finite float */
        {2u, 0x00000000u, 0x7f800000u}, /* tanhf: every positive float */
        {2u, 0x80000000u, 0xff800000u}, /* tanhf: every negative float */
        {3u, 0x00000000u, 0x7f800000u}, /* erff: every positive float */
        {3u, 0x80000000u, 0xff800000u}, /* erff: every negative float */
    };
    for (size_t d = 0; d < sizeof DOMAINS / sizeof DOMAINS[0]; ++d) {
#ifdef FLOAT_MATH_ONLY
        if (DOMAINS[d][0] != (uint32_t)FLOAT_MATH_ONLY) {
            continue;
        }
#endif
        sweep(DOMAINS[d][0], DOMAINS[d][1], DOMAINS[d][2]);
    }
#ifdef FLOAT_MATH_DENSE
    printf("worst");
    for (uint32_t f = 0; f < FUNCTION_COUNT; ++f) {
        printf(" %s %.4f ULP", FUNCTIONS[f], worst[f]);
    }
    printf("\n");
#endif
    printf("sum %08lx\n", (unsigned long)checksum);
    if (failures != 0) {
        printf("FAILED %ld of %lu\n", (long)failures, (unsigned long)checks);
        return 1;
    }
    printf("ok %lu\n", (unsigned long)checks);
    return 0;
}
