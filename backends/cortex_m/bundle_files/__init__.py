"""Write what a bundle needs to run its self-test on an emulated Cortex-M into OUT/cortex_m/; no TVM import.

- `support`: our startup code, linker script, icount API, qemu-test Make/CMake files (from `templates/`), and
  the profiling build (`make qemu-profile`: each kernel call's instructions, never the shipped code).

Running and measuring that self-test (QEMU, sizes, stack peak) is the `emulator` package's job.
"""

from backends.cortex_m.bundle_files.support import (
    CROSS_BUILD_DIR,
    PROFILE_ELF,
    QEMU_TEST_CMAKE_INCLUDE,
    QEMU_TEST_MAKE_INCLUDE,
    SELFTEST_ELF,
    profiled_model_source,
    write_cortex_m_support,
)

__all__ = [
    "CROSS_BUILD_DIR",
    "PROFILE_ELF",
    "QEMU_TEST_CMAKE_INCLUDE",
    "QEMU_TEST_MAKE_INCLUDE",
    "SELFTEST_ELF",
    "profiled_model_source",
    "write_cortex_m_support",
]
