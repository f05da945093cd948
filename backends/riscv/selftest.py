"""Build a bundle's self-test for a RISC-V board, run it under QEMU and measure it: one call.

The self-test ELF is the bundle's sources (`<name>_kernels.c`, `_model.c`, `_weights.c`, selftest.c) compiled
with the bundle's `BuildConfig` (the compiler and every flag the shipped library is compiled with) plus only
`-DLP_CORTEX_M`, the macro under which selftest.c counts one inference through lp_icount.h (its name is the
Cortex-M support's; the counter behind it is the board's), linked with OUT/riscv/ (write_riscv_support) and
picolibc. So the instructions and sizes measured are those of the code that ships. For the benchmark script
and the tests; the compile's own self-test of a RISC-V profile still runs on the host.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from backends.cortex_m.bundle_files.support import MODEL_CODE_SUFFIXES, bundle_sources
from backends.riscv.bundle_files.support import BOARD_SOURCES, SUPPORT_DIR, link_flags, write_riscv_support
from emulator.boards import RiscvBoard
from emulator.qemu import QemuResult, run_qemu
from emulator.sizes import section_sizes
from emulator.tools import RISCV_BINUTILS_PREFIX

if TYPE_CHECKING:
    from packager.build_files import BuildConfig

BUILD_DIR = "build-riscv"
"""Where the RISC-V self-test ELF and its map go, relative to OUT/."""

SELFTEST_MACRO = "-DLP_CORTEX_M"
"""The macro under which selftest.c measures one inference with lp_icount.h (see the module's docstring)."""


RISCV_SIZE = f"{RISCV_BINUTILS_PREFIX}size"
"""The size tool that reads the RISC-V ELF and object files."""


class RiscvBuildError(RuntimeError):
    """The cross build of the self-test failed; the message ends with the compiler's last lines."""


@dataclass(frozen=True)
class RiscvSelfTest:
    """One run of a bundle's self-test on a RISC-V board, and the ELF's bytes: `code_bytes` (.text and
    .rodata: code, libc and constants other than the weights), `weights_bytes` (.weights), `data_bytes`,
    `bss_bytes`, and `bundle_code_bytes` (the .text of the bundle's kernels and run function as compiled)."""

    result: QemuResult
    code_bytes: int
    weights_bytes: int
    data_bytes: int
    bss_bytes: int
    bundle_code_bytes: int


def build_riscv_selftest(out_dir: Path, name: str, config: BuildConfig, board: RiscvBoard) -> Path:
    """Write OUT/riscv/ for `board` and cross-compile model `name`'s self-test; return the ELF's path."""
    out_dir = Path(out_dir)
    write_riscv_support(out_dir, board)
    build = out_dir / BUILD_DIR
    build.mkdir(exist_ok=True)
    elf = build / "selftest.elf"
    command = [config.cc, *config.compile_flags, SELFTEST_MACRO, "-I.", f"-I{SUPPORT_DIR}", *link_flags(config),
               "-T", f"{SUPPORT_DIR}/link.ld",
               f"-Wl,-Map={build / 'selftest.map'}", "-save-temps=obj",
               *bundle_sources(name), *BOARD_SOURCES, *config.libs, "-o", str(elf)]
    compiled = subprocess.run(command, cwd=out_dir, capture_output=True, text=True, check=False)
    if compiled.returncode != 0:
        tail = "\n".join(compiled.stderr.strip().splitlines()[-20:])
        raise RiscvBuildError(f"RISC-V build of {out_dir}'s self-test failed:\n{tail}")
    return elf


def run_riscv_selftest(out_dir: Path, name: str, config: BuildConfig, board: RiscvBoard,
                       timeout_s: float = 600.0) -> RiscvSelfTest:
    """Build, run and measure model `name`'s self-test on `board`."""
    elf = build_riscv_selftest(out_dir, name, config, board)
    result = run_qemu(elf, board, timeout_s)
    sections = section_sizes(elf, RISCV_SIZE)
    objects = [Path(out_dir) / BUILD_DIR / f"selftest.elf-{name}{suffix}.o" for suffix in MODEL_CODE_SUFFIXES]
    bundle_code = sum(size for obj in objects if obj.exists()
                      for section, size in section_sizes(obj, RISCV_SIZE).items()
                      if section.startswith(".text"))
    return RiscvSelfTest(result, sections.get(".text", 0) + sections.get(".rodata", 0), sections.get(".weights", 0),
                         sections.get(".data", 0) + sections.get(".tdata", 0),
                         sections.get(".bss", 0) + sections.get(".tbss", 0), bundle_code)
