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
#define LP_TIMER_CTRL_IRQEN 8u
#define LP_NVIC_ISER ((volatile uint32_t *)0xE000E100u)
#define LP_NVIC_ICPR ((volatile uint32_t *)0xE000E280u)

static volatile uint32_t lp_timer0_wraps;

void Timer0_Handler(void)
{
    LP_TIMER0->intstatus = 1u;
    lp_timer0_wraps = lp_timer0_wraps + 1u;
}

uint32_t lp_icount_start(void)
{
    LP_TIMER0->ctrl = 0u;
    LP_TIMER0->reload = UINT32_MAX;
    LP_TIMER0->value = UINT32_MAX;
    LP_TIMER0->intstatus = 1u;
    LP_NVIC_ICPR[LP_TIMER0_IRQ / 32] = 1u << (LP_TIMER0_IRQ % 32);
    LP_NVIC_ISER[LP_TIMER0_IRQ / 32] = 1u << (LP_TIMER0_IRQ % 32);
    lp_timer0_wraps = 0u;
    LP_TIMER0->ctrl = LP_TIMER_CTRL_ENABLE | LP_TIMER_CTRL_IRQEN;
    return LP_TIMER0->value;
}

uint64_t lp_icount_elapsed(uint32_t start)
{
    /* With interrupts masked, a wrap not yet counted shows as intstatus: count it and read after it. */
    __asm__ volatile("cpsid i" ::: "memory");
    uint32_t now = LP_TIMER0->value;
    uint32_t wraps = lp_timer0_wraps;
    if (LP_TIMER0->intstatus != 0u) {
        wraps += 1u;
        now = LP_TIMER0->value;
    }
    __asm__ volatile("cpsie i" ::: "memory");
    /* Each wrap is 2^32 ticks (reload 0xFFFFFFFF, then 0); every instruction is
     * LP_TICKS_PER_INSTRUCTION_NUM / LP_TICKS_PER_INSTRUCTION_DEN ticks (at least 2.5: rounding is exact). */
    const uint64_t ticks = ((uint64_t)wraps << 32) + start - now;
    return (ticks * LP_TICKS_PER_INSTRUCTION_DEN + LP_TICKS_PER_INSTRUCTION_NUM / 2u) / LP_TICKS_PER_INSTRUCTION_NUM;
}

