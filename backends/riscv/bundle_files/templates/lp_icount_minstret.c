/* Instruction counting with minstret on QEMU's RISC-V virt machine under -icount (written for this project).
 *
 * Under -icount QEMU 7.2 returns its virtual clock in ns as minstret/minstreth, so one executed instruction
 * is 2^LP_ICOUNT_SHIFT ticks of this 64-bit counter; it never wraps in a run, so no interrupt is needed.
 */
#include "lp_icount.h"

#include <stdio.h>

#include "lp_board.h"
#include "lp_riscv.h"

/* The reading at lp_icount_start: lp_icount_start returns its low half, the whole reading stays here. */
static uint64_t lp_counter_start;

/* The counter's 64-bit value: the high half read again until the low half was read under the same one. */
static uint64_t lp_counter_value(void)
{
    uint32_t high;
    uint32_t low;
    uint32_t again;
    LP_CSR_READ("minstreth", again);
    do {
        high = again;
        LP_CSR_READ("minstret", low);
        LP_CSR_READ("minstreth", again);
    } while (again != high);
    return ((uint64_t)high << 32) | low;
}

uint32_t lp_icount_start(void)
{
    lp_counter_start = lp_counter_value();
    return (uint32_t)lp_counter_start;
}

uint64_t lp_icount_elapsed(uint32_t start)
{
    const uint64_t ticks = lp_counter_value() - lp_counter_start;
    (void)start; /* the whole 64-bit start reading is lp_counter_start */
    return (ticks * LP_TICKS_PER_INSTRUCTION_DEN + LP_TICKS_PER_INSTRUCTION_NUM / 2u) / LP_TICKS_PER_INSTRUCTION_NUM;
}

