/* Instruction counting on QEMU's MPS2 boards (written for this project).
 *
 * Under `qemu-system-arm -icount shift=N` the board's CMSDK APB timer0 advances exactly with executed
 * instructions, so it measures INSTRUCTIONS executed, not cycles of a real core. Usage:
 *
 *     uint32_t start = lp_icount_start();
 *     status = model_run(input, output);
 *     lp_icount_report(lp_icount_elapsed(start));
 *
 * The count includes the few instructions of the measurement itself (8 for an empty region) and, every
 * 2^32 timer ticks (1.34e9 instructions on the AN385/386/500, 1.68e9 on the AN505), the 8 of the
 * interrupt handler that counts the timer's wraps (QEMU may charge one more for taking the interrupt).
 */
#ifndef LP_ICOUNT_H
#define LP_ICOUNT_H

#include <stdint.h>

/* Restarts timer0 (and its wrap count, kept by its interrupt) and returns its reading for lp_icount_elapsed. */
uint32_t lp_icount_start(void);

/* Instructions executed since lp_icount_start returned `start`. */
uint64_t lp_icount_elapsed(uint32_t start);

/* timer0's interrupt handler (in the vector table): counts the timer's wraps. */
void Timer0_Handler(void);

/* Prints `value` in decimal and a newline on stdout (newlib-nano's printf has no 64-bit conversions). */
void lp_icount_print_decimal(uint64_t value);

/* Prints "instructions per inference (QEMU -icount, not cycles): N" on stdout. */
void lp_icount_report(uint64_t instructions);

#endif /* LP_ICOUNT_H */
