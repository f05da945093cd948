"""The emulated boards and the cores compiled for them, as data.

One table of QEMU boards (memory map, timer, console UART), and the record of a compile target: a core and
the board that runs its code. Its compiler flags are not here: the bundle's one `BuildConfig` (from the device
profile) holds them, so the emulated self-test runs exactly the code the library ships; every other module
of `emulator` and `backends.cortex_m.bundle_files` reads these records, and nothing else hard-codes an address or a machine name.

Facts (QEMU 7.2, hw/arm/mps2.c and hw/arm/mps2-tz.c, checked by the tests on the real emulator):
- mps2-an385/an386/an500 boot from a vector table at 0x0; SSRAM1 (4 MiB) at 0x0, SSRAM2/3 (4 MiB) at
  0x20000000; the CMSDK APB timer0 at 0x40000000 is clocked at 25 MHz and raises IRQ 8; the CMSDK APB
  UART0 at 0x40004000 is QEMU's serial0 (stdout under -nographic).
- mps2-an505 (SSE-200 style IoT Kit, TrustZone) starts the Cortex-M33 in Secure state from VTOR_S =
  0x10000000, the Secure alias of SSRAM1 (4 MiB); SSRAM2 and SSRAM3 (2 MiB each, contiguous) are at
  0x28000000, Secure alias 0x38000000; the IoT Kit timer0 (Secure alias 0x50000000) is clocked at 20 MHz
  and raises IRQ 3; the FPGA's CMSDK APB UART0 (0x40200000, Secure alias 0x50200000, behind a PPC that lets
  Secure accesses through by default) is serial0.
- mps3-an547 (Corstone-300 FPGA image, SSE-300) starts the Cortex-M55 (MVE, FPU) in Secure state from
  VTOR_S = 0x0, its 512 KiB ITCM (Secure alias 0x10000000); the 512 KiB DTCM is at 0x20000000, the ISRAM
  (two 2 MiB banks behind MPCs in their reset state, which let Secure accesses through) at 0x21000000 and
  the QSPI flash (8 MiB) at 0x28000000. It has no CMSDK APB timer: the SSE-300's 64-bit system counter
  (control frame 0x58100000, status frame 0x58101000) counts MAINCLK, 32 MHz; its timer0 (0x58000000, an
  SSE-300 timer, not a CMSDK one) raises IRQ 3. The FPGA's CMSDK APB UART0 (Secure alias 0x59303000) is
  serial0.
- On all five, writing SYSRESETREQ to the core's AIRCR requests a system reset, which `-no-reboot` turns into
  QEMU's exit with status 0: how a board program ends (its status is in its exit marker, below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

MIB = 1024 * 1024

ICOUNT_SHIFT = 7
"""QEMU `-icount shift=N`: every executed instruction advances the virtual clock by 2**N ns."""

EXIT_MARKER = "lp: exit "
"""A board program's last line is this text and its exit status in decimal (`lp: exit 0`): the startup code
prints it on the UART when main returns (or exit() is called) and when a fault ends the program, then resets
the board. QEMU's own exit status says only that QEMU ran; the program's is this line's."""

FAULT_EXIT_CODES: dict[str, int] = {
    "NMI": 90,
    "HardFault": 91,
    "MemManage": 92,
    "BusFault": 93,
    "UsageFault": 94,
    "SecureFault": 95,
    "UnexpectedInterrupt": 96,
}
"""The exit status the startup code's exit marker gives for each exception, after a line `lp: <name>` (a
self-test itself exits 0, 1 or 2)."""


@dataclass(frozen=True)
class MemoryRegion:
    """A range of the core's address space; `origin` and `length` in bytes."""

    origin: int
    length: int


@dataclass(frozen=True)
class SystemCounter:
    """An Armv8-M system counter (the SSE-300's): a 64-bit count of `hz` ticks per second, enabled through
    CNTCR in its control frame at `control_base` and read from CNTCV in its status frame at `status_base`.
    Boards with one count instructions with it (no wrap to count) instead of the CMSDK APB timer0."""

    control_base: int
    status_base: int
    hz: int


@dataclass(frozen=True)
class Board:
    """A QEMU machine: `name` is the `-M` argument; `timer0_*` locate the CMSDK APB timer0 (base address,
    input clock in Hz, interrupt number); `uart0_base` is the address of the CMSDK APB UART that QEMU
    connects to serial0, the board program's only output. `constants`, when given, is a second read-only
    region the weights go to (a board whose boot memory is too small for them); `counter`, when given, is
    the system counter that counts instructions in place of timer0 (whose fields then only place its
    interrupt in the vector table)."""

    name: str
    core: str  # the core QEMU emulates on this board
    flash: MemoryRegion  # where code, constants and the vector table go (the core boots from its origin)
    ram: MemoryRegion  # .data, .bss, heap and the stack (at its top)
    timer0_base: int
    timer0_hz: int
    timer0_irq: int
    uart0_base: int
    constants: Optional[MemoryRegion] = None
    counter: Optional[SystemCounter] = None
    qemu_program: str = "qemu-system-arm"
    machine_arguments: tuple[str, ...] = ()  # QEMU arguments the machine itself needs besides `-M name`

    @property
    def counter_hz(self) -> int:
        """The input clock, in Hz, of what counts instructions: the system counter's, else timer0's."""
        return self.counter.hz if self.counter is not None else self.timer0_hz


@dataclass(frozen=True)
class CortexMTarget:
    """A core class code is compiled for, and the board that runs that code.

    `hard_float` says the code uses FPU registers, so the startup code enables the FPU. Code for an M0+
    runs on the AN385's Cortex-M3: ARMv6-M Thumb is a subset of ARMv7-M Thumb-2.
    """

    name: str
    board: Board
    hard_float: bool


BOARDS: dict[str, Board] = {
    board.name: board
    for board in (
        Board("mps2-an385", "cortex-m3", MemoryRegion(0x00000000, 4 * MIB), MemoryRegion(0x20000000, 4 * MIB),
              0x40000000, 25_000_000, 8, 0x40004000),
        Board("mps2-an386", "cortex-m4", MemoryRegion(0x00000000, 4 * MIB), MemoryRegion(0x20000000, 4 * MIB),
              0x40000000, 25_000_000, 8, 0x40004000),
        Board("mps2-an500", "cortex-m7", MemoryRegion(0x00000000, 4 * MIB), MemoryRegion(0x20000000, 4 * MIB),
              0x40000000, 25_000_000, 8, 0x40004000),
        Board("mps2-an505", "cortex-m33", MemoryRegion(0x10000000, 4 * MIB), MemoryRegion(0x38000000, 4 * MIB),
              0x50000000, 20_000_000, 3, 0x50200000),
        Board("mps3-an547", "cortex-m55", MemoryRegion(0x00000000, 512 * 1024), MemoryRegion(0x21000000, 4 * MIB),
              0x58000000, 32_000_000, 3, 0x59303000, constants=MemoryRegion(0x28000000, 8 * MIB),
              counter=SystemCounter(0x58100000, 0x58101000, 32_000_000)),
    )
}


@dataclass(frozen=True)
class RiscvBoard:
    """QEMU's RISC-V `virt` machine as a board program sees it, run with `-bios none`: the hart starts in
    M-mode at QEMU's reset ROM, which jumps to `flash.origin` (0x80000000, the start of DRAM); `ram` is the
    rest of DRAM we use for .data, .bss and the stack. `uart0_base` is the NS16550A QEMU connects to serial0
    (the program's only output), `finisher_base` the SiFive test device whose write of 0x5555 ends QEMU
    with status 0 (the program's own status is in its exit marker, as on the Arm boards). Instructions are
    counted with `minstret`, which under `-icount` QEMU 7.2 returns as the virtual clock in ns: `counter_hz`
    is 1e9, 2**ICOUNT_SHIFT ticks per instruction."""

    name: str
    core: str
    flash: MemoryRegion
    ram: MemoryRegion
    uart0_base: int
    finisher_base: int
    counter_hz: int = 1_000_000_000
    qemu_program: str = "qemu-system-riscv32"
    machine_arguments: tuple[str, ...] = ("-bios", "none")


RISCV_TRAP_EXIT_CODE = 97
"""The exit status a RISC-V board program's trap handler ends with, after a line `lp: trap mcause=N mepc=0x...`."""

RISCV_BOARDS: dict[str, RiscvBoard] = {
    "virt": RiscvBoard("virt", "rv32", MemoryRegion(0x80000000, 4 * MIB), MemoryRegion(0x80400000, 4 * MIB),
                       0x10000000, 0x00100000),
}
"""The RISC-V machines (QEMU 7.2 hw/riscv/virt.c: DRAM at 0x80000000, UART0 at 0x10000000, the SiFive test
finisher at 0x100000)."""
