/* Instruction counting with the CMSDK APB timer0 under QEMU -icount (written for this project). */
#include "lp_icount.h"

#include <stdio.h>

#include "lp_board.h"

typedef struct {
    volatile uint32_t ctrl;
    volatile uint32_t value; /* counts down from reload, one tick per 1e9 / LP_TIMER0_HZ ns */
    volatile uint32_t reload;
    volatile uint32_t intstatus; /* set when value wrapped (with ctrl.irqen); write 1 to clear */
} lp_cmsdk_timer;

#define LP_TIMER0 ((lp_cmsdk_timer *)LP_TIMER0_BASE)
#define LP_TIMER_CTRL_ENABLE 1u
#define LP_TIMER_CTRL_IRQEN 8u /* only latches intstatus: the NVIC never enables this interrupt */

uint32_t lp_icount_start(void)
{
    LP_TIMER0->ctrl = 0u;
    LP_TIMER0->reload = UINT32_MAX;
    LP_TIMER0->value = UINT32_MAX;
    LP_TIMER0->intstatus = 1u;
    LP_TIMER0->ctrl = LP_TIMER_CTRL_ENABLE | LP_TIMER_CTRL_IRQEN;
    return LP_TIMER0->value;
}

uint64_t lp_icount_elapsed(uint32_t start)
{
    const uint32_t now = LP_TIMER0->value;
    if (LP_TIMER0->intstatus != 0u) {
        return LP_ICOUNT_OVERFLOW;
    }
    /* Each instruction advances QEMU's virtual clock by 2^shift ns; the timer ticks every 1e9/Hz ns. */
    const uint64_t ticks = (uint64_t)(uint32_t)(start - now);
    const uint64_t ns_per_instruction_times_hz = (uint64_t)LP_TIMER0_HZ << LP_ICOUNT_SHIFT;
    return (ticks * 1000000000u + ns_per_instruction_times_hz / 2u) / ns_per_instruction_times_hz;
}

void lp_icount_report(uint64_t instructions)
{
    if (instructions == LP_ICOUNT_OVERFLOW) {
        printf("instructions per inference (QEMU -icount, not cycles): overflow\n");
    } else {
        printf("instructions per inference (QEMU -icount, not cycles): %lu\n", (unsigned long)instructions);
    }
}
