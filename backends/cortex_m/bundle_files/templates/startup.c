/* Startup code for the self-test on QEMU's MPS2 boards (written for this project).
 *
 * The core boots from the vector table that link.ld keeps first in flash: initial stack pointer, then the
 * reset handler. The reset handler copies .data from flash, zeroes .bss, enables the FPU on hard-float
 * builds, enables UART0 (the program's output, lp_console.h) and calls exit(main()): newlib flushes stdout,
 * and lp_syscalls.c's _exit prints the exit marker with main's return value and resets the board, which
 * ends QEMU (-no-reboot). Every fault prints "lp: <its name>" and ends the same way with its own status
 * (LP_EXIT_* in lp_board.h). Nothing here, nor anywhere in the program, uses semihosting.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_board.h"
#include "lp_console.h"

extern uint32_t __data_load__[];
extern uint32_t __data_start__[];
extern uint32_t __data_end__[];
extern uint32_t __bss_start__[];
extern uint32_t __bss_end__[];
extern uint32_t __stack_top__[];

extern int main(void);
extern void __libc_init_array(void);

void Reset_Handler(void);

#define LP_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define LP_SHCSR (*(volatile uint32_t *)0xE000ED24u)
#define LP_CCR (*(volatile uint32_t *)0xE000ED14u)

/* Names the exception on the UART (no stdio: its state may be what failed), then ends the run with its status. */
#define LP_FAULT_HANDLER(handler, message, status)    \
    void __attribute__((noreturn)) handler(void)      \
    {                                                 \
        lp_console_line("lp: " message);              \
        lp_end(status);                               \
    }

LP_FAULT_HANDLER(NMI_Handler, "NMI", LP_EXIT_NMI)
LP_FAULT_HANDLER(HardFault_Handler, "HardFault", LP_EXIT_HARDFAULT)
LP_FAULT_HANDLER(MemManage_Handler, "MemManage fault", LP_EXIT_MEMMANAGE)
LP_FAULT_HANDLER(BusFault_Handler, "BusFault", LP_EXIT_BUSFAULT)
LP_FAULT_HANDLER(UsageFault_Handler, "UsageFault", LP_EXIT_USAGEFAULT)
LP_FAULT_HANDLER(SecureFault_Handler, "SecureFault", LP_EXIT_SECUREFAULT)
LP_FAULT_HANDLER(Unexpected_Handler, "unexpected interrupt", LP_EXIT_UNEXPECTEDINTERRUPT)

/* lp_icount.c counts timer0's wraps in its own Timer0_Handler; without it, the interrupt is unexpected. */
void __attribute__((weak)) Timer0_Handler(void)
{
    Unexpected_Handler();
}

typedef void (*lp_vector)(void);

#define LP_SYSTEM_VECTORS 16
#define LP_EXTERNAL_INTERRUPTS 32
#define LP_TIMER0_VECTOR (LP_SYSTEM_VECTORS + LP_TIMER0_IRQ)
#if LP_TIMER0_IRQ < 1 || LP_TIMER0_IRQ >= LP_EXTERNAL_INTERRUPTS - 1
#error "the vector table below assumes timer0's IRQ is neither the first nor the last"
#endif

__attribute__((section(".vectors"), used)) const lp_vector lp_vector_table[LP_SYSTEM_VECTORS +
                                                                          LP_EXTERNAL_INTERRUPTS] = {
    (lp_vector)(uintptr_t)__stack_top__,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    SecureFault_Handler,
    0,
    0,
    0,
    Unexpected_Handler, /* SVCall */
    Unexpected_Handler, /* DebugMonitor */
    0,
    Unexpected_Handler, /* PendSV */
    Unexpected_Handler, /* SysTick */
    [LP_SYSTEM_VECTORS ... LP_TIMER0_VECTOR - 1] = Unexpected_Handler,
    [LP_TIMER0_VECTOR] = Timer0_Handler,
    [LP_TIMER0_VECTOR + 1 ... LP_SYSTEM_VECTORS + LP_EXTERNAL_INTERRUPTS - 1] = Unexpected_Handler,
};

void Reset_Handler(void)
{
    const uint32_t *load = __data_load__;
    uint32_t *word;
    for (word = __data_start__; word < __data_end__; ++word) {
        *word = *load++;
    }
    for (word = __bss_start__; word < __bss_end__; ++word) {
        *word = 0u;
    }
#if defined(__ARM_FP)
    LP_CPACR |= 0xFu << 20; /* full access to coprocessors 10 and 11: the FPU */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
    LP_SHCSR |= 0x7u << 16; /* MemManage, BusFault, UsageFault get their own handlers, not HardFault */
    LP_CCR |= 1u << 4;      /* integer division by zero traps (UsageFault), as it does on the host */
#if defined(__ARM_FEATURE_CMSE)
    LP_SHCSR |= 1u << 19; /* and SecureFault on an ARMv8-M core with the Security Extension */
#endif
#elif defined(__ARM_ARCH_6M__)
    /* ARMv6-M code may run on a Cortex-M3 board: make unaligned accesses fault there as on a Cortex-M0+
     * (a HardFault). On an ARMv6-M core this bit is read-as-one and the write does nothing. */
    LP_CCR |= 1u << 3;
#endif
    lp_console_init();
    __libc_init_array();
    exit(main());
}
