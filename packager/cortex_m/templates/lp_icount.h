/* Instruction counting on QEMU's MPS2 boards (written for this project).
 *
 * Under `qemu-system-arm -icount shift=N` the board's CMSDK APB timer0 advances exactly with executed
 * instructions, so it measures INSTRUCTIONS executed, not cycles of a real core. Usage:
 *
 *     uint32_t start = lp_icount_start();
 *     status = model_run(input, output);
 *     lp_icount_report(lp_icount_elapsed(start));
 *
 * The count includes the few instructions of the measurement itself (see lp_icount_elapsed).
 */
#ifndef LP_ICOUNT_H
#define LP_ICOUNT_H

#include <stdint.h>

/* lp_icount_elapsed's value when the timer wrapped (more than about 1.3e9 instructions). */
#define LP_ICOUNT_OVERFLOW UINT64_MAX

/* Restarts timer0 and returns its reading: pass it to lp_icount_elapsed. */
uint32_t lp_icount_start(void);

/* Instructions executed since lp_icount_start returned `start`, or LP_ICOUNT_OVERFLOW. */
uint64_t lp_icount_elapsed(uint32_t start);

/* Prints "instructions per inference (QEMU -icount, not cycles): N" on stdout. */
void lp_icount_report(uint64_t instructions);

#endif /* LP_ICOUNT_H */
