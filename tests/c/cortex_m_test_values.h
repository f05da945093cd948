/* Inputs of the Cortex-M helpers' C unit tests (tests/c/test_dual_mac.c and its siblings): a fixed pseudo-random
 * sequence (the same run to run and on every core) with the int8 and int16 extremes forced in. */
#ifndef CORTEX_M_TEST_VALUES_H
#define CORTEX_M_TEST_VALUES_H

#include <stdint.h>

/* The next value of the sequence `state`: 32 bits, well mixed in the high half. */
static inline uint32_t next_value(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 16;
}

/* n int8: all -128 when all_min (the largest products), else -128 at every 7th index, 127 at every 11th, -1 at
   every 13th and the rest from the sequence. */
static inline void fill_s8(int8_t *x, int32_t n, uint32_t *state, int all_min)
{
    for (int32_t i = 0; i < n; ++i) {
        if (all_min) {
            x[i] = (int8_t)-128;
            continue;
        }
        const int8_t drawn = (int8_t)(int32_t)(next_value(state) % 256u - 128u);
        x[i] = i % 7 == 0 ? (int8_t)-128 : (i % 11 == 0 ? (int8_t)127 : (i % 13 == 0 ? (int8_t)-1 : drawn));
    }
}

/* n int16: all -32768 when all_min, else -32768 at every 7th index, 32767 at every 11th, -1 at every 13th
   and the rest from the sequence. */
static inline void fill_s16(int16_t *x, int32_t n, uint32_t *state, int all_min)
{
    for (int32_t i = 0; i < n; ++i) {
        if (all_min) {
            x[i] = (int16_t)-32768;
            continue;
        }
        const int16_t drawn = (int16_t)(int32_t)(next_value(state) % 65536u - 32768u);
        x[i] = i % 7 == 0 ? (int16_t)-32768 : (i % 11 == 0 ? (int16_t)32767 : (i % 13 == 0 ? (int16_t)-1 : drawn));
    }
}

/* Accumulator c's starting value: far from 0 on either side, within int32 after any test's sums. */
static inline int32_t start_value(int32_t c)
{
    return (int32_t)(c * 1000003) - 2000000;
}

#endif
