"""The host programs the Cortex-M and RISC-V builds, size reading and runs need, and how to call them."""

from __future__ import annotations

import shutil
import subprocess

REQUIRED_TOOLS: tuple[str, ...] = (
    "arm-none-eabi-gcc", "arm-none-eabi-size", "arm-none-eabi-nm", "arm-none-eabi-objdump", "qemu-system-arm",
)
"""Debian packages gcc-arm-none-eabi, libnewlib-arm-none-eabi, binutils-arm-none-eabi and qemu-system-arm
provide them; scripts/install_deps.sh installs those."""


RISCV_BINUTILS_PREFIX = "riscv64-unknown-elf-"
"""The binutils that read the RISC-V board programs' ELF files (Debian's binutils-riscv64-unknown-elf)."""

RISCV_TOOLS: tuple[str, ...] = (
    "riscv64-unknown-elf-gcc", f"{RISCV_BINUTILS_PREFIX}size", f"{RISCV_BINUTILS_PREFIX}nm",
    f"{RISCV_BINUTILS_PREFIX}objdump", f"{RISCV_BINUTILS_PREFIX}readelf", "qemu-system-riscv32",
)
"""Debian packages gcc-riscv64-unknown-elf (with binutils-riscv64-unknown-elf), picolibc-riscv64-unknown-elf
and qemu-system-misc provide them; scripts/install_deps.sh installs those."""


def missing_tools(tools: tuple[str, ...] = REQUIRED_TOOLS) -> list[str]:
    """The `tools` (REQUIRED_TOOLS unless given) not found on PATH."""
    return [tool for tool in tools if shutil.which(tool) is None]


def tool_output(*command: str) -> str:
    """The stdout of `command`; CalledProcessError (with its stderr) if it fails."""
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout
