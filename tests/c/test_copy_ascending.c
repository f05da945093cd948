/* Unit test of the Cortex-M backend's ascending copy (backends/cortex_m/helpers/templates/copy_ascending.h.in,
 * with the prefix lp): for element sizes 1, 2 and 4 bytes, every count up to 40 elements and every distance
 * from dst below src (overlapping, as the SVDF state shifts in place) to separate runs, the helper leaves the
 * buffer as the element loop `for (i = 0; i < count; ++i) dst[i] = src[i]` does (cortex_m_test_values.h's
 * ascending_copy_cases). Built by tests/test_cortex_m_helpers_c.py on the host with and without
 * __ARM_FEATURE_UNALIGNED (the 16-byte word copies) and for cortex-m4f under QEMU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "copy_ascending.h"
#include "cortex_m_test_values.h"

int main(void)
{
    int32_t cases = 0;
    if (ascending_copy_cases(lp_copy_ascending, &cases) != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
