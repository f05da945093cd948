/* What the RISC-V board program's own files share besides lp_console.h (written for this project). */
#ifndef LP_RISCV_H
#define LP_RISCV_H

#include <stddef.h>
#include <stdint.h>

/* Reads CSR `name` (a string, e.g. "mcause") into the uint32_t lvalue `value`. The profiles' -march strings name
 * no Zicsr, so it is enabled for this instruction only. */
#define LP_CSR_READ(name, value) \
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\tcsrr %0, " name "\n\t.option pop" : "=r"(value))

/* Writes `magnitude` in decimal at `digits` (at most 10 characters, no NUL); returns how many. */
size_t lp_decimal(char *digits, uint32_t magnitude);

#endif /* LP_RISCV_H */
