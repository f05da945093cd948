/* Unit test of the bundle's rounding of small floats (packager/templates/round_half_even_small.h.in, with the prefix
 * lp) against C99's nearbyintf (ties to even in the default rounding mode): every multiple of 1/4 in -70000..70000
 * (every tie there, and the values a quarter either side), each tie's float neighbours, the edges near 2^22, and
 * values drawn over the whole contract (|value| <= 2^22) and at every exponent. Built by
 * tests/packager/test_round_half_even_small_in_c.py on the host (strict warnings, sanitizers). Prints "ok <count>"
 * and exits 0, or names the first failures and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "float_rounding_cases.h"
#include "round_half_even_small.h"

static int32_t checks = 0, failures = 0;

static void check(float value)
{
    const int32_t ours = lp_round_half_even_small(value);
    const int32_t want = (int32_t)nearbyintf(value);
    checks += 1;
    if (ours != want && failures++ < 10) {
        printf("lp_round_half_even_small(%a) = %ld, expected %ld\n", (double)value, (long)ours, (long)want);
    }
}

int main(void)
{
    static const float edges[] = {4194304.0f, 4194303.5f, 4194303.0f, 4194302.5f, 2097151.5f, 2097152.5f,
                                  0.49999997f, 0.50000006f, 1.4999999f, 2.5000002f, 1e-45f, 0.0f, -0.0f};
    /* any float of magnitude 2^-30..2^22, either sign */
    const float_rounding_cases cases = {280000, edges, sizeof edges / sizeof edges[0], 200000, -30, 53u, 4194304.0f};
    check_float_rounding_cases(&cases, check);
    return float_rounding_verdict(checks, failures);
}
