"""The RISC-V backend: RV32 microcontroller cores (RV32IMC, RV32IMAFC), built with Debian's
riscv64-unknown-elf-gcc and picolibc, run on QEMU's `virt` machine (no TVM).

- kernels: the generic C ones, with eight accumulators per integer MAC kernel (RISCV_SCHEDULES, for 31
  registers) where generic_c has four; no C helpers;
- `bundle_files/`: OUT/riscv/, the startup code, UART0 output and exit, picolibc's streams, the instruction
  counter and the linker script of a board program, and a bundle's self-test build (riscv/qemu-test.mk,
  riscv/qemu-run.sh);
- the runner: `emulated_runner` (`runner.RiscvRunner`): the compile's self-test of a RISC-V profile is built
  with the profile's compiler by OUT/riscv/qemu-test.mk and run and measured on QEMU's `virt` machine
  (`emulator.boards.RISCV_BOARDS`), like a Cortex-M profile's on its board (manifest key "riscv").
"""

from __future__ import annotations

from typing import Optional

from backends.backend import Backend, KernelSchedules, no_kind_targets
from backends.riscv.runner import RiscvRunner
from emulator.boards import RISCV_BOARDS
from target.profile import Profile


def emulated_runner(profile: Profile) -> Optional[RiscvRunner]:
    """What runs the profile's self-test on its QEMU RISC-V machine; None when the profile names none of ours
    (its self-test then runs on the host)."""
    if profile.qemu_board not in RISCV_BOARDS:
        return None
    return RiscvRunner(profile.name, RISCV_BOARDS[profile.qemu_board])


RISCV = Backend("riscv", None, emulated_runner, no_kind_targets)


RISCV_SCHEDULES = KernelSchedules(output_channel_tile=8, float_channel_tiles=(), mac=None)
"""Eight accumulators per integer MAC kernel: RV32 has 31 general registers, so eight sums, the pointers and
the loop counter stay in registers, and each input byte loaded feeds eight products; no MAC helpers."""
