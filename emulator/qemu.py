"""Run a board program (a self-test ELF) on QEMU's emulated board and read how it ended and what it counted.

The program gets no capability on the host: no semihosting (so no host files, clock or `system()`), no
network (-nic none: the board's Ethernet controller has no peer), no monitor, no default device, and QEMU
itself runs in its seccomp sandbox (no process spawned, no privileges gained). Its only output is the board's
UART0 (QEMU's stdout); it ends by printing its exit marker (emulator.boards.EXIT_MARKER) and requesting a
system reset, which -no-reboot turns into QEMU's exit. So QEMU's exit status says only whether QEMU ran; the
program's status is read from its last line.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from emulator.boards import EXIT_MARKER, FAULT_EXIT_CODES, ICOUNT_SHIFT, RISCV_TRAP_EXIT_CODE, Board, RiscvBoard

INSTRUCTIONS_LINE = re.compile(r"instructions per inference \(QEMU -icount, not cycles\): (\d+)")
"""The line lp_icount_report() prints."""

SANDBOX = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"
"""QEMU's `-sandbox` setting (seccomp): QEMU may not spawn a process, gain privileges, change its scheduling
or use obsolete system calls. Defence in depth: the program has no way to the host to begin with."""

MAX_OUTPUT_BYTES = 16 * 1024 * 1024
"""The most UART output a run may print (a self-test prints a few KiB; the profiling build a line per call)."""

_LAST_LINE = re.compile(r"(?:\A|\n)" + re.escape(EXIT_MARKER) + r"(-?\d+)\n?\Z")


class QemuError(RuntimeError):
    """QEMU itself failed to run (no such ELF, a bad image, an option it lacks), or the program printed more
    than MAX_OUTPUT_BYTES: the run says nothing about the program."""


class QemuTimeoutError(QemuError):
    """The program did not end within the allowed time (an endless loop or far too slow a model)."""


@dataclass(frozen=True)
class QemuResult:
    """What one run gave: the program's exit status as its exit marker reported it (main's return value, or a
    fault's status, FAULT_EXIT_CODES), None when its output does not end with the marker (it stopped some
    other way); what it printed before the marker; QEMU's own messages and exit status (negative: the signal
    that ended QEMU, as when the core locks up); and the instructions (QEMU -icount, NOT cycles) of the last
    "instructions per inference" line, None when the program printed none."""

    exit_status: int | None
    stdout: str
    stderr: str
    instructions: int | None
    qemu_status: int = 0

    def ending(self) -> str:
        """How the program ended, in a few words: "exit status 0", "a HardFault", ..."""
        if self.qemu_status < 0:
            fatal = [line for line in self.stderr.splitlines() if line.startswith("qemu: fatal:")]
            return f"QEMU stopped by signal {-self.qemu_status}" + (f" ({fatal[0]})" if fatal else "")
        if self.exit_status is None:
            return "no exit marker: the program stopped before its end"
        faults = [name for name, status in FAULT_EXIT_CODES.items() if status == self.exit_status]
        if self.exit_status == RISCV_TRAP_EXIT_CODE and "\nlp: trap " in "\n" + self.stdout:
            faults = ["trap"]
        return f"a {faults[0]}" if faults else f"exit status {self.exit_status}"


def board_arguments(board: Board | RiscvBoard) -> list[str]:
    """QEMU's arguments that run a program on `board` with UART0 on stdout and nothing else of the host, under
    -icount, a reset ending QEMU; not the sandbox (SANDBOX) nor `-kernel ELF`."""
    return [
        "-M", board.name, *board.machine_arguments, "-nodefaults", "-display", "none", "-serial", "stdio",
        "-nic", "none", "-no-reboot",
        "-icount", f"shift={ICOUNT_SHIFT}",
    ]


def qemu_command(board: Board | RiscvBoard) -> list[str]:
    """The board's QEMU (`qemu-system-arm`, `qemu-system-riscv32`) and its arguments in the sandbox, up to, not
    including, `-kernel ELF`."""
    return [board.qemu_program, *board_arguments(board), "-sandbox", SANDBOX]


def read_exit_marker(printed: str) -> tuple[int | None, str]:
    """The exit status of the marker that ends `printed` (None when it does not end with one), and what was
    printed before the marker."""
    last = _LAST_LINE.search(printed)
    if last is None:
        return None, printed
    return int(last[1]), printed[:last.start() + (1 if last[0].startswith("\n") else 0)]


def run_qemu(elf: Path, board: Board | RiscvBoard, timeout_s: float = 600.0,
             trace: Optional[Callable[[bytes], None]] = None) -> QemuResult:
    """Run `elf` on `board` under `-icount`; QemuTimeoutError after `timeout_s` seconds, QemuError when QEMU
    fails to run or the program prints more than MAX_OUTPUT_BYTES (QEMU is then stopped). QEMU ended by a
    signal (a locked-up core aborts it; the sandbox kills it) is a result: the program did not end.

    With `trace`, QEMU also logs every executed instruction (one instruction per translation block:
    `-singlestep -d exec,nochain`) into a pipe, never a file, and `trace` receives each log line as it comes
    (from a thread of its own)."""
    if not Path(elf).is_file():
        raise QemuError(f"no ELF to run: {elf}")
    command = qemu_command(board)
    trace_read, trace_write = os.pipe() if trace is not None else (-1, -1)
    if trace is not None:
        command += ["-singlestep", "-d", "exec,nochain", "-D", f"/dev/fd/{trace_write}"]
    command += ["-kernel", str(elf)]
    timed_out = threading.Event()
    with tempfile.TemporaryFile() as stderr, subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
            pass_fds=(trace_write,) if trace is not None else ()) as qemu:
        reader = None
        if trace is not None:
            os.close(trace_write)
            reader = threading.Thread(target=_read_lines, args=(trace_read, trace))
            reader.start()

        def stop() -> None:
            timed_out.set()
            qemu.kill()

        timer = threading.Timer(timeout_s, stop)
        timer.start()
        try:
            printed = qemu.stdout.read(MAX_OUTPUT_BYTES + 1)
            if len(printed) > MAX_OUTPUT_BYTES:
                qemu.kill()
            returncode = qemu.wait()
            if reader is not None:
                reader.join()
        finally:
            timer.cancel()
        stderr.seek(0)
        messages = stderr.read().decode(errors="replace")
    if timed_out.is_set() and returncode != 0:
        raise QemuTimeoutError(f"{elf} did not finish on {board.name} within {timeout_s:g} s")
    if len(printed) > MAX_OUTPUT_BYTES:
        raise QemuError(f"{elf} on {board.name} printed more than {MAX_OUTPUT_BYTES:,} bytes")
    if returncode > 0:
        raise QemuError(f"{elf} on {board.name}: QEMU ended with status {returncode}: {messages.strip()}")
    status, before = read_exit_marker(printed.decode(errors="backslashreplace"))
    if returncode < 0:
        status = None  # whatever it printed, the program did not end by itself
    counts = INSTRUCTIONS_LINE.findall(before)
    return QemuResult(status, before, messages, int(counts[-1]) if counts else None, returncode)


def _read_lines(descriptor: int, receive: Callable[[bytes], None]) -> None:
    """Pass each line read from the pipe `descriptor` to `receive`, until the writer closes it; then close it."""
    with os.fdopen(descriptor, "rb") as lines:
        for line in lines:
            receive(line)
