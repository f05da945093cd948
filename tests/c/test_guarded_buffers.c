/* Check of the guards themselves (guarded_buffers.h): loads of bytes inside two slots' copies, which must pass
 * ("inside" printed), then the access GUARDED_ACCESS selects (1: a word load of a copy's last two bytes and the two
 * after its end; 2: a byte store after the end; 3: a byte load before the start of a slot's second copy), which must
 * end the run with a fault (QEMU) or an AddressSanitizer report (the host) before it prints "ok". Built by
 * tests/backends/test_guarded_buffers.py. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guarded_buffers.h"

int main(void)
{
    static const uint8_t data[7] = {1, 2, 3, 4, 5, 6, 7};
    volatile uint32_t sink = 0;
    uint8_t *const last = guarded_copy(GUARDED_SLOTS - 1, data, 7);
    (void)guarded_copy(0, data, 6);                   /* slot 0's first copy: against its end's guard */
    uint8_t *const second = guarded_copy(0, data, 6); /* the second: against its start's */
    uint32_t word;
    memcpy(&word, (uint8_t *volatile)last + 3, sizeof word);
    sink += word + second[0] + second[5];
    printf("inside %u\n", (unsigned)sink);
    fflush(stdout);
#if GUARDED_ACCESS == 1
    memcpy(&word, (uint8_t *volatile)last + 5, sizeof word);
    sink += word;
#elif GUARDED_ACCESS == 2
    ((uint8_t *volatile)last)[7] = 1;
#elif GUARDED_ACCESS == 3
    sink += ((uint8_t *volatile)second)[-1];
#endif
    printf("ok %u\n", (unsigned)sink);
    return 0;
}
