"""Run a self-test ELF on QEMU's emulated board and read its verdict and instruction count."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from emulator.boards import ICOUNT_SHIFT, Board

INSTRUCTIONS_LINE = re.compile(r"instructions per inference \(QEMU -icount, not cycles\): (\d+)")
"""The line lp_icount_report() prints."""


class QemuError(RuntimeError):
    """QEMU itself failed (no such ELF, a bad image), so its exit status is no verdict."""


class QemuTimeoutError(QemuError):
    """The program did not end within the allowed time (an endless loop or far too slow a model)."""


@dataclass(frozen=True)
class QemuResult:
    """What one run gave: QEMU's exit status (main's return value, or a fault's status), the program's
    output, and the instructions (QEMU -icount, NOT cycles) of the last "instructions per inference" line,
    None when the program printed none."""

    exit_code: int
    stdout: str
    stderr: str
    instructions: int | None


def qemu_command(board: Board) -> list[str]:
    """`qemu-system-arm` and its arguments up to, not including, `-kernel ELF`."""
    return [
        "qemu-system-arm", "-M", board.name, "-nographic", "-monitor", "none", "-semihosting",
        "-icount", f"shift={ICOUNT_SHIFT}",
    ]


def run_qemu(elf: Path, board: Board, timeout_s: float = 600.0) -> QemuResult:
    """Run `elf` on `board` under `-icount`; QemuTimeoutError after `timeout_s` seconds, QemuError when QEMU
    reports an error of its own (its exit status would look like a failed self-test)."""
    if not Path(elf).is_file():
        raise QemuError(f"no ELF to run: {elf}")
    command = qemu_command(board) + ["-kernel", str(elf)]
    try:
        completed = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise QemuTimeoutError(f"{elf} did not finish on {board.name} within {timeout_s:g} s") from None
    if completed.stderr.startswith("qemu-system-arm:"):
        raise QemuError(f"{elf} on {board.name}: {completed.stderr.strip()}")
    counts = INSTRUCTIONS_LINE.findall(completed.stdout)
    return QemuResult(
        exit_code=completed.returncode,
        stdout=completed.stdout,
        stderr=completed.stderr,
        instructions=int(counts[-1]) if counts else None,
    )
