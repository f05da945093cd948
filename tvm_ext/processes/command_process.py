"""What the compile command's process needs before anything else of ours is imported (stdlib only).

`python -m tvm_ext.compile` and the console script `tvm-ext-compile` import `tvm_ext` first; its first line
calls `prepare_if_compile_command()`, which, in those processes only:
- takes the working directory off the import path (`python -m` puts it first, where a `target/` folder, as in
  every Rust or Maven project, would shadow our top-level `target`, `packager` and `memory_planner` packages);
- installs the SIGINT and SIGTERM handlers, so that an interrupt at any moment ends the process with one
  stderr line and exit code 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).

The handlers act in three phases. Before the work starts (imports, arguments) there is nothing to clean up:
they write the line and end the process at once. Inside `work_that_unwinds()` the first signal raises
KeyboardInterrupt so that cleanup runs (later signals are ignored, so cleanup is not cut short);
`received_signal()` remembers it even when TVM's FFI turns the KeyboardInterrupt raised inside a C++ callback
into a RuntimeError, and `stop_if_signalled()` stops the work at its next step if a library swallowed it.
Inside `interrupts_held_back()` (and while a module is imported) the KeyboardInterrupt waits until the block
ends: cleanup and renames that must not stop halfway run there. After the work, or from `outcome_decided()`
on, the outcome is decided and signals are ignored (SIG_IGN).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

COMMAND_MODULE = "tvm_ext.compile"
COMMAND_SCRIPT = "tvm-ext-compile"  # [project.scripts] in pyproject.toml
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


_working = False  # inside work_that_unwinds(): a signal raises KeyboardInterrupt instead of ending the process
_received: int | None = None
_raised = False  # the KeyboardInterrupt for _received was raised: the retry timer must not raise a second one
_held_back = 0  # depth of interrupts_held_back() blocks
_stderr_at_install: int | None = None  # a duplicate of file descriptor 2 before the CLI redirects it


def prepare_if_compile_command() -> None:
    """In the compile command's process (see the module docstring), protect imports and install the handlers."""
    if Path(sys.argv[0]).name == COMMAND_SCRIPT:
        install_signal_handlers()
    elif sys.argv[:1] == ["-m"] and (COMMAND_MODULE in sys.orig_argv or f"-m{COMMAND_MODULE}" in sys.orig_argv):
        # sys.argv[0] is "-m" only while `python -m` imports the packages of the module it runs
        _take_working_directory_off_the_import_path()
        install_signal_handlers()


def _take_working_directory_off_the_import_path() -> None:
    """Replace sys.path[0] (the working directory, under `python -m`) by the folder our packages come from."""
    if sys.flags.safe_path or not sys.path:
        return
    if os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.getcwd()):
        sys.path[0] = str(Path(__file__).resolve().parents[2])


def install_signal_handlers() -> None:
    """Handle SIGINT and SIGTERM as the module docstring says, for the rest of the process (idempotent)."""
    global _stderr_at_install
    if _stderr_at_install is None:
        _stderr_at_install = os.dup(2)
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, _handle)
    signal.signal(signal.SIGALRM, _raise_once_unless_held_back)


def interrupted_line(signum: int) -> str:
    """The one stderr line for a process ended by `signum`."""
    return "tvm_ext.compile: interrupted" if signum == signal.SIGINT else \
        f"tvm_ext.compile: terminated by {signal.Signals(signum).name}"


def exit_code(signum: int) -> int:
    """The exit code for a process ended by `signum`: 128 + its number, as shells report it."""
    return 128 + signum


def received_signal() -> int | None:
    """The signal that interrupted the work, if one did."""
    return _received


def stop_if_signalled() -> None:
    """Raise KeyboardInterrupt if a signal arrived: call it between steps of the work, so that an interrupt some
    library swallowed (or turned into an exception it handled) still stops the work at the next step."""
    global _raised
    if _received is not None:
        _raised = True
        signal.setitimer(signal.ITIMER_REAL, 0)  # a retry still pending would interrupt the cleanup
        raise KeyboardInterrupt


@contextmanager
def interrupts_held_back() -> Iterator[None]:
    """Inside, a signal's KeyboardInterrupt waits until the block ends (it is retried every
    RETRY_SECONDS): wrap steps that must not stop halfway, such as deleting a staging folder or the two
    renames that replace an output folder. Outside the compile command it changes nothing."""
    global _held_back
    _held_back += 1
    try:
        yield
    finally:
        _held_back -= 1


@contextmanager
def work_that_unwinds() -> Iterator[None]:
    """Inside: a signal raises KeyboardInterrupt (once). After: signals are ignored (the outcome is decided)."""
    global _working
    _working = True
    try:
        yield
    finally:
        outcome_decided()


def outcome_decided() -> None:
    """From now on signals are ignored: call it once the result is in place (the bundle renamed into OUT), so
    that a late interrupt cannot report a failure for a bundle that exists. Outside the compile command, and
    after the work, it changes nothing."""
    global _working
    if not _working:
        return
    _working = False
    signal.setitimer(signal.ITIMER_REAL, 0)
    for signum in HANDLED_SIGNALS:
        if signal.getsignal(signum) is _handle:
            # SIG_IGN rather than our handler returning: Python resets its own handlers to the default
            # (ending the process by the signal) while it shuts down, but leaves SIG_IGN in place
            signal.signal(signum, signal.SIG_IGN)


# While a module is imported or inside interrupts_held_back(), KeyboardInterrupt is held back and tried again
# after this many seconds (raised inside a C extension's module initialisation, onnx's pybind11 module, it
# crashed the process with SIGSEGV).
RETRY_SECONDS = 0.02


def _handle(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is not None:
        return
    _received = signum
    if not _working:
        os.write(_stderr_at_install, (interrupted_line(signum) + "\n").encode())  # even while 2 is held back
        os._exit(exit_code(signum))
    _raise_once_unless_held_back(signal.SIGALRM, frame)


def _raise_once_unless_held_back(_signum: int, frame: FrameType | None) -> None:
    """Raise KeyboardInterrupt for the received signal, once, unless a module is being imported or the
    interrupt is held back: then try again RETRY_SECONDS later (SIGALRM)."""
    global _raised
    if _received is None or not _working or _raised:
        return
    if _held_back or _importing(frame):
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
        return
    _raised = True
    raise KeyboardInterrupt


def _importing(frame: FrameType | None) -> bool:
    """Whether the interrupted code runs inside an import (a frame of importlib's bootstrap on the stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False
