/* Exact-size buffers against no-access memory for the helpers' C unit tests: a test hands a helper copies of its
 * inputs and outputs made here (guarded_copy), each exactly the bytes the helper's contract lets it touch, and
 * the run ends with a failure when the helper reads or writes even one byte past that buffer's end:
 *  - on the host (the portable C, under AddressSanitizer, which every host build uses): each copy is its own
 *    malloc of exactly `bytes`, so ASan also reports the byte before it;
 *  - under QEMU on Cortex-M: each slot's copy ends at a 4 KB boundary where a 32-byte MPU region no access may
 *    touch begins (PMSAv7: a no-access region; PMSAv8-M, which has no no-access permission: two regions over the
 *    same bytes, a fault for any access on ARMv8-M); the MemManage fault (or HardFault) ends the run with its
 *    status. The boundary is a QEMU page boundary too, so a word load that starts in the buffer and ends in the
 *    guard is split there and faults (QEMU checks a sub-page MPU region at the access's first byte only);
 *  - under QEMU on RISC-V (machine mode): the same layout with a locked NAPOT PMP entry of no permission.
 * A copy starts at (its end - bytes): its alignment is the size's (an int32 buffer is word-aligned, an int8
 * buffer of n bytes starts at -n mod 4); a test varies the sizes to vary the alignments.
 *
 * guarded_copy(slot, data, bytes): a copy of the `bytes` bytes at `data` in slot `slot` (< GUARDED_SLOTS),
 *   against the guard (bytes <= GUARDED_MAX_BYTES; 0 gives an empty buffer whose every byte is guarded);
 *   replaces the slot's previous copy.
 * guarded_back(slot, data, bytes): the slot's bytes copied back to `data` (a helper's outputs, for the checks).
 * Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py and tests/backends/riscv/test_riscv_helpers_c.py. */
#ifndef GUARDED_BUFFERS_H
#define GUARDED_BUFFERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARDED_SLOTS 6
#define GUARDED_BLOCK 4096 /* a slot's span: the guards lie on these boundaries (QEMU's pages are 1 or 4 KB) */
#define GUARDED_GUARD 32   /* a guard's bytes: the MPU's and a NAPOT PMP entry's smallest region */
#define GUARDED_MAX_BYTES (GUARDED_BLOCK - GUARDED_GUARD)

static unsigned char *guarded_at[GUARDED_SLOTS];

#if defined(__arm__) || defined(__riscv)
/* Slot k's copy ends at arena + (k + 1) * GUARDED_BLOCK, where guard k begins. */
static unsigned char guarded_arena[GUARDED_SLOTS * GUARDED_BLOCK + GUARDED_GUARD]
    __attribute__((aligned(GUARDED_BLOCK)));

static inline uintptr_t guard_address(int32_t slot)
{
    return (uintptr_t)guarded_arena + (uintptr_t)(slot + 1) * GUARDED_BLOCK;
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
    if ((GUARDED_MPU_TYPE >> 8 & 0xFFu) < GUARDED_SLOTS) {
        printf("FAIL guarded_buffers: the MPU has too few regions\n");
        exit(1);
    }
    for (int32_t k = 0; k < GUARDED_SLOTS; ++k) {
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
    if ((GUARDED_MPU_TYPE >> 8 & 0xFFu) < 2 * GUARDED_SLOTS) {
        printf("FAIL guarded_buffers: the MPU has too few regions\n");
        exit(1);
    }
    for (int32_t r = 0; r < 2 * GUARDED_SLOTS; ++r) {
        GUARDED_MPU_RNR = (uint32_t)r;
        GUARDED_MPU_RBAR = (uint32_t)guard_address(r / 2) | 1u;
        GUARDED_MPU_RLAR = (uint32_t)guard_address(r / 2) | 1u;
    }
    GUARDED_MPU_CTRL = 1u << 2 | 1u; /* PRIVDEFENA, ENABLE */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}
#elif defined(__riscv) && __riscv_xlen == 32
/* Locked NAPOT PMP entries 0..5 of no permission (L | A=NAPOT: 0x98), which bind machine mode too. */
static inline void guards_on(void)
{
    uint32_t napot[GUARDED_SLOTS];
    for (int32_t k = 0; k < GUARDED_SLOTS; ++k) {
        napot[k] = (uint32_t)(guard_address(k) >> 2) | (GUARDED_GUARD / 8 - 1);
    }
    __asm__ volatile("csrw pmpaddr0, %0\n\tcsrw pmpaddr1, %1\n\tcsrw pmpaddr2, %2\n\t"
                     "csrw pmpaddr3, %3\n\tcsrw pmpaddr4, %4\n\tcsrw pmpaddr5, %5\n\t"
                     "csrw pmpcfg0, %6\n\tcsrw pmpcfg1, %7"
                     :
                     : "r"(napot[0]), "r"(napot[1]), "r"(napot[2]), "r"(napot[3]), "r"(napot[4]), "r"(napot[5]),
                       "r"(0x98989898u), "r"(0x9898u)
                     : "memory");
}
#else
#error "guarded_buffers.h: no guard for this core"
#endif

static inline void *guarded_copy(int32_t slot, const void *data, int32_t bytes)
{
    static int on = 0;
    if (!on) {
        guards_on();
        on = 1;
    }
    if (slot < 0 || slot >= GUARDED_SLOTS || bytes < 0 || bytes > GUARDED_MAX_BYTES) {
        printf("FAIL guarded_copy: slot %d, %d bytes\n", (int)slot, (int)bytes);
        exit(1);
    }
    guarded_at[slot] = (unsigned char *)guard_address(slot) - bytes;
    memcpy(guarded_at[slot], data, (size_t)bytes);
    return guarded_at[slot];
}
#else
static inline void *guarded_copy(int32_t slot, const void *data, int32_t bytes)
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
    memcpy(guarded_at[slot], data, (size_t)bytes);
    return guarded_at[slot];
}
#endif

static inline void guarded_back(int32_t slot, void *data, int32_t bytes)
{
    memcpy(data, guarded_at[slot], (size_t)bytes);
}

#endif
