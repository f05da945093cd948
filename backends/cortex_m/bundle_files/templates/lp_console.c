/* UART0 output and the end of a run on QEMU's MPS2 boards (written for this project): see lp_console.h. */
#include "lp_console.h"

#include <stdint.h>

#include "lp_board.h"

typedef struct {
    volatile uint32_t data;
    volatile uint32_t state; /* bit 0: the transmit buffer is full */
    volatile uint32_t ctrl;  /* bit 0: the transmitter is enabled */
    volatile uint32_t intstatus;
    volatile uint32_t bauddiv; /* at least 16 for a valid baud rate */
} lp_cmsdk_uart;

#define LP_UART0 ((lp_cmsdk_uart *)LP_UART0_BASE)
#define LP_UART_STATE_TX_FULL 1u
#define LP_UART_CTRL_TX_ENABLE 1u
#define LP_UART_SLOWEST_VALID_DIVIDER 16u

/* The Application Interrupt and Reset Control Register: SYSRESETREQ with the write key requests a reset. */
#define LP_AIRCR (*(volatile uint32_t *)0xE000ED0Cu)
#define LP_AIRCR_VECTKEY 0x05FA0000u
#define LP_AIRCR_SYSRESETREQ 0x4u

/* The last byte written: lp_console_line starts a new line after any other. */
static char lp_last_byte = '\n';

void lp_console_init(void)
{
    LP_UART0->bauddiv = LP_UART_SLOWEST_VALID_DIVIDER;
    LP_UART0->ctrl = LP_UART_CTRL_TX_ENABLE;
}

void lp_console_write(const char *text, size_t bytes)
{
    size_t i;
    for (i = 0u; i < bytes; ++i) {
        while ((LP_UART0->state & LP_UART_STATE_TX_FULL) != 0u) {
        }
        LP_UART0->data = (uint8_t)text[i];
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

void lp_end(int status)
{
    static const char marker[] = LP_EXIT_MARKER;
    char line[sizeof marker + 11u]; /* the marker, a sign, up to 10 digits, and the NUL */
    char digits[10];
    size_t count = 0u;
    size_t length = sizeof marker - 1u;
    size_t i;
    /* the magnitude as unsigned: -INT_MIN overflows an int */
    uint32_t magnitude = status < 0 ? 0u - (uint32_t)status : (uint32_t)status;
    do {
        digits[count++] = (char)('0' + (int)(magnitude % 10u));
        magnitude /= 10u;
    } while (magnitude != 0u);
    for (i = 0u; i < length; ++i) {
        line[i] = marker[i];
    }
    if (status < 0) {
        line[length++] = '-';
    }
    while (count != 0u) {
        line[length++] = digits[--count];
    }
    line[length] = '\0';
    lp_console_line(line);
    __asm__ volatile("dsb" ::: "memory");
    LP_AIRCR = LP_AIRCR_VECTKEY | LP_AIRCR_SYSRESETREQ;
    __asm__ volatile("dsb" ::: "memory");
    for (;;) {
    }
}
