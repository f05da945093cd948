/* What the RISC-V board program's own files share besides lp_console.h (written for this project). */
#ifndef LP_RISCV_H
#define LP_RISCV_H

#include <stddef.h>
#include <stdint.h>

/* Writes `magnitude` in decimal at `digits` (at most 10 characters, no NUL); returns how many. */
size_t lp_decimal(char *digits, uint32_t magnitude);

#endif /* LP_RISCV_H */
