"""The RISC-V backend: RV32 microcontroller cores (RV32IMC, RV32IMAFC), built with Debian's
riscv64-unknown-elf-gcc and picolibc, run on QEMU's `virt` machine (no TVM).

- kernels: the generic C ones so far (`backends.schedules` gives this backend `generic_c`'s schedules), so
  every bundle is bit-exact with the reference by construction; no C helpers;
- `bundle_files/`: OUT/riscv/, the startup code, UART0 output and exit, picolibc's streams, the instruction
  counter and the linker script of a board program (`backends.riscv.selftest` builds and runs a bundle's
  self-test with them);
- the runner: `emulated_target` is None for now, so the compile's own self-test runs on the host (the
  library is built with the profile's RISC-V compiler); the emulated run is `backends.riscv.selftest`'s.
"""

from __future__ import annotations

from typing import Optional

from backends.backend import Backend
from emulator.boards import CortexMTarget
from target.profile import Profile


def emulated_target(profile: Profile) -> Optional[CortexMTarget]:
    """None: the compile's self-test of a RISC-V profile runs on the host (see the module's docstring)."""
    return None


RISCV = Backend("riscv", None, emulated_target)
