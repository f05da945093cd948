/* Exact-size buffers against no-access memory for the helpers' C unit tests: a test hands a helper copies of its
 * inputs and outputs made here (guarded_copy), each exactly the bytes the helper's contract lets it touch, and
 * the run ends with a failure when the helper reads or writes even one byte outside that buffer:
 *  - on the host (the portable C, under AddressSanitizer, which every host build uses): each copy is its own
 *    malloc of exactly `bytes`; ASan reports any byte before or after it;
 *  - under QEMU on Cortex-M: the slots lie between 32-byte MPU regions no access may touch (PMSAv7: no-access
 *    regions; PMSAv8-M, which has no no-access permission: two regions over the same bytes, a fault for any access
 *    on ARMv8-M); the MemManage fault (or HardFault) ends the run with its status (lp: MemManage fault);
 *  - under QEMU on RISC-V (machine mode): the same layout with locked NAPOT PMP entries of no permission (a trap).
 * A slot's copies alternate: the first, third, ... end where the guard after the slot begins (a byte read or
 * written past the end faults; the guards begin on QEMU page boundaries, so a word load that starts in the buffer
 * and ends in the guard is split there and faults: QEMU checks a sub-page region at an access's first byte only),
 * the second, fourth, ... start where the guard before it ends (a byte before the start faults). An end-flush
 * copy's alignment is its size's (an int8 buffer of n bytes starts at -n mod 4, an int32 one word-aligned), a
 * start-flush copy is word-aligned: a test varies the sizes to vary the alignments.
 *
 * guarded_copy(slot, data, bytes): a copy of the `bytes` bytes at `data` in slot `slot` (< GUARDED_SLOTS),
 *   against a guard (bytes <= GUARDED_MAX_BYTES; 0 gives an empty buffer whose every byte is guarded);
 *   replaces the slot's previous copy.
 * guarded_back(slot, data, bytes): the slot's bytes copied back to `data` (a helper's outputs, for the checks).
 * guarded_span(count, len, stride, size), guarded_box(rows, cols, row_stride, col_stride, len, size): the bytes of
 *   a strided window, first to last element.
 * Used by the C unit tests of tests/backends/cortex_m/test_cortex_m_helpers_c.py and
 * tests/backends/riscv/test_riscv_helpers_c.py; tests/backends/test_guarded_buffers.py checks the guards fault. */
#ifndef GUARDED_BUFFERS_H
#define GUARDED_BUFFERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARDED_SLOTS 7 /* PMSAv7 has 8 regions for the 8 guards */
#define GUARDED_BLOCK 32768 /* a guard and a slot */
#define GUARDED_PAGE 4096   /* the guards' alignment: a QEMU page boundary (its pages are 1 or 4 KB) */
#define GUARDED_GUARD 32   /* a guard's bytes: the MPU's and a NAPOT PMP entry's smallest region */
#define GUARDED_MAX_BYTES (GUARDED_BLOCK - GUARDED_GUARD)

#define GUARDS (GUARDED_SLOTS + 1)
/* The copies out of line: inlined at every call of a test that inlines its helper's assembly per geometry, they
   pushed its literal pools out of their loads' range. */
#define GUARDED_OUT_OF_LINE static __attribute__((noinline, unused))
static unsigned char *guarded_at[GUARDED_SLOTS];

#if defined(__arm__) || defined(__riscv)
/* Guard k at arena + k * GUARDED_BLOCK (k <= GUARDED_SLOTS); slot k between guards k and k + 1. */
static unsigned char guarded_arena[GUARDED_SLOTS * GUARDED_BLOCK + GUARDED_GUARD]
    __attribute__((aligned(GUARDED_PAGE)));

static inline uintptr_t guard_address(int32_t guard)
{
    return (uintptr_t)guarded_arena + (uintptr_t)guard * GUARDED_BLOCK;
}

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
#define GUARDED_MPU_TYPE (*(volatile uint32_t *)0xE000ED90u)
#define GUARDED_MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define GUARDED_MPU_RNR (*(volatile uint32_t *)0xE000ED98u)
#define GUARDED_MPU_RBAR (*(volatile uint32_t *)0xE000ED9Cu)
#define GUARDED_MPU_RASR (*(volatile uint32_t *)0xE000EDA0u)

/* PMSAv7: region k no access (AP 000), execute never, 32 bytes (SIZE 4), enabled; the default map elsewhere. */
static inline void guards_on(void)
{
    if ((GUARDED_MPU_TYPE >> 8 & 0xFFu) < GUARDS) {
        printf("FAIL guarded_buffers: the MPU has too few regions\n");
        exit(1);
    }
    for (int32_t k = 0; k < GUARDS; ++k) {
        GUARDED_MPU_RNR = (uint32_t)k;
        GUARDED_MPU_RBAR = (uint32_t)guard_address(k);
        GUARDED_MPU_RASR = 1u << 28 | 4u << 1 | 1u;
    }
    GUARDED_MPU_CTRL = 1u << 2 | 1u; /* PRIVDEFENA, ENABLE */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}
#elif defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__) || defined(__ARM_ARCH_8M_BASE__)
#define GUARDED_MPU_TYPE (*(volatile uint32_t *)0xE000ED90u)
#define GUARDED_MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define GUARDED_MPU_RNR (*(volatile uint32_t *)0xE000ED98u)
#define GUARDED_MPU_RBAR (*(volatile uint32_t *)0xE000ED9Cu)
#define GUARDED_MPU_RLAR (*(volatile uint32_t *)0xE000EDA0u)

/* PMSAv8-M: regions 2k and 2k + 1 both over guard k (32 bytes, execute never): an address two regions match
   faults whatever the permissions; the default map elsewhere. */
static inline void guards_on(void)
{
    if ((GUARDED_MPU_TYPE >> 8 & 0xFFu) < 2 * GUARDS) {
        printf("FAIL guarded_buffers: the MPU has too few regions\n");
        exit(1);
    }
    for (int32_t r = 0; r < 2 * GUARDS; ++r) {
        GUARDED_MPU_RNR = (uint32_t)r;
        GUARDED_MPU_RBAR = (uint32_t)guard_address(r / 2) | 1u;
        GUARDED_MPU_RLAR = (uint32_t)guard_address(r / 2) | 1u;
    }
    GUARDED_MPU_CTRL = 1u << 2 | 1u; /* PRIVDEFENA, ENABLE */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}
#elif defined(__riscv) && __riscv_xlen == 32
/* Locked NAPOT PMP entries 0..7 of no permission (L | A=NAPOT: 0x98), which bind machine mode too. */
static inline void guards_on(void)
{
    uint32_t napot[GUARDS];
    for (int32_t k = 0; k < GUARDS; ++k) {
        napot[k] = (uint32_t)(guard_address(k) >> 2) | (GUARDED_GUARD / 8 - 1);
    }
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\t"
                     "csrw pmpaddr0, %0\n\tcsrw pmpaddr1, %1\n\tcsrw pmpaddr2, %2\n\tcsrw pmpaddr3, %3\n\t"
                     "csrw pmpaddr4, %4\n\tcsrw pmpaddr5, %5\n\tcsrw pmpaddr6, %6\n\tcsrw pmpaddr7, %7\n\t"
                     "csrw pmpcfg0, %8\n\tcsrw pmpcfg1, %8\n\t.option pop"
                     :
                     : "r"(napot[0]), "r"(napot[1]), "r"(napot[2]), "r"(napot[3]), "r"(napot[4]), "r"(napot[5]),
                       "r"(napot[6]), "r"(napot[7]), "r"(0x98989898u)
                     : "memory");
}
#else
#error "guarded_buffers.h: no guard for this core"
#endif

GUARDED_OUT_OF_LINE void *guarded_copy(int32_t slot, const void *data, int32_t bytes)
{
    static int on = 0;
    static uint32_t copies[GUARDED_SLOTS];
    if (!on) {
        guards_on();
        on = 1;
    }
    if (slot < 0 || slot >= GUARDED_SLOTS || bytes < 0 || bytes > GUARDED_MAX_BYTES) {
        printf("FAIL guarded_copy: slot %d, %d bytes\n", (int)slot, (int)bytes);
        exit(1);
    }
    guarded_at[slot] = copies[slot]++ % 2 == 0 ? (unsigned char *)guard_address(slot + 1) - bytes
                                               : (unsigned char *)guard_address(slot) + GUARDED_GUARD;
    if (bytes > 0) { /* data may be NULL then */
        memcpy(guarded_at[slot], data, (size_t)bytes);
    }
    return guarded_at[slot];
}
#else
GUARDED_OUT_OF_LINE void *guarded_copy(int32_t slot, const void *data, int32_t bytes)
{
    if (slot < 0 || slot >= GUARDED_SLOTS || bytes < 0 || bytes > GUARDED_MAX_BYTES) {
        printf("FAIL guarded_copy: slot %d, %d bytes\n", (int)slot, (int)bytes);
        exit(1);
    }
    free(guarded_at[slot]);
    guarded_at[slot] = malloc((size_t)bytes);
    if (guarded_at[slot] == NULL) {
        printf("FAIL guarded_copy: no memory\n");
        exit(1);
    }
    if (bytes > 0) { /* data may be NULL then */
        memcpy(guarded_at[slot], data, (size_t)bytes);
    }
    return guarded_at[slot];
}
#endif

/* The bytes from the first to the last of `count` runs of `len` elements of `size` bytes, `stride` elements apart
   (0 when count or len is 0): the extent a helper reads of a strided window. */
static inline int32_t guarded_span(int32_t count, int32_t len, int32_t stride, int32_t size)
{
    return count > 0 && len > 0 ? ((count - 1) * stride + len) * size : 0;
}

/* The bytes from the first to the last of a rows x cols box of runs of `len` elements of `size` bytes, rows
   row_stride and columns col_stride elements apart (0 when rows, cols or len is 0): a depthwise window's extent. */
static inline int32_t guarded_box(int32_t rows, int32_t cols, int32_t row_stride, int32_t col_stride, int32_t len,
                                  int32_t size)
{
    return rows > 0 && cols > 0 && len > 0 ? ((rows - 1) * row_stride + (cols - 1) * col_stride + len) * size : 0;
}

GUARDED_OUT_OF_LINE void guarded_back(int32_t slot, void *data, int32_t bytes)
{
    if (bytes > 0) {
        memcpy(data, guarded_at[slot], (size_t)bytes);
    }
}

#endif
