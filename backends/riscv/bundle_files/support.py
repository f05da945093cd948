"""Write what a program needs to run on QEMU's RISC-V `virt` machine into `OUT/riscv/` (no TVM).

The program links our startup (entry.S, startup.c), UART0 output and its end (lp_console.c: the exit
marker, then the SiFive test finisher ends QEMU), picolibc's standard streams on UART0 (lp_syscalls.c: no
semihosting) and the instruction counter (lp_icount.c, minstret under -icount), with link.ld for the board.
The counter's and the console's interface are the Cortex-M support's headers (lp_icount.h, lp_console.h),
so a bundle's selftest.c measures one inference the same way on either family.

A bundle's self-test adds (`write_selftest_support`) the self-test ELF's Makefile `riscv/qemu-test.mk`
(targets `riscv-elf`, `qemu-test`, and the profiling build's `riscv-profile-elf`, `qemu-profile`), its run
script `riscv/qemu-run.sh` (the Cortex-M one's, for this board: no host capability) and the per-call report
of the profiling build (lp_call_profile.c/.h, the Cortex-M support's). The ELF is compiled with the bundle's
`BuildConfig` plus only COMPILE_FLAGS (the Cortex-M support's: -fstack-usage and the counting macro), which
do not change the code; the profile's words reach these files only through `packager.make_text`.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from backends.cortex_m.bundle_files.support import (COMPILE_FLAGS, DEFAULT_STACK_BYTES, WEIGHTS_SUFFIX,
                                                    board_run_script, bundle_sources, icount_text,
                                                    profile_sources, ticks_per_instruction)
from emulator.boards import EXIT_MARKER, ICOUNT_SHIFT, RISCV_TRAP_EXIT_CODE, RiscvBoard
from packager.c_text import c_string
from packager.files import replace_file
from packager.make_text import make_words
from packager.selftest import PASS_LINE
from packager.template_files import template_text

if TYPE_CHECKING:  # packager.build_files imports the Cortex-M support: no import cycle at run time
    from packager.build_files import BuildConfig

SUPPORT_DIR = "riscv"
"""The subdirectory of OUT/ that holds the RISC-V board files."""

_TEMPLATES = "backends.riscv.bundle_files"
_SHARED_TEMPLATES = "backends.cortex_m.bundle_files"
_SOURCES = ("entry.S", "startup.c", "lp_console.c", "lp_syscalls.c", "lp_icount.c")
_COPIED_SOURCES = ("entry.S", "startup.c", "lp_console.c", "lp_syscalls.c")
_OWN_HEADERS = ("lp_riscv.h",)
_SHARED_HEADERS = ("lp_console.h", "lp_icount.h")

BOARD_SOURCES = tuple(f"{SUPPORT_DIR}/{source}" for source in _SOURCES)
"""Our files every program for the board links, relative to OUT/."""

COMPILER_VARIABLE = "RISCV_CC"
"""qemu-test.mk's variable of the cross compiler (the profile's unless the environment sets it)."""

BUILD_DIR = "build-riscv"
"""Where `make -f riscv/qemu-test.mk riscv-elf` puts objects, `.su` files, selftest.map and the ELF, relative
to OUT/."""

SELFTEST_ELF = f"{BUILD_DIR}/selftest.elf"
PROFILE_ELF = f"{BUILD_DIR}/profile.elf"
"""The self-test ELF and the profiling build's, relative to OUT/."""

QEMU_TEST_MAKEFILE = f"{SUPPORT_DIR}/qemu-test.mk"
QEMU_RUN_SCRIPT = f"{SUPPORT_DIR}/qemu-run.sh"
QEMU_TEST_MAKE_INCLUDE = f"include {QEMU_TEST_MAKEFILE}"
"""The self-test ELF's Makefile and run script, relative to OUT/, and the line that includes the Makefile."""

_PROFILE_FILES = ("lp_call_profile.c", "lp_call_profile.h")

LINK_FLAGS: tuple[str, ...] = ("-nostartfiles", "--specs=picolibc.specs", "-Wl,--gc-sections")
"""What a program's link needs besides `-T riscv/link.ld` and the profile's -march/-mabi: picolibc without its
start files (entry.S is ours)."""


def link_flags(config: BuildConfig) -> list[str]:
    """The link flags of a board program compiled and linked in one command with `config.compile_flags`: the
    profile's ldflags, then LINK_FLAGS, each once and none the compile flags already give (a second
    --specs=picolibc.specs is an error)."""
    return [flag for flag in dict.fromkeys((*config.ldflags, *LINK_FLAGS)) if flag not in config.compile_flags]


def selftest_link_flags(config: BuildConfig) -> tuple[str, ...]:
    """The self-test ELF's link flags (its objects compiled apart): the profile's ldflags, then LINK_FLAGS,
    each once, then the linker script."""
    return (*dict.fromkeys((*config.ldflags, *LINK_FLAGS)), "-T", f"{SUPPORT_DIR}/link.ld")


def cross_compile_flags(config: BuildConfig) -> tuple[str, ...]:
    """Every flag qemu-test.mk compiles a file of the self-test with: the library's, COMPILE_FLAGS and the include
    folders (OUT/ and OUT/riscv/)."""
    return (*config.compile_flags, *COMPILE_FLAGS, "-I.", f"-I{SUPPORT_DIR}")


def makefile_fragment(target: str, board: RiscvBoard, name: str, config: BuildConfig) -> str:
    """riscv/qemu-test.mk for model `name` compiled for profile `target` as `config` says, run on `board`."""
    return Template(template_text(_TEMPLATES, "qemu-test.mk.in")).substitute(
        target=make_words([target]),
        board=board.name,
        run_script=QEMU_RUN_SCRIPT,
        verdict_line=PASS_LINE,
        trap_status=RISCV_TRAP_EXIT_CODE,
        cc=make_words([config.cc]),
        build_dir=BUILD_DIR,
        cflags=make_words(cross_compile_flags(config)),
        ldflags=make_words(selftest_link_flags(config)),
        sources=" ".join(bundle_sources(name, config.members) + list(BOARD_SOURCES)),
        elf=SELFTEST_ELF,
        libs=" ".join(config.libs),
        profile_sources=" ".join(profile_sources(name, SUPPORT_DIR, BOARD_SOURCES, config.members)),
        profile_elf=PROFILE_ELF,
    )


def write_selftest_support(out_dir: Path, target: str, board: RiscvBoard, name: str,
                           config: BuildConfig) -> list[Path]:
    """Write OUT/riscv/ for the self-test of model `name`, compiled for profile `target` as `config` says, on
    `board`: the board's files (`write_riscv_support`), qemu-test.mk, qemu-run.sh and the per-call report's
    files; return the files."""
    written = write_riscv_support(out_dir, board)
    texts = {file_name: template_text(_SHARED_TEMPLATES, file_name) for file_name in _PROFILE_FILES}
    texts["qemu-test.mk"] = makefile_fragment(target, board, name, config)
    texts["qemu-run.sh"] = board_run_script(target, board, QEMU_RUN_SCRIPT)
    for file_name, text in texts.items():
        replace_file(Path(out_dir) / SUPPORT_DIR / file_name, text)
        written.append(Path(out_dir) / SUPPORT_DIR / file_name)
    return written


def write_riscv_support(out_dir: Path, board: RiscvBoard, stack_bytes: int = DEFAULT_STACK_BYTES) -> list[Path]:
    """Write OUT/riscv/ for `board`: the copied sources and headers, lp_board.h and link.ld; return the files."""
    support_dir = Path(out_dir) / SUPPORT_DIR
    support_dir.mkdir(parents=True, exist_ok=True)
    texts = {name: template_text(_TEMPLATES, name) for name in (*_COPIED_SOURCES, *_OWN_HEADERS)}
    texts["lp_icount.c"] = icount_text(template_text(_TEMPLATES, "lp_icount_minstret.c"))
    texts.update({name: template_text(_SHARED_TEMPLATES, name) for name in _SHARED_HEADERS})
    texts["lp_board.h"] = board_header(board)
    texts["link.ld"] = linker_script(board, stack_bytes)
    written = []
    for name, text in texts.items():
        replace_file(support_dir / name, text)
        written.append(support_dir / name)
    return written


def board_header(board: RiscvBoard) -> str:
    """lp_board.h: UART0, the test finisher, the counter's ticks per instruction, the exit marker and the
    trap's exit status, as C macros."""
    ticks = ticks_per_instruction(board)
    return "\n".join([
        f"/* QEMU's RISC-V {board.name} machine: generated from emulator/boards.py. */",
        "#ifndef LP_BOARD_H",
        "#define LP_BOARD_H",
        f'#define LP_BOARD_NAME "{board.name}"',
        f"#define LP_UART0_BASE 0x{board.uart0_base:08X}u /* NS16550A, QEMU's serial0 */",
        f"#define LP_FINISHER_BASE 0x{board.finisher_base:08X}u /* SiFive test finisher */",
        f"#define LP_ICOUNT_SHIFT {ICOUNT_SHIFT} /* must match qemu-system-riscv32 -icount shift=N */",
        "/* minstret ticks per executed instruction: 2^shift ns x Hz / 1e9, as a reduced fraction */",
        f"#define LP_TICKS_PER_INSTRUCTION_NUM {ticks.numerator}u",
        f"#define LP_TICKS_PER_INSTRUCTION_DEN {ticks.denominator}u",
        f"#define LP_EXIT_MARKER {c_string(EXIT_MARKER)} /* then the exit status: the last line */",
        f"#define LP_EXIT_TRAP {RISCV_TRAP_EXIT_CODE}",
        "#endif /* LP_BOARD_H */",
        "",
    ])


def linker_script(board: RiscvBoard, stack_bytes: int = DEFAULT_STACK_BYTES) -> str:
    """link.ld for `board`'s memory map, reserving `stack_bytes` at the top of RAM."""
    return Template(template_text(_TEMPLATES, "link.ld.in")).substitute(
        board=board.name,
        weights_suffix=WEIGHTS_SUFFIX,
        flash_origin=f"0x{board.flash.origin:08X}",
        flash_length=f"0x{board.flash.length:X}",
        ram_origin=f"0x{board.ram.origin:08X}",
        ram_length=f"0x{board.ram.length:X}",
        stack_bytes=f"0x{stack_bytes:X}",
    )
