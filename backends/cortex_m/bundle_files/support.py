"""Write what a bundle needs to run its self-test on an emulated Cortex-M into `OUT/cortex_m/`.

Contract with the bundle (issue 3's layout): OUT/ holds `<name>_kernels.c <name>_model.c <name>_weights.c
selftest.c` and `<name>.h`; selftest.c's `main()` returns 0 when the outputs match. The cross build defines
`LP_ICOUNT` (packager.selftest.ICOUNT_MACRO), so selftest.c measures one inference with `cortex_m/lp_icount.h`.

The bundle's Makefile adds the line `QEMU_TEST_MAKE_INCLUDE` and its CMakeLists.txt the line
`QEMU_TEST_CMAKE_INCLUDE`; both then have a `qemu-test` target that builds the self-test ELF and runs it with
`cortex_m/qemu-run.sh`: QEMU with no host capability (emulator.qemu.board_arguments, no semihosting), the
program's output on the board's UART0, its end an exit marker line and a system reset; the target fails
unless the self-test printed its PASS line and ended with exit status 0. The ELF is compiled with the
bundle's `BuildConfig` (the compiler and every flag the shipped library is compiled with) plus only
COMPILE_FLAGS, which do not change the code: the instructions and sizes measured are those of the code that
ships. Its C library is newlib-nano with our own system calls (lp_syscalls.c), not a semihosting library. The
profile's words (its name, compiler and flags) reach these files only through `packager.make_text`,
`packager.cmake_text` and `packager.c_text.comment`.
"""

from __future__ import annotations

import shlex
from fractions import Fraction
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from emulator.boards import EXIT_MARKER, FAULT_EXIT_CODES, ICOUNT_SHIFT, Board, CortexMTarget, RiscvBoard
from emulator.qemu import SANDBOX, board_arguments
from packager.c_text import c_string, comment
from packager.cmake_text import cmake_argument
from packager.files import replace_file
from packager.make_text import make_words
from packager.selftest import ICOUNT_MACRO, PASS_LINE
from packager.template_files import helper_template_c, template_text

if TYPE_CHECKING:  # packager.build_files imports this package: no import cycle at run time
    from packager.build_files import BuildConfig

SUPPORT_DIR = "cortex_m"
"""The subdirectory of the bundle that holds the Cortex-M files."""

CROSS_BUILD_DIR = "build-cortex-m"
"""Where `make cortex-m-elf` puts objects, `.su` files, selftest.map and the ELF, relative to OUT/."""

SELFTEST_ELF = f"{CROSS_BUILD_DIR}/selftest.elf"
"""The self-test ELF `make cortex-m-elf` builds, relative to OUT/."""

PROFILE_ELF = f"{CROSS_BUILD_DIR}/profile.elf"
"""The profiling build's ELF, relative to OUT/: the self-test's objects (the same files, compiled alike), but
the run function of `profiled_model_source`."""

QEMU_TEST_MAKEFILE = f"{SUPPORT_DIR}/qemu-test.mk"
"""The self-test ELF's Makefile (`makefile_fragment`), relative to OUT/."""

QEMU_RUN_SCRIPT = f"{SUPPORT_DIR}/qemu-run.sh"
"""The script that runs a board program on QEMU and judges its end (`qemu_run_script`), relative to OUT/."""

QEMU_TEST_MAKE_INCLUDE = f"include {QEMU_TEST_MAKEFILE}"
QEMU_TEST_CMAKE_INCLUDE = f"include({SUPPORT_DIR}/qemu-test.cmake)"

DEFAULT_STACK_BYTES = 16 * 1024
"""RAM the linker script reserves below the top for the stack (the link fails if static data leaves less)."""

COMPILE_FLAGS: tuple[str, ...] = ("-fstack-usage", f"-D{ICOUNT_MACRO}")
"""What the self-test's cross build adds to the library's compile flags: stack usage files (for the stack
peak) and the macro that lets selftest.c count instructions. Neither changes the library's code."""

LINK_FLAGS: tuple[str, ...] = ("--specs=nano.specs", "-Wl,-u,_printf_float", "-Wl,--gc-sections")
"""What the self-test's link needs besides `-T <linker script>` (added to the profile's link flags, each once):
newlib-nano, whose system calls are our lp_syscalls.c (UART0 output, no host file), with printf's floats."""

_SUPPORT_SOURCES = ("startup.c", "lp_console.c", "lp_syscalls.c", "lp_icount.c")
_COPIED_FILES = (*_SUPPORT_SOURCES, "lp_console.h", "lp_icount.h", "lp_call_profile.c", "lp_call_profile.h",
                 "qemu-test.cmake", "arm-none-eabi.cmake")

BOARD_SOURCES = tuple(f"{SUPPORT_DIR}/{source}" for source in _SUPPORT_SOURCES)
"""Our C files every program for the board links (startup, UART0 output and system calls, the instruction
counter), relative to OUT/."""

CALL_PROFILE_SOURCE = "lp_call_profile.c"
"""The per-call report's C file the profiling build links besides the board's, in the board's support folder."""

COMPILER_VARIABLE = "CORTEX_M_CC"
"""qemu-test.mk's variable of the cross compiler (the profile's unless the environment sets it)."""


MODEL_CODE_SUFFIXES = ("_kernels", "_model")
"""`<name>_kernels.c` and `<name>_model.c` hold the bundle's code: its kernels and its run function."""

WEIGHTS_SUFFIX = "_weights"
"""`<name>_weights.c` holds the constants; the linker script gives its objects' .rodata its own section."""


def bundle_sources(name: str, members: tuple[str, ...] = ()) -> list[str]:
    """The bundle's C files of the self-test, relative to OUT/ (a bundle of several models, `members`: each
    member's code files too, packager.build_files.sources)."""
    own = ("_model", WEIGHTS_SUFFIX) if members else (*MODEL_CODE_SUFFIXES, WEIGHTS_SUFFIX)
    return [*(f"{member}{suffix}.c" for member in members for suffix in MODEL_CODE_SUFFIXES),
            *(f"{name}{suffix}.c" for suffix in own), "selftest.c"]


def profiled_model_source(name: str, support_dir: str = SUPPORT_DIR) -> str:
    """The profiling build's run function (`<name>_model.c` with each call counted), relative to OUT/, in the
    board's `support_dir` (cortex_m/ unless given: backends.riscv's is riscv/)."""
    return f"{support_dir}/{name}_model_profiled.c"


def profile_sources(name: str, support_dir: str = SUPPORT_DIR,
                    board_sources: tuple[str, ...] = BOARD_SOURCES, members: tuple[str, ...] = ()) -> list[str]:
    """The profiling build's C files, relative to OUT/: the self-test's, with the profiled run function in place
    of `<name>_model.c` (of a bundle of several models, `members`: of each member's), and the board's
    (`board_sources` in `support_dir`: Cortex-M's unless given) and the per-call report's support files."""
    profiled = {f"{model}_model.c": profiled_model_source(model, support_dir) for model in members or (name,)}
    bundle = [profiled.get(source, source) for source in bundle_sources(name, members)]
    return bundle + [*board_sources, f"{support_dir}/{CALL_PROFILE_SOURCE}"]


def model_code_stems(name: str, members: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The names, without extension, of the bundle's code files (for read_sizes' bundle_sources)."""
    return tuple(source.removesuffix(".c") for source in bundle_sources(name, members)
                 if not source.endswith((f"{WEIGHTS_SUFFIX}.c", "selftest.c")))


def model_weight_stems(name: str) -> tuple[str, ...]:
    """The names, without extension, of the bundle's weights files (for read_sizes' bundle_weight_sources)."""
    return (f"{name}{WEIGHTS_SUFFIX}",)


def write_cortex_m_support(out_dir: Path, name: str, config: BuildConfig,
                           stack_bytes: int = DEFAULT_STACK_BYTES) -> list[Path]:
    """Write OUT/cortex_m/ for model `name` built as `config` says, on `config.emulated`; return the files.

    Files: startup.c, lp_console.c/.h, lp_syscalls.c, lp_icount.c/.h, lp_call_profile.c/.h (copied),
    lp_board.h, link.ld, qemu-test.mk, qemu-run.sh, CMakeLists.txt (generated for the target's board and
    flags), qemu-test.cmake and arm-none-eabi.cmake (copied).
    Raises ValueError when `config` has no emulated target.
    """
    target = _emulated(config)
    support_dir = Path(out_dir) / SUPPORT_DIR
    support_dir.mkdir(parents=True, exist_ok=True)
    generated = {
        "lp_board.h": board_header(target),
        "link.ld": linker_script(target.board, stack_bytes),
        "qemu-test.mk": makefile_fragment(name, config),
        "qemu-run.sh": qemu_run_script(target),
        "CMakeLists.txt": cmake_project(name, config),
    }
    written = []
    for file_name in _COPIED_FILES:
        text = (icount_text(counting_half(target.board)) if file_name == "lp_icount.c"
                else template_text("backends.cortex_m.bundle_files", file_name))
        written.append(_write(support_dir / file_name, text))
    for file_name, text in generated.items():
        written.append(_write(support_dir / file_name, text))
    return written


def counting_half(board: Board) -> str:
    """The counting half of cortex_m/lp_icount.c on `board` (its text): the system counter's reading where the
    board has one, else the CMSDK APB timer0's with its wrap interrupt."""
    source = "lp_icount_system_counter.c" if board.counter is not None else "lp_icount_cmsdk_timer.c"
    return template_text("backends.cortex_m.bundle_files", source)


def icount_text(counting: str) -> str:
    """A board's lp_icount.c: its `counting` half (lp_icount_start, lp_icount_elapsed), then the printing half
    every board shares (lp_icount_print_decimal, lp_icount_report: lp_icount_print.c.in, its leading comment
    left out)."""
    return counting + helper_template_c("backends.cortex_m.bundle_files", "lp_icount_print.c.in", "")


def board_header(target: CortexMTarget) -> str:
    """lp_board.h: the board's timer and UART0, the -icount shift, the exit marker and the fault exit statuses,
    as C macros."""
    board = target.board
    ticks = ticks_per_instruction(board)
    lines = [
        f"/* {board.name} ({board.core}) running {comment(target.name)} code: generated from "
        "emulator/boards.py. */",
        "#ifndef LP_BOARD_H",
        "#define LP_BOARD_H",
        f'#define LP_BOARD_NAME "{board.name}"',
        f"#define LP_TIMER0_BASE 0x{board.timer0_base:08X}u",
        f"#define LP_TIMER0_HZ {board.timer0_hz}u",
        f"#define LP_TIMER0_IRQ {board.timer0_irq}",
        f"#define LP_UART0_BASE 0x{board.uart0_base:08X}u /* QEMU's serial0 */",
    ]
    if board.counter is not None:
        lines += [
            f"#define LP_COUNTER_CONTROL_BASE 0x{board.counter.control_base:08X}u /* the system counter: CNTCR */",
            f"#define LP_COUNTER_STATUS_BASE 0x{board.counter.status_base:08X}u /* its CNTCV, read-only */",
        ]
    counted_by = "timer0" if board.counter is None else "system counter"
    lines += [
        f"#define LP_ICOUNT_SHIFT {ICOUNT_SHIFT} /* must match qemu-system-arm -icount shift=N */",
        f"/* {counted_by} ticks per executed instruction: 2^shift ns x Hz / 1e9, as a reduced fraction */",
        f"#define LP_TICKS_PER_INSTRUCTION_NUM {ticks.numerator}u",
        f"#define LP_TICKS_PER_INSTRUCTION_DEN {ticks.denominator}u",
    ]
    lines.append(f"#define LP_EXIT_MARKER {c_string(EXIT_MARKER)} /* then the exit status: the last line */")
    lines += [f"#define LP_EXIT_{fault.upper()} {status}" for fault, status in FAULT_EXIT_CODES.items()]
    lines += ["#endif /* LP_BOARD_H */", ""]
    return "\n".join(lines)


def ticks_per_instruction(board: Board | RiscvBoard) -> Fraction:
    """Counter ticks per instruction under `-icount shift=ICOUNT_SHIFT`: 2**shift ns at `board.counter_hz`
    (an Arm board's timer or system counter, the RISC-V board's minstret: backends.riscv uses this too).

    ValueError below 2 ticks: the reading (whole ticks) could then round to a wrong instruction count.
    """
    ticks = Fraction(board.counter_hz << ICOUNT_SHIFT, 1_000_000_000)
    if ticks < 2:
        raise ValueError(f"{board.name}: {float(ticks):g} timer ticks per instruction is too coarse to count")
    return ticks


def linker_script(board: Board, stack_bytes: int = DEFAULT_STACK_BYTES) -> str:
    """link.ld for `board`'s memory map, reserving `stack_bytes` at the top of RAM; the weights go to the
    board's `constants` region when it has one, else to FLASH with the code."""
    regions = [("FLASH", "rx", board.flash), ("RAM", "rwx", board.ram)]
    if board.constants is not None:
        regions.append(("CONSTANTS", "r", board.constants))
    memory = "\n".join(f"    {region} ({access}) : ORIGIN = 0x{span.origin:08X}, LENGTH = 0x{span.length:X}"
                        for region, access, span in regions)
    return Template(template_text("backends.cortex_m.bundle_files", "link.ld.in")).substitute(
        board=board.name,
        weights_suffix=WEIGHTS_SUFFIX,
        memory=memory,
        weights_region="FLASH" if board.constants is None else "CONSTANTS",
        stack_bytes=f"0x{stack_bytes:X}",
    )


def selftest_compile_flags(config: BuildConfig) -> tuple[str, ...]:
    """The self-test ELF's compile flags: the library's (`config.compile_flags`), then COMPILE_FLAGS."""
    return (*config.compile_flags, *COMPILE_FLAGS)


def selftest_link_flags(config: BuildConfig) -> tuple[str, ...]:
    """The self-test ELF's link flags besides the linker script: the profile's, then LINK_FLAGS it lacks."""
    return (*config.ldflags, *(flag for flag in LINK_FLAGS if flag not in config.ldflags))


def cross_compile_flags(config: BuildConfig) -> tuple[str, ...]:
    """Every flag qemu-test.mk compiles a C file of the self-test with: `selftest_compile_flags` and the include
    folders (OUT/ and OUT/cortex_m/)."""
    return (*selftest_compile_flags(config), "-I.", f"-I{SUPPORT_DIR}")


def makefile_fragment(name: str, config: BuildConfig) -> str:
    """cortex_m/qemu-test.mk: targets `cortex-m-elf` (builds SELFTEST_ELF) and `qemu-test` (runs it)."""
    target = _emulated(config)
    return Template(template_text("backends.cortex_m.bundle_files", "qemu-test.mk.in")).substitute(
        target=make_words([target.name]),
        board=target.board.name,
        build_dir=CROSS_BUILD_DIR,
        elf=SELFTEST_ELF,
        fault_range=_fault_range(),
        cc=make_words([config.cc]),
        cflags=make_words(cross_compile_flags(config)),
        ldflags=make_words((*selftest_link_flags(config), "-T", f"{SUPPORT_DIR}/link.ld")),
        libs=" ".join(config.libs),
        sources=" ".join(bundle_sources(name, config.members) + list(BOARD_SOURCES)),
        profile_elf=PROFILE_ELF,
        profile_sources=" ".join(profile_sources(name, members=config.members)),
        run_script=QEMU_RUN_SCRIPT,
        verdict_line=PASS_LINE,
    )


def qemu_run_script(target: CortexMTarget) -> str:
    """cortex_m/qemu-run.sh: runs a program on `target`'s board with no host capability and exits 0 only when
    the program ended with exit status 0 (and printed the line asked for)."""
    return board_run_script(target.name, target.board, QEMU_RUN_SCRIPT)


def board_run_script(target: str, board: Board | RiscvBoard, script: str) -> str:
    """The run script `script` (its path relative to OUT/) for programs compiled for profile `target` on `board`
    (an Arm board or the RISC-V one, `backends.riscv` writes its own with this): QEMU with no host capability,
    named by the environment variable of its program's name (QEMU_SYSTEM_ARM), exiting 0 only when the program
    ended with exit status 0 (and printed the line asked for)."""
    return Template(template_text("backends.cortex_m.bundle_files", "qemu-run.sh.in")).substitute(
        target=target,
        board=board.name,
        script=script,
        qemu_variable=board.qemu_program.upper().replace("-", "_"),
        qemu_program=board.qemu_program,
        board_arguments=shlex.join(board_arguments(board)),
        sandbox=SANDBOX,
        exit_marker=EXIT_MARKER,
    )


def cmake_project(name: str, config: BuildConfig) -> str:
    """cortex_m/CMakeLists.txt: the cross-compiled `selftest.elf` with a `qemu-test` target, and the profiling
    build's `profile.elf` with a `qemu-profile` target (not built by default)."""
    target = _emulated(config)
    sources = _cmake_paths(bundle_sources(name, config.members) + list(BOARD_SOURCES))
    return Template(template_text("backends.cortex_m.bundle_files", "CMakeLists.txt.in")).substitute(
        target=cmake_argument(target.name),
        board=target.board.name,
        name=name,
        cflags=" ".join(map(cmake_argument, selftest_compile_flags(config))),
        cmake_ldflags=" ".join((*map(cmake_argument, selftest_link_flags(config)),
                                "-T${CMAKE_CURRENT_SOURCE_DIR}/link.ld")),
        cmake_sources=" ".join(sources),
        cmake_profile_sources=" ".join(_cmake_paths(profile_sources(name, members=config.members))),
        verdict_line=PASS_LINE,
    )


def _cmake_paths(sources: list[str]) -> list[str]:
    """Paths relative to OUT/ as cortex_m/CMakeLists.txt names them: its own files bare, the bundle's under
    ${LP_BUNDLE_DIR}."""
    prefix = f"{SUPPORT_DIR}/"
    return [source.removeprefix(prefix) if source.startswith(prefix) else f"${{LP_BUNDLE_DIR}}/{source}"
            for source in sources]


def _emulated(config: BuildConfig) -> CortexMTarget:
    """The Cortex-M core and board of `config`'s runner (a `backends.cortex_m.runner.CortexMRunner`)."""
    if config.emulated is None:
        raise ValueError("the Cortex-M self-test needs a build config with an emulated target")
    return config.emulated.target


def _fault_range() -> str:
    statuses = sorted(FAULT_EXIT_CODES.values())
    return f"{statuses[0]}-{statuses[-1]}"


def _write(path: Path, text: str) -> Path:
    replace_file(path, text)  # qemu-test.mk may already be read by an early make (tvm_ext.compile.early_objects)
    return path
