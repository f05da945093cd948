/* Unit test of the Cortex-M backend's state shift (backends/cortex_m/helpers/templates/state_shift.h.in, with the
 * prefix lp): the ascending copy's cases (cortex_m_test_values.h's ascending_copy_cases: element sizes 1, 2 and 4
 * bytes, every count up to 40 elements, every distance from dst below src to separate runs, every word alignment
 * of dst) on the helper of the same contract. Built by tests/test_cortex_m_helpers_c.py on the host and for
 * cortex-m4f under QEMU (the assembly loop of unaligned word loads and STMs). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cortex_m_test_values.h"
#include "state_shift.h"

int main(void)
{
    int32_t cases = 0;
    if (ascending_copy_cases(lp_state_shift, &cases) != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
