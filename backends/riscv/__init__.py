"""The RISC-V backend: RV32 microcontroller cores (RV32IMC, RV32IMAFC), built with Debian's
riscv64-unknown-elf-gcc and picolibc, run on QEMU's `virt` machine (no TVM).

- kernels: the generic C ones, with eight accumulators per integer MAC kernel (RISCV_SCHEDULES, for 31
  registers) where generic_c has four; no C helpers;
- `bundle_files/`: OUT/riscv/, the startup code, UART0 output and exit, picolibc's streams, the instruction
  counter and the linker script of a board program (`backends.riscv.selftest` builds and runs a bundle's
  self-test with them);
- the runner: `emulated_target` is None for now, so the compile's own self-test runs on the host (the
  library is built with the profile's RISC-V compiler); the emulated run is `backends.riscv.selftest`'s.
"""

from __future__ import annotations

from typing import Optional

from backends.backend import Backend, KernelSchedules, no_kind_targets
from emulator.boards import CortexMTarget
from target.profile import Profile


def emulated_target(profile: Profile) -> Optional[CortexMTarget]:
    """None: the compile's self-test of a RISC-V profile runs on the host (see the module's docstring)."""
    return None


RISCV = Backend("riscv", None, emulated_target, no_kind_targets)


RISCV_SCHEDULES = KernelSchedules(output_channel_tile=8, float_channel_tiles=(), mac=None)
"""Eight accumulators per integer MAC kernel: RV32 has 31 general registers, so eight sums, the pointers and
the loop counter stay in registers, and each input byte loaded feeds eight products; no MAC helpers."""
