/* Per-call instruction counts of the profiling build (written for this project): see lp_call_profile.h. */
#include "lp_call_profile.h"

#include <stdio.h>

#include "lp_icount.h"

/* `value` in decimal: newlib-nano's printf has no 64-bit conversions. */
static void lp_print_u64(uint64_t value)
{
    const unsigned long billions = (unsigned long)(value / 1000000000u);
    const unsigned long rest = (unsigned long)(value % 1000000000u);
    if (billions != 0u) {
        printf("%lu%09lu\n", billions, rest);
    } else {
        printf("%lu\n", rest);
    }
}

void lp_profile_empty_region(void)
{
    const uint32_t start = lp_icount_start();
    const uint64_t instructions = lp_icount_elapsed(start);
    printf("profile: empty region ");
    lp_print_u64(instructions);
}

void lp_profile_call(uint32_t step, uint64_t instructions)
{
    printf("profile: call %lu ", (unsigned long)step);
    lp_print_u64(instructions);
}
