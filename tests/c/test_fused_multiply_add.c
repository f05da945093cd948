/* Unit test of the bundle's fused multiply-add (packager/templates/fused_multiply_add.h.in, with the prefix lp):
 * lp_fma_integer (the integer arithmetic of cores without a floating-point unit for doubles) on every case of
 * finite operands, and lp_fma (whichever body the compiler's core selects) on every case, against the host C
 * library's fmaf (glibc's, exact), computed by tests/packager/test_fused_multiply_add_in_c.py into
 * fma_cases.h: the kernels' operands (dequantized int8 values times scales, sums of either sign), products on
 * a float tie moved off it by a tiny addend, cancellations, subnormal operands and results, overflow to
 * infinity, zeros of either sign, infinities and NaNs. Built on the host (strict warnings, sanitizers) and
 * for rv32imc under QEMU (soft float: the integer body). Prints "ok <count>" and exits 0, or names the first
 * failures and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fma.h"
#include "fma_cases.h" /* FMA_CASES: { x, y, z, fmaf(x, y, z) } as float bits */

static float from_bits(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t to_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static int is_nan_bits(uint32_t bits)
{
    return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0u;
}

/* Whether `ours` is `expected`: the same bits, or both NaN (a NaN's payload is not fmaf's contract). */
static int same(uint32_t ours, uint32_t expected)
{
    return ours == expected || (is_nan_bits(ours) && is_nan_bits(expected));
}

static int32_t checks = 0, failures = 0;

/* Counts one check of `name`'s result `ours` for case `c` against fmaf's; prints the first failures. */
static void check(const char *name, const uint32_t *c, uint32_t ours)
{
    checks += 1;
    if (!same(ours, c[3]) && failures++ < 10) {
        printf("%s(%08lx, %08lx, %08lx) = %08lx, fmaf: %08lx\n", name, (unsigned long)c[0], (unsigned long)c[1],
               (unsigned long)c[2], (unsigned long)ours, (unsigned long)c[3]);
    }
}

int main(void)
{
    const size_t count = sizeof FMA_CASES / sizeof FMA_CASES[0];
    for (size_t i = 0; i < count; ++i) {
        const uint32_t *c = FMA_CASES[i];
        const float x = from_bits(c[0]), y = from_bits(c[1]), z = from_bits(c[2]);
        const int finite = ((c[0] | 0x807fffffu) != 0xffffffffu) && ((c[1] | 0x807fffffu) != 0xffffffffu)
            && ((c[2] | 0x807fffffu) != 0xffffffffu);
        if (finite) {
            check("lp_fma_integer", c, to_bits(lp_fma_integer(x, y, z)));
        }
        check("lp_fma", c, to_bits(lp_fma(x, y, z)));
    }
    if (failures != 0) {
        printf("FAIL %ld of %ld\n", (long)failures, (long)checks);
        return 1;
    }
    printf("ok %ld\n", (long)checks);
    return 0;
}
