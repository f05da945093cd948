"""The RISC-V backend: RV32 microcontroller cores (RV32IMC, RV32IMAFC), built with Debian's
riscv64-unknown-elf-gcc and picolibc, run on QEMU's `virt` machine (no TVM).

- `schedules/` (TVM): eight accumulators per integer MAC kernel (for 31 registers) where generic_c has four,
  and CONV_2D / FULLY_CONNECTED reductions as calls of the int8 window MAC, DEPTHWISE_CONV_2D ones as calls
  of the int8 depthwise MAC;
- `helpers/` (no TVM): those helpers' C (`RISCV_HELPERS`), unit-tested on the host and under QEMU virt;
- `bundle_files/`: OUT/riscv/, the startup code, UART0 output and exit, picolibc's streams, the instruction
  counter and the linker script of a board program, and a bundle's self-test build (riscv/qemu-test.mk,
  riscv/qemu-run.sh);
- `kind_targets`: the kernel kinds' speed targets on an RV32IM core (report.md marks the calls far above them);
- `rounding_forms`: the bundles' "double_small" requantization in RV32IM's form (one MULH for its nudge);
- the runner: `emulated_runner` (`runner.RiscvRunner`): the compile's self-test of a RISC-V profile is built
  with the profile's compiler by OUT/riscv/qemu-test.mk and run and measured on QEMU's `virt` machine
  (`emulator.boards.RISCV_BOARDS`), like a Cortex-M profile's on its board (manifest key "riscv").
"""

from __future__ import annotations

from typing import Optional

from backends.backend import Backend
from backends.riscv.family import RISCV_FAMILY
from backends.riscv.helpers import RISCV_HELPERS
from backends.riscv.kind_targets import kind_targets
from backends.riscv.runner import RiscvRunner
from emulator.boards import RISCV_BOARDS
from packager.fixed_point_c import SMALL_RIGHT_SHIFT, SMALL_RIGHT_SHIFT_MULH
from target.profile import Profile


def emulated_runner(profile: Profile) -> Optional[RiscvRunner]:
    """What runs the profile's self-test on its QEMU RISC-V machine; None when the profile names none of ours
    (its self-test then runs on the host)."""
    if profile.qemu_board not in RISCV_BOARDS:
        return None
    return RiscvRunner(profile.name, RISCV_BOARDS[profile.qemu_board])


RISCV = Backend(RISCV_FAMILY, RISCV_HELPERS, emulated_runner, kind_targets,
                rounding_forms={SMALL_RIGHT_SHIFT: SMALL_RIGHT_SHIFT_MULH}, weights_block=True)
"""The RISC-V backend; its bundles' "double_small" requantization in the form of RV32IM's MULH
(`packager.fixed_point_c.SMALL_RIGHT_SHIFT_MULH`: rv32imc, kws_gru24_31x13, 510,054 -> 493,048 instructions and
37,266 -> 32,660 B of code)."""
