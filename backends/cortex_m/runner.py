"""The Cortex-M runner (`backends.backend.EmulatedRunner`): a profile's self-test on QEMU's MPS2/MPS3 boards.

Its files are OUT/cortex_m/ (`bundle_files.support`: startup code, linker script, qemu-test Make and CMake
files, the profiling build's run function); `emulator.selftest` builds, runs and measures the self-test ELF,
`emulator.profile` runs the profiling build.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from backends.cortex_m.bundle_files import support
from emulator.boards import CortexMTarget
from emulator.qemu import run_qemu
# Modules, not their names: emulator.selftest and emulator.profile import backends (this package among
# them), so when one of them is imported first, this runs while it is only partly defined.
from emulator import profile as call_profile
from emulator import selftest

if TYPE_CHECKING:
    from backends.backend import EmulatedRun
    from packager.build_files import BuildConfig

TOOLCHAIN_FILE = f"{support.SUPPORT_DIR}/arm-none-eabi.cmake"
"""The CMake toolchain file the bundle ships (arm-none-eabi-gcc for its core), relative to OUT/."""


@dataclass(frozen=True)
class CortexMRunner:
    """Runs a profile's self-test on `target`'s board (`target.name` is the profile's name)."""

    target: CortexMTarget
    manifest_key: str = "cortex_m"
    build_dir: str = support.CROSS_BUILD_DIR

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def board_name(self) -> str:
        return self.target.board.name

    def support_files(self, out_dir: Path, model: str, config: BuildConfig) -> list[Path]:
        return support.write_cortex_m_support(out_dir, model, config)

    def build_rule_files(self, model: str, config: BuildConfig) -> dict[str, str]:
        return {support.QEMU_TEST_MAKEFILE: support.makefile_fragment(model, config)}

    def makefile_lines(self) -> list[str]:
        return [f"# The self-test on the emulated {self.name}: `make qemu-test`.", support.QEMU_TEST_MAKE_INCLUDE,
                "check: qemu-test", ""]

    def cmake_lines(self) -> list[str]:
        return [f"  # The self-test on the emulated {self.name}: the `qemu-test` target. Configure the",
                f"  # library for the device with -DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN_FILE}.",
                f"  {support.QEMU_TEST_CMAKE_INCLUDE}"]

    def toolchain_file(self) -> Optional[str]:
        return TOOLCHAIN_FILE

    def profiled_model_source(self, model: str) -> Optional[str]:
        return support.profiled_model_source(model)

    def build(self, out_dir: Path, jobs: int = 1) -> Path:
        return selftest.build_selftest_elf(out_dir, jobs)

    def run(self, out_dir: Path, model: str, timeout_s: float = 600.0, members: tuple[str, ...] = ()) -> EmulatedRun:
        return selftest.run_selftest(out_dir, model, self.target, timeout_s, arena_symbol=f"{model}_arena",
                                     members=members).emulated_run()

    def run_program(self, elf: Path, timeout_s: float = 600.0) -> EmulatedRun:
        return selftest.emulated_run(run_qemu(elf, self.target.board, timeout_s), self.board_name)

    def board_sources(self) -> tuple[str, ...]:
        return (*support.BOARD_SOURCES, f"{support.SUPPORT_DIR}/{support.CALL_PROFILE_SOURCE}")

    def cross_compile_command(self, config: BuildConfig) -> tuple[str, ...]:
        return (os.environ.get(support.COMPILER_VARIABLE, config.cc), *support.cross_compile_flags(config))

    def call_profile_output(self, out_dir: Path) -> Optional[str]:
        return call_profile.profile_output(out_dir, self.target.board)
