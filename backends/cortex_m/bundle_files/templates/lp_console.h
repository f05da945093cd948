/* The board program's one channel to the host (written for this project): text on the board's UART0, which
 * QEMU connects to its standard output, and the end of the run.
 *
 * The program gets nothing else from the host: QEMU runs without semihosting, so there is no host file, clock
 * or command to reach. newlib's stdio writes here through lp_syscalls.c. A run ends with lp_end: the exit
 * marker line (LP_EXIT_MARKER and the status, lp_board.h) on the UART, then a system reset request, which
 * QEMU's -no-reboot turns into QEMU's exit. The host reads the program's status from that line.
 */
#ifndef LP_CONSOLE_H
#define LP_CONSOLE_H

#include <stddef.h>

/* Enables UART0's transmitter; call before any output. */
void lp_console_init(void);

/* Writes `bytes` bytes of `text` to UART0, waiting while its one-byte transmit buffer is full. */
void lp_console_write(const char *text, size_t bytes);

/* Writes the NUL-terminated `text` to UART0 as a line of its own: a newline before it unless the output so
 * far ends with one, and one after it. */
void lp_console_line(const char *text);

/* Prints the exit marker with `status` and resets the board: QEMU (-no-reboot) exits. Never returns. */
void lp_end(int status) __attribute__((noreturn));

#endif /* LP_CONSOLE_H */
