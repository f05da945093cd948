/* Instruction counting with the board's 64-bit system counter under QEMU -icount (written for this project).
 *
 * Boards with an Armv8-M system counter (the SSE-300's on mps3-an547) count instructions with it: it is
 * enabled through CNTCR in its control frame and read, 64 bits, from CNTCV in its status frame. It never
 * wraps in a run, so no interrupt is needed; Timer0_Handler stays startup.c's (an unexpected interrupt).
 */
#include "lp_icount.h"

#include <stdio.h>

#include "lp_board.h"

#define LP_CNTCR (*(volatile uint32_t *)LP_COUNTER_CONTROL_BASE)
#define LP_CNTCR_EN 1u
#define LP_CNTCV_LO (*(volatile uint32_t *)LP_COUNTER_STATUS_BASE)
#define LP_CNTCV_HI (*(volatile uint32_t *)(LP_COUNTER_STATUS_BASE + 4u))

/* The reading at lp_icount_start: lp_icount_start returns its low half, the whole reading stays here. */
static uint64_t lp_counter_start;

/* The counter's 64-bit value: the high half read again until the low half was read under the same one. */
static uint64_t lp_counter_value(void)
{
    uint32_t high;
    uint32_t low;
    uint32_t again = LP_CNTCV_HI;
    do {
        high = again;
        low = LP_CNTCV_LO;
        again = LP_CNTCV_HI;
    } while (again != high);
    return ((uint64_t)high << 32) | low;
}

uint32_t lp_icount_start(void)
{
    LP_CNTCR |= LP_CNTCR_EN;
    lp_counter_start = lp_counter_value();
    return (uint32_t)lp_counter_start;
}

uint64_t lp_icount_elapsed(uint32_t start)
{
    const uint64_t now = lp_counter_value();
    (void)start; /* the whole 64-bit start reading is lp_counter_start */
    /* every instruction is LP_TICKS_PER_INSTRUCTION_NUM / LP_TICKS_PER_INSTRUCTION_DEN ticks (at least 2:
     * rounding is exact) */
    const uint64_t ticks = now - lp_counter_start;
    return (ticks * LP_TICKS_PER_INSTRUCTION_DEN + LP_TICKS_PER_INSTRUCTION_NUM / 2u) / LP_TICKS_PER_INSTRUCTION_NUM;
}

