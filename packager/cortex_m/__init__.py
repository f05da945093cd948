"""Run a bundle's self-test on an emulated Cortex-M (QEMU's MPS2 boards); no TVM import.

- `boards`: the board table (memory map, QEMU machine, timer) and the compile target record (cpu flags).
- `support`: writes OUT/cortex_m/ (our startup code, linker script, icount API, qemu-test Make/CMake files).
- `tools`: the host programs needed (`missing_tools()`).
- `qemu`: `run_qemu(elf, board, timeout_s)` -> exit status, output, instructions per inference.
- `sizes`: `read_sizes(elf, su_files, ...)` -> flash/RAM bytes and the stack peak of the run call.
- `selftest`: `run_selftest(out_dir, name, target)`: build, run and measure in one call (manifest entry).
- `stack`: the stack peak method (-fstack-usage frames along the call graph of the linked ELF).
"""

from packager.cortex_m.boards import (
    BOARDS,
    FAULT_EXIT_CODES,
    ICOUNT_SHIFT,
    Board,
    CortexMTarget,
    MemoryRegion,
)
from packager.cortex_m.qemu import QemuError, QemuResult, QemuTimeoutError, qemu_command, run_qemu
from packager.cortex_m.selftest import CortexMBuildError, CortexMSelfTest, build_selftest_elf, run_selftest
from packager.cortex_m.sizes import read_sizes
from packager.cortex_m.stack import StackPeak, stack_peak
from packager.cortex_m.support import (
    CROSS_BUILD_DIR,
    QEMU_TEST_CMAKE_INCLUDE,
    QEMU_TEST_MAKE_INCLUDE,
    SELFTEST_ELF,
    write_cortex_m_support,
)
from packager.cortex_m.tools import REQUIRED_TOOLS, missing_tools

__all__ = [
    "BOARDS",
    "CROSS_BUILD_DIR",
    "FAULT_EXIT_CODES",
    "ICOUNT_SHIFT",
    "QEMU_TEST_CMAKE_INCLUDE",
    "QEMU_TEST_MAKE_INCLUDE",
    "REQUIRED_TOOLS",
    "SELFTEST_ELF",
    "Board",
    "CortexMBuildError",
    "CortexMSelfTest",
    "CortexMTarget",
    "MemoryRegion",
    "QemuError",
    "QemuResult",
    "QemuTimeoutError",
    "StackPeak",
    "build_selftest_elf",
    "missing_tools",
    "qemu_command",
    "read_sizes",
    "run_qemu",
    "run_selftest",
    "stack_peak",
    "write_cortex_m_support",
]
