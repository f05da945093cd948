"""Build a bundle's self-test for an emulated board, run it under QEMU and measure it: one call.

For the backends' runners (`backends.cortex_m.runner`, `backends.riscv.runner`) and the benchmark scripts.
Needs the runner's support files (OUT/cortex_m/: write_cortex_m_support) and the bundle's sources; it runs
the ELF's own Makefile (`make -f cortex_m/qemu-test.mk`), so it does not depend on the bundle's Makefile.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from backends.backend import EmulatedBuildError, EmulatedRun
from emulator.boards import Board, CortexMTarget, RiscvBoard
from emulator.qemu import QemuResult, run_qemu
from emulator.sizes import read_sizes
from emulator.stack import ARM_CODE, CodeReading
from backends.cortex_m.bundle_files.support import (QEMU_TEST_MAKEFILE, SELFTEST_ELF, model_code_stems,
                                                  model_weight_stems)

INSTRUCTIONS_NOTE = "instructions executed under QEMU -icount, not cycles of a real core"


@dataclass(frozen=True)
class BoardSelfTest:
    """One run of a bundle's self-test compiled for profile `target` on the emulated board named `board`, with
    the ELF's sizes (see read_sizes)."""

    target: str
    board: str
    result: QemuResult
    sizes: dict[str, object]

    def manifest_entry(self) -> dict[str, object]:
        """JSON-ready facts for manifest.json: target, board, the exit status the self-test's exit marker
        reported (the verdict is packager.selftest_verdict's), instructions, bytes."""
        return {
            "target": self.target,
            "board": self.board,
            "selftest_exit_code": self.result.exit_status,
            "instructions_per_inference": self.result.instructions,
            "instructions_note": INSTRUCTIONS_NOTE,
            **self.sizes,
        }

    def emulated_run(self) -> EmulatedRun:
        """The run as the packager judges and records it (its measurements: `manifest_entry`)."""
        return emulated_run(self.result, self.board, self.manifest_entry())


def emulated_run(result: QemuResult, board: str, measurements: dict[str, object] | None = None) -> EmulatedRun:
    """QEMU's `result` of a program on the board named `board` as a runner's `EmulatedRun`, with `measurements`
    (None: a program run without measuring it)."""
    return EmulatedRun(result.exit_status, result.ending(), result.stdout, board, result.instructions,
                       measurements or {})


def cross_make_command(goal: str, jobs: int = 1, makefile: str = QEMU_TEST_MAKEFILE) -> list[str]:
    """The command line of `make <goal>` of the ELF's `makefile` (relative to OUT/: cortex_m/qemu-test.mk unless
    given) in a bundle's folder, `jobs` compilers at once."""
    return ["make", "-s", f"-j{max(1, jobs)}", "-f", makefile, goal]


def make_cross(out_dir: Path, goal: str, jobs: int = 1, makefile: str = QEMU_TEST_MAKEFILE) -> None:
    """`make <goal>` of OUT/`makefile` (cortex_m/qemu-test.mk unless given), `jobs` compilers at once;
    EmulatedBuildError with the compiler's last lines."""
    build = subprocess.run(cross_make_command(goal, jobs, makefile), cwd=out_dir, capture_output=True, text=True,
                           check=False)
    if build.returncode != 0:
        tail = "\n".join(build.stderr.strip().splitlines()[-20:])
        raise EmulatedBuildError(f"cross build ({goal}) of {out_dir} failed:\n{tail}")


SELFTEST_INDIRECT_CALLEES = ("selftest_read_row",)
"""The self-test's functions a bundle calls through a pointer (a row-wise input's read_row,
packager/templates/selftest_rows.c.in): their stack is counted on top of the run's."""


def build_selftest_elf(out_dir: Path, jobs: int = 1) -> Path:
    """Cross-compile OUT/'s self-test with OUT/cortex_m/qemu-test.mk, `jobs` compilers at once; return the
    ELF's path."""
    make_cross(out_dir, "cortex-m-elf", jobs)
    return Path(out_dir) / SELFTEST_ELF


def run_selftest(out_dir: Path, name: str, target: CortexMTarget, timeout_s: float = 600.0,
                 arena_symbol: str | None = None, members: tuple[str, ...] = ()) -> BoardSelfTest:
    """Build, run and measure model `name`'s self-test; the stack peak is that of `<name>_run` (of a bundle of
    several models, `members`: the deepest of their run functions')."""
    return measure_selftest(build_selftest_elf(out_dir), name, target.name, target.board, timeout_s, arena_symbol,
                            members=members)


def measure_selftest(elf: Path, name: str, target: str, board: Board | RiscvBoard,
                     timeout_s: float = 600.0, arena_symbol: str | None = None,
                     code: CodeReading = ARM_CODE, members: tuple[str, ...] = ()) -> BoardSelfTest:
    """Run model `name`'s self-test `elf`, compiled for profile `target` with its objects and `.su` files in
    the folder `elf` is in, on `board`, and measure it with `code`'s binutils; the stack peak is that of
    `<name>_run` (with the self-test's read_row's on top, where the bundle takes its input row by row), or for a
    bundle of several models (`members`, packager.several) the deepest of the members' `<member>_run` (each
    member's in `stack_peak_bytes_per_model`)."""
    result = run_qemu(elf, board, timeout_s)
    su_files = sorted(Path(elf).parent.rglob("*.su"))
    sizes = read_sizes(
        elf,
        su_files,
        stack_roots={model: f"{model}_run" for model in (members or (name,))},
        stack_indirect=SELFTEST_INDIRECT_CALLEES,
        arena_symbol=arena_symbol,
        bundle_sources=model_code_stems(name, members),
        bundle_weight_sources=model_weight_stems(name),
        code=code,
    )
    return BoardSelfTest(target, board.name, result, sizes)
