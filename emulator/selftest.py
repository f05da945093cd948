"""Build a bundle's self-test for a Cortex-M target, run it under QEMU and measure it: one call.

For the manifest writer and the benchmark script. Needs OUT/cortex_m/ (write_cortex_m_support) and the
bundle's sources; it runs `make -f cortex_m/qemu-test.mk`, so it does not depend on the bundle's Makefile.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from emulator.boards import CortexMTarget
from emulator.qemu import QemuResult, run_qemu
from emulator.sizes import read_sizes
from backends.cortex_m.bundle_files.support import CROSS_BUILD_DIR, QEMU_TEST_MAKEFILE, SELFTEST_ELF, model_code_stems

INSTRUCTIONS_NOTE = "instructions executed under QEMU -icount, not cycles of a real core"


class CortexMBuildError(RuntimeError):
    """The cross build of the self-test failed; the message ends with the compiler's last lines."""


@dataclass(frozen=True)
class CortexMSelfTest:
    """One run of a bundle's self-test on its emulated board, with the ELF's sizes (see read_sizes)."""

    target: CortexMTarget
    result: QemuResult
    sizes: dict[str, object]

    def manifest_entry(self) -> dict[str, object]:
        """JSON-ready facts for manifest.json: target, board, the exit status the self-test's exit marker
        reported (the verdict is packager.selftest_verdict's), instructions, bytes."""
        return {
            "target": self.target.name,
            "board": self.target.board.name,
            "selftest_exit_code": self.result.exit_status,
            "instructions_per_inference": self.result.instructions,
            "instructions_note": INSTRUCTIONS_NOTE,
            **self.sizes,
        }


def cross_make_command(goal: str, jobs: int = 1) -> list[str]:
    """The command line of `make <goal>` of cortex_m/qemu-test.mk in a bundle's folder, `jobs` compilers at once."""
    return ["make", "-s", f"-j{max(1, jobs)}", "-f", QEMU_TEST_MAKEFILE, goal]


def make_cross(out_dir: Path, goal: str, jobs: int = 1) -> None:
    """`make <goal>` of OUT/cortex_m/qemu-test.mk, `jobs` compilers at once; CortexMBuildError with the
    compiler's last lines."""
    build = subprocess.run(cross_make_command(goal, jobs), cwd=out_dir, capture_output=True, text=True, check=False)
    if build.returncode != 0:
        tail = "\n".join(build.stderr.strip().splitlines()[-20:])
        raise CortexMBuildError(f"cross build ({goal}) of {out_dir} failed:\n{tail}")


def build_selftest_elf(out_dir: Path, jobs: int = 1) -> Path:
    """Cross-compile OUT/'s self-test with OUT/cortex_m/qemu-test.mk, `jobs` compilers at once; return the
    ELF's path."""
    make_cross(out_dir, "cortex-m-elf", jobs)
    return Path(out_dir) / SELFTEST_ELF


def run_selftest(out_dir: Path, name: str, target: CortexMTarget, timeout_s: float = 600.0,
                 arena_symbol: str | None = None) -> CortexMSelfTest:
    """Build, run and measure model `name`'s self-test; the stack peak is that of `<name>_run`."""
    elf = build_selftest_elf(out_dir)
    result = run_qemu(elf, target.board, timeout_s)
    sizes = read_sizes(
        elf,
        sorted((Path(out_dir) / CROSS_BUILD_DIR).rglob("*.su")),
        stack_root=f"{name}_run",
        arena_symbol=arena_symbol,
        bundle_sources=model_code_stems(name),
    )
    return CortexMSelfTest(target, result, sizes)
