/* picolibc's standard streams and exit for a board program on QEMU's RISC-V virt machine (written for this
 * project).
 *
 * Linked in place of picolibc's semihosting library, which would hand the program the host's files: stdout
 * and stderr write to UART0 (lp_console.h), stdin is always at its end, and _exit (exit's last step, after
 * stdio is flushed) ends the run with its exit marker. picolibc's malloc takes its heap from link.ld's
 * __heap_start/__heap_end, between the end of static RAM and the stack's reservation.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lp_console.h"

static int lp_put(char byte, FILE *file)
{
    (void)file;
    lp_console_write(&byte, 1u);
    return (unsigned char)byte;
}

static int lp_get(FILE *file)
{
    (void)file;
    return EOF;
}

static FILE lp_stdio = FDEV_SETUP_STREAM(lp_put, lp_get, NULL, _FDEV_SETUP_RW);

FILE *const stdin = &lp_stdio;
FILE *const stdout = &lp_stdio;
FILE *const stderr = &lp_stdio;

void _exit(int status)
{
    lp_end(status);
}
