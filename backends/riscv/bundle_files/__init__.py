"""What a program needs to run on an emulated RISC-V board (no TVM): `support` writes OUT/riscv/, our
startup code, UART0 output and exit, picolibc's streams, the instruction counter and the linker script."""

from backends.riscv.bundle_files.support import BOARD_SOURCES, SUPPORT_DIR, write_riscv_support

__all__ = ["BOARD_SOURCES", "SUPPORT_DIR", "write_riscv_support"]
