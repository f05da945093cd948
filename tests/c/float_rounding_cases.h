/* The float values the unit tests of the bundle's rounding helpers check (tests/c/test_round_half_even_small.c,
 * tests/c/test_saturate_half_even.c), each passed to the test's own check: every multiple of 1/4 in
 * [-quarters / 4, quarters / 4] (every tie there) and its float neighbours, each edge and its negation, and `draws`
 * values drawn at the exponents lowest_exponent .. lowest_exponent + exponents - 1, either sign, those of magnitude
 * `largest` or less. Also the verdict both print: "ok <checks>" and 0, or "FAIL <failures> of <checks>" and 1. The
 * test programs' Python drivers copy this header beside the program (on the host and under QEMU). */
#ifndef FLOAT_ROUNDING_CASES_H
#define FLOAT_ROUNDING_CASES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    int32_t quarters;
    const float *edges;
    size_t edge_count;
    int32_t draws;
    int32_t lowest_exponent;
    uint32_t exponents;
    float largest;
} float_rounding_cases;

static uint32_t float_rounding_state = 2026u;

static uint32_t float_rounding_draw_bits(void)
{
    float_rounding_state = float_rounding_state * 1664525u + 1013904223u;
    return float_rounding_state;
}

static void check_float_rounding_cases(const float_rounding_cases *cases, void (*check)(float))
{
    for (int32_t quarter = -cases->quarters; quarter <= cases->quarters; ++quarter) {
        const float value = (float)quarter * 0.25f;
        check(value);
        check(nextafterf(value, 1e9f));
        check(nextafterf(value, -1e9f));
    }
    for (size_t e = 0; e < cases->edge_count; ++e) {
        check(cases->edges[e]);
        check(-cases->edges[e]);
    }
    for (int32_t k = 0; k < cases->draws; ++k) {
        const int32_t exponent = (int32_t)(float_rounding_draw_bits() % cases->exponents) + cases->lowest_exponent;
        const float value = ldexpf(1.0f + (float)(float_rounding_draw_bits() & 0x7fffffu) / 8388608.0f, exponent - 1);
        if (fabsf(value) <= cases->largest) {
            check(value);
            check(-value);
        }
    }
}

static int float_rounding_verdict(int32_t checks, int32_t failures)
{
    if (failures != 0) {
        printf("FAIL %ld of %ld\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}

#endif
