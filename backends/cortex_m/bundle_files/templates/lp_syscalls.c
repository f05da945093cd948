/* newlib's system calls for a program on QEMU's MPS2 boards (written for this project).
 *
 * Linked in place of newlib's semihosting library (rdimon), which would hand the program the host's files
 * and shell: standard output and error go to UART0 (lp_console.h), standard input is empty, no file can be
 * opened, exit() ends the run with its exit marker, and malloc's heap (newlib's stdio buffers) grows from
 * the end of static RAM up to the stack's reservation (link.ld).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "lp_console.h"

#define LP_STDERR_FILENO 2

extern char end[];              /* link.ld: the end of static RAM */
extern char __stack_limit__[];  /* link.ld: the lowest address of the stack's reservation */

int _close(int file);
int _fstat(int file, struct stat *status);
int _isatty(int file);
off_t _lseek(int file, off_t offset, int whence);
int _read(int file, char *bytes, int count);
int _write(int file, const char *bytes, int count);
void *_sbrk(ptrdiff_t increment);
void _exit(int status) __attribute__((noreturn));
int _kill(int process, int signal);
int _getpid(void);

static int lp_is_standard_stream(int file)
{
    return file >= 0 && file <= LP_STDERR_FILENO;
}

int _close(int file)
{
    (void)file;
    errno = EBADF;
    return -1;
}

/* The standard streams are character devices (so stdio buffers a line at a time); there is no other file. */
int _fstat(int file, struct stat *status)
{
    if (!lp_is_standard_stream(file)) {
        errno = EBADF;
        return -1;
    }
    status->st_mode = S_IFCHR;
    return 0;
}

int _isatty(int file)
{
    if (!lp_is_standard_stream(file)) {
        errno = EBADF;
        return 0;
    }
    return 1;
}

off_t _lseek(int file, off_t offset, int whence)
{
    (void)file;
    (void)offset;
    (void)whence;
    errno = ESPIPE;
    return -1;
}

/* Standard input is empty: end of file. */
int _read(int file, char *bytes, int count)
{
    (void)bytes;
    (void)count;
    if (!lp_is_standard_stream(file)) {
        errno = EBADF;
        return -1;
    }
    return 0;
}

int _write(int file, const char *bytes, int count)
{
    if (!lp_is_standard_stream(file) || count < 0) {
        errno = EBADF;
        return -1;
    }
    lp_console_write(bytes, (size_t)count);
    return count;
}

void *_sbrk(ptrdiff_t increment)
{
    static char *lp_heap_end = end;
    char *const previous = lp_heap_end;
    if (increment > __stack_limit__ - lp_heap_end || increment < end - lp_heap_end) {
        errno = ENOMEM;
        return (void *)-1;
    }
    lp_heap_end += increment;
    return previous;
}

void _exit(int status)
{
    lp_end(status);
}

/* raise() and abort() signal the program itself: it ends with the signal's number as its status. */
int _kill(int process, int signal)
{
    (void)process;
    lp_end(128 + signal);
}

int _getpid(void)
{
    return 1;
}
