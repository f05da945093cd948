"""The RISC-V runner (`backends.backend.EmulatedRunner`): a profile's self-test on QEMU's RISC-V `virt` machine.

Its files are OUT/riscv/ (`bundle_files.support`: startup code, linker script, the instruction counter, the
self-test ELF's Makefile riscv/qemu-test.mk and run script, the profiling build's run function); the
`emulator` package runs and measures the ELF (`emulator.selftest.measure_selftest` with the RISC-V binutils,
`emulator.profile` for the profiling build), in the same sandbox as the Arm boards' (`emulator.qemu`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from backends.cortex_m.bundle_files.support import CALL_PROFILE_SOURCE, profiled_model_source
from backends.riscv.bundle_files import support
from emulator.boards import RiscvBoard
from emulator.qemu import run_qemu
# Modules, not their names: emulator.selftest and emulator.profile import backends (this package among
# them), so when one of them is imported first, this runs while it is only partly defined.
from emulator import profile as call_profile
from emulator import selftest
from emulator.stack import RISCV_CODE

if TYPE_CHECKING:
    from backends.backend import EmulatedRun
    from packager.build_files import BuildConfig

ELF_GOAL = "riscv-elf"
PROFILE_GOAL = "riscv-profile-elf"
"""The goals of riscv/qemu-test.mk that build the self-test ELF and the profiling build's."""


@dataclass(frozen=True)
class RiscvRunner:
    """Runs the self-test of code compiled for profile `name` on `board`."""

    name: str
    board: RiscvBoard
    manifest_key: str = "riscv"
    build_dir: str = support.BUILD_DIR

    @property
    def board_name(self) -> str:
        return self.board.name

    def support_files(self, out_dir: Path, model: str, config: BuildConfig) -> list[Path]:
        return support.write_selftest_support(out_dir, self.name, self.board, model, config)

    def build_rule_files(self, model: str, config: BuildConfig) -> dict[str, str]:
        return {support.QEMU_TEST_MAKEFILE: support.makefile_fragment(self.name, self.board, model, config)}

    def makefile_lines(self) -> list[str]:
        return [f"# The self-test on the emulated {self.name} (QEMU's RISC-V {self.board.name}): `make qemu-test`.",
                support.QEMU_TEST_MAKE_INCLUDE, "check: qemu-test", ""]

    def cmake_lines(self) -> list[str]:
        return [f"  # The self-test on the emulated {self.name}: the `qemu-test` target runs {support.QEMU_TEST_MAKEFILE}",
                "  # (the profile's compiler, QEMU's RISC-V machine) in the bundle's folder.",
                "  add_custom_target(qemu-test COMMAND make -f " + support.QEMU_TEST_MAKEFILE + " qemu-test",
                "                    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} USES_TERMINAL VERBATIM)"]

    def toolchain_file(self) -> Optional[str]:
        return None

    def profiled_model_source(self, model: str) -> Optional[str]:
        return profiled_model_source(model, support.SUPPORT_DIR)

    def build(self, out_dir: Path, jobs: int = 1) -> Path:
        selftest.make_cross(out_dir, ELF_GOAL, jobs, support.QEMU_TEST_MAKEFILE)
        return Path(out_dir) / support.SELFTEST_ELF

    def run(self, out_dir: Path, model: str, timeout_s: float = 600.0, members: tuple[str, ...] = ()) -> EmulatedRun:
        return selftest.measure_selftest(self.build(out_dir), model, self.name, self.board, timeout_s,
                                         arena_symbol=f"{model}_arena", code=RISCV_CODE,
                                         members=members).emulated_run()

    def run_program(self, elf: Path, timeout_s: float = 600.0) -> EmulatedRun:
        return selftest.emulated_run(run_qemu(elf, self.board, timeout_s), self.board_name)

    def board_sources(self) -> tuple[str, ...]:
        return (*support.BOARD_SOURCES, f"{support.SUPPORT_DIR}/{CALL_PROFILE_SOURCE}")

    def cross_compile_command(self, config: BuildConfig) -> tuple[str, ...]:
        return (os.environ.get(support.COMPILER_VARIABLE, config.cc), *support.cross_compile_flags(config))

    def call_profile_output(self, out_dir: Path) -> Optional[str]:
        return call_profile.profile_output(out_dir, self.board, makefile=support.QEMU_TEST_MAKEFILE,
                                           goal=PROFILE_GOAL, elf=support.PROFILE_ELF)
