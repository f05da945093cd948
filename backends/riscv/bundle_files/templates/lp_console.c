/* UART0 output and the end of a run on QEMU's RISC-V virt machine (written for this project): see lp_console.h.
 * UART0 is an NS16550A; the run ends through the SiFive test finisher, whose "pass" write makes QEMU exit. */
#include "lp_console.h"

#include <stdint.h>

#include "lp_board.h"
#include "lp_riscv.h"

#define LP_UART0 ((volatile uint8_t *)LP_UART0_BASE)
#define LP_UART_THR 0u           /* transmit holding register */
#define LP_UART_LSR 5u           /* line status register */
#define LP_UART_LSR_THR_EMPTY 0x20u
#define LP_FINISHER (*(volatile uint32_t *)LP_FINISHER_BASE)
#define LP_FINISHER_PASS 0x5555u /* QEMU exits with status 0: the program's status is its exit marker's */

/* The last byte written: lp_console_line starts a new line after any other. */
static char lp_last_byte = '\n';

void lp_console_init(void)
{
}

void lp_console_write(const char *text, size_t bytes)
{
    size_t i;
    for (i = 0u; i < bytes; ++i) {
        while ((LP_UART0[LP_UART_LSR] & LP_UART_LSR_THR_EMPTY) == 0u) {
        }
        LP_UART0[LP_UART_THR] = (uint8_t)text[i];
    }
    if (bytes != 0u) {
        lp_last_byte = text[bytes - 1u];
    }
}

void lp_console_line(const char *text)
{
    size_t bytes = 0u;
    while (text[bytes] != '\0') {
        ++bytes;
    }
    if (lp_last_byte != '\n') {
        lp_console_write("\n", 1u);
    }
    lp_console_write(text, bytes);
    lp_console_write("\n", 1u);
}

size_t lp_decimal(char *digits, uint32_t magnitude)
{
    char reversed[10];
    size_t count = 0u;
    size_t i;
    do {
        reversed[count++] = (char)('0' + (int)(magnitude % 10u));
        magnitude /= 10u;
    } while (magnitude != 0u);
    for (i = 0u; i < count; ++i) {
        digits[i] = reversed[count - 1u - i];
    }
    return count;
}

void lp_end(int status)
{
    static const char marker[] = LP_EXIT_MARKER;
    char line[sizeof marker + 11u]; /* the marker, a sign, up to 10 digits, and the NUL */
    size_t length = sizeof marker - 1u;
    size_t i;
    for (i = 0u; i < length; ++i) {
        line[i] = marker[i];
    }
    if (status < 0) {
        line[length++] = '-';
    }
    /* the magnitude as unsigned: -INT_MIN overflows an int */
    length += lp_decimal(&line[length], status < 0 ? 0u - (uint32_t)status : (uint32_t)status);
    line[length] = '\0';
    lp_console_line(line);
    __asm__ volatile("fence" ::: "memory");
    LP_FINISHER = LP_FINISHER_PASS;
    for (;;) {
    }
}
