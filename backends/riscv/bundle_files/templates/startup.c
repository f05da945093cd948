/* The C start of a board program on QEMU's RISC-V virt machine (written for this project).
 *
 * lp_reset (called by entry.S with the stack set) turns the FPU on in code built for one, copies .data from
 * flash, zeroes .bss, copies the thread-local block's initial values (picolibc keeps errno there) and points
 * tp at it, installs the trap handler, and calls exit(main()): lp_syscalls.c's _exit prints the exit marker
 * with main's status and ends QEMU through the test finisher. A trap (an illegal instruction, a bad address,
 * ...) prints "lp: trap mcause=N mepc=0x..." and ends the run with LP_EXIT_TRAP. Nothing here uses
 * semihosting.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lp_board.h"
#include "lp_riscv.h"
#include "lp_console.h"

extern uint32_t __data_load__[];
extern uint32_t __data_start__[];
extern uint32_t __data_end__[];
extern uint32_t __tls_load__[];
extern uint32_t __tls_start__[];
extern uint32_t __tdata_end__[];
extern uint32_t __tls_end__[];
extern uint32_t __bss_start__[];
extern uint32_t __bss_end__[];

extern int main(void);
void lp_reset(void) __attribute__((noreturn));
/* mtvec's target (direct mode: 4-byte aligned). A plain function, not an interrupt handler: it never returns,
 * so it saves no register (an interrupt handler of an F core would save the FPU's, which may be off). */
void lp_trap(void) __attribute__((noreturn, aligned(4)));

void lp_trap(void)
{
    static const char prefix[] = "lp: trap mcause=";
    char line[sizeof prefix + 10u + 16u]; /* the prefix, the cause's digits, " mepc=0x" and 8 hex digits */
    uint32_t cause;
    uint32_t address;
    size_t length = sizeof prefix - 1u;
    size_t i;
    LP_CSR_READ("mcause", cause);
    LP_CSR_READ("mepc", address);
    for (i = 0u; i < length; ++i) {
        line[i] = prefix[i];
    }
    length += lp_decimal(&line[length], cause);
    for (i = 0u; i < 8u; ++i) {
        line[length++] = " mepc=0x"[i];
    }
    for (i = 0u; i < 8u; ++i) {
        const uint32_t nibble = (address >> (28u - 4u * i)) & 0xFu;
        line[length++] = (char)(nibble < 10u ? '0' + (int)nibble : 'a' + (int)nibble - 10);
    }
    line[length] = '\0';
    lp_console_line(line);
    lp_end(LP_EXIT_TRAP);
}

static void lp_copy(uint32_t *word, const uint32_t *end, const uint32_t *load)
{
    while (word < end) {
        *word++ = *load++;
    }
}

static void lp_zero(uint32_t *word, const uint32_t *end)
{
    while (word < end) {
        *word++ = 0u;
    }
}

#define LP_MSTATUS_FS_INITIAL 0x2000u /* mstatus.FS: the FPU is off (0) at reset */

void lp_reset(void)
{
#if defined(__riscv_flen)
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\tcsrs mstatus, %0\n\t.option pop"
                     ::"r"(LP_MSTATUS_FS_INITIAL));
#endif
    lp_copy(__data_start__, __data_end__, __data_load__);
    lp_zero(__bss_start__, __bss_end__);
    lp_copy(__tls_start__, __tdata_end__, __tls_load__);
    lp_zero(__tdata_end__, __tls_end__);
    __asm__ volatile("mv tp, %0" ::"r"(__tls_start__));
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\tcsrw mtvec, %0\n\t.option pop" ::"r"(lp_trap));
    lp_console_init();
    exit(main());
}
