/* Per-call instruction counts of the profiling build (written for this project): see lp_call_profile.h. */
#include "lp_call_profile.h"

#include <stdio.h>

#include "lp_icount.h"

void lp_profile_empty_region(void)
{
    const uint32_t start = lp_icount_start();
    const uint64_t instructions = lp_icount_elapsed(start);
    printf("profile: empty region ");
    lp_icount_print_decimal(instructions);
}

void lp_profile_call(uint32_t step, uint64_t instructions)
{
    printf("profile: call %lu ", (unsigned long)step);
    lp_icount_print_decimal(instructions);
}
