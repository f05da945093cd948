/* The entry point of a board program on QEMU's RISC-V virt machine (written for this project).
 *
 * QEMU's reset ROM (-bios none) jumps here, in M-mode, at the start of DRAM, where link.ld puts
 * .text.start. This sets the global pointer and the stack pointer and calls lp_reset (startup.c), which
 * prepares memory and runs the program; it never returns. */
    .section .text.start, "ax"
    .global _start
    .type _start, @function
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top__
    call lp_reset
1:  j 1b
    .size _start, . - _start
