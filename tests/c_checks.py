"""Checks of a bundle's C beyond its self-test.

Issue 8's bar for generated C: no warning under -Wall -Wextra -Wconversion -Wshadow -Werror with gcc, a
self-test that passes under AddressSanitizer and UndefinedBehaviorSanitizer (which stop at the first
finding: no recovery), and a library whose every loop bound is a constant.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from backends.cortex_m.bundle_files import QEMU_TEST_MAKE_INCLUDE, SELFTEST_ELF, write_cortex_m_support
from backends.riscv.bundle_files import BOARD_SOURCES, SUPPORT_DIR, write_riscv_support
from backends.riscv.bundle_files.support import link_flags
from conftest import profile_build_config
from emulator.boards import RISCV_BOARDS
from emulator.qemu import QemuResult, run_qemu
from packager.board_objects import board_objects_folder, keep_board_objects, restore_board_objects
from target import load_profile

SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all"
STRICT_WARNINGS = "-Wconversion -Wshadow -Werror"  # on top of the Makefile's -Wall -Wextra
UNIT_TEST_REGISTER_ALLOCATION = "-fira-region=one"
"""gcc's register allocation of the unit-test programs in one region a function (not one per loop): their mains
inline the helpers' window nests many times over, sanitized, and gcc spent most of their compile allocating
registers region by region (tests/c/test_depthwise_mac.c: 10.8 -> 2.0 CPU-s of gcc). Registers only: the C,
the warnings and the sanitizers' checks are the same."""


def strict_sanitized_selftest(bundle_dir: Path, work_dir: Path, extra_cflags: str = "",
                              make_arguments: tuple[str, ...] = (), selftest_source: str | None = None
                              ) -> subprocess.CompletedProcess:
    """Copy ``bundle_dir`` into ``work_dir``, build it with gcc, the strict warnings, the sanitizers and
    ``extra_cflags`` (e.g. a -D for a test build), and run its self-test; a failed build raises
    ``CalledProcessError`` with the compiler's messages. ``make_arguments`` (goals, "NAME=value") are added to
    make's (a microcontroller's bundle built on the host: the selftest goal, host CFLAGS and AR).
    ``selftest_source`` replaces the bundle's selftest.c (a test's own driver of the bundle)."""
    copy = work_dir / bundle_dir.name
    shutil.copytree(bundle_dir, copy)  # creates work_dir too
    if selftest_source is not None:
        (copy / "selftest.c").write_text(selftest_source)
    subprocess.run(["make", "-s", "clean"], cwd=copy, check=True)
    flags = f"{STRICT_WARNINGS} {SANITIZE} {extra_cflags}".strip()
    subprocess.run(["make", "-s", "all", "CC=gcc", f"EXTRA_CFLAGS={flags}", f"LDFLAGS={SANITIZE}", *make_arguments],
                   cwd=copy, check=True, capture_output=True, text=True)
    return subprocess.run(["./selftest"], cwd=copy, capture_output=True, text=True)


def run_c_unit_tests(source: Path, include: Path, work_dir: Path, defines: Sequence[str] = ()
                     ) -> subprocess.CompletedProcess:
    """Build the C unit-test program ``source`` (headers from ``include``; ``defines`` are -D flags) with gcc,
    the strict warnings and the sanitizers, and run it (a passing one prints "ok <checks>" and exits 0)."""
    program = work_dir / source.stem
    subprocess.run(["gcc", "-std=c99", "-O1", UNIT_TEST_REGISTER_ALLOCATION, "-Wall", "-Wextra",
                    *STRICT_WARNINGS.split(), *SANITIZE.split(), *defines, f"-I{include}", str(source), "-lm", "-o", str(program)], check=True)
    return subprocess.run([str(program)], capture_output=True, text=True)


def build_for_cortex_m(source_text: str, include: Path, work_dir: Path, profile: str = "cortex-m4f",
                       extra_flags: Sequence[str] = ()) -> None:
    """Compile ``source_text`` (headers from ``include``) with the compiler and flags of the Cortex-M profile
    ``profile``, the strict warnings (-Werror) and ``extra_flags`` after them (e.g. another -O level):
    CalledProcessError on a warning."""
    target = load_profile(profile)
    source = work_dir / f"{target.name}.c"
    source.write_text(source_text)
    subprocess.run([target.c_compiler, "-std=c99", *target.cflags, *extra_flags, "-Wall", "-Wextra",
                    *STRICT_WARNINGS.split(),
                    f"-I{include}", "-c", str(source), "-o", str(work_dir / f"{target.name}.o")], check=True)


def run_c_program_under_qemu(folder: Path, profile: str, files: Mapping[str, str], timeout_s: float = 120.0,
                             strict: bool = False) -> QemuResult:
    """Build a C program for `profile`'s board in `folder` as an empty bundle "rq" whose selftest.c is the
    program: `files` (file name -> text; "selftest.c" has main, the rest are headers beside it), the board's
    support files (startup, UART0 output, system calls) and a Makefile with only the Cortex-M fragment; then run
    it on QEMU in the bundles' sandbox (`emulator.qemu.run_qemu`: no host capability). The build must succeed;
    with `strict`, selftest.c (only: not the board's support files) is compiled under the strict warnings too
    (STRICT_WARNINGS, -Werror: `build_for_cortex_m`'s check, on the same compile: the board build's flags are the
    profile's flags, -Wall and -Wextra, plus -fstack-usage, -DLP_ICOUNT and its include folders). The board's
    objects are the session's where it has them (conftest.board_objects_once_per_session)."""
    strict_program = f"$(CORTEX_M_BUILD)/selftest.o: CORTEX_M_CFLAGS += {STRICT_WARNINGS}\n" if strict else ""
    empty = {"rq_kernels.c": "typedef int rq_kernels_empty;\n", "rq_model.c": "typedef int rq_model_empty;\n",
             "rq_weights.c": "typedef int rq_weights_empty;\n",
             "Makefile": f"all:\n\t@echo host build\n\n{QEMU_TEST_MAKE_INCLUDE}\n{strict_program}"}
    for name, text in {**empty, **files}.items():
        (folder / name).write_text(text)
    config = profile_build_config(profile)
    write_cortex_m_support(folder, "rq", config)
    runner = config.emulated
    board = (runner.build_dir, runner.board_sources(), runner.cross_compile_command(config), board_objects_folder())
    restore_board_objects(folder, *board)  # the session's, as a bundle's build takes them (packager.board_objects)
    built = subprocess.run(["make", "-s", "-C", str(folder), "cortex-m-elf"], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    keep_board_objects(folder, *board)
    return run_qemu(folder / SELFTEST_ELF, config.emulated.target.board, timeout_s)


def run_c_program_under_riscv_qemu(folder: Path, profile: str, source: Path, timeout_s: float = 120.0) -> QemuResult:
    """Build the C program `source` (headers from `folder`, where it is built) with the RISC-V profile `profile`'s
    compiler and flags, the strict warnings and -Werror, and the board's support files; then run it on QEMU virt
    in the bundles' sandbox. The build must succeed."""
    board = RISCV_BOARDS["virt"]
    folder.mkdir(parents=True, exist_ok=True)
    write_riscv_support(folder, board)
    config = profile_build_config(profile)
    elf = folder / "unit.elf"
    built = subprocess.run(
        [config.cc, *config.compile_flags, "-std=c99", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), "-Werror",
         f"-I{folder}", f"-I{SUPPORT_DIR}", *link_flags(config), "-T", f"{SUPPORT_DIR}/link.ld", str(source),
         *BOARD_SOURCES, "-o", str(elf)],
        cwd=folder, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    return run_qemu(elf, board, timeout_s)


_FOR_LOOP = re.compile(r"for \(([^;]*);([^;]*);")
_CONSTANT_BOUND = re.compile(r"\s*\w+ < (\(int\d+_t\))?\d+u?\s*")
_TEST_BUILD_ONLY = re.compile(r"#ifdef \w+_POISON_ARENA\n.*?#endif", re.DOTALL)


def loops_without_constant_bounds(bundle_dir: Path, model: str) -> list[str]:
    """The `for` headers in the library's C (kernels and entry function, not test-only code) whose bound
    is not a literal."""
    loops = []
    for part in ("kernels", "model"):
        text = _TEST_BUILD_ONLY.sub("", (bundle_dir / f"{model}_{part}.c").read_text())
        loops += [m.group(0) for m in _FOR_LOOP.finditer(text) if not _CONSTANT_BOUND.fullmatch(m.group(2))]
    return loops


def kernel_bodies(kernels_c: str) -> dict[str, str]:
    """Each kernel function's name -> its body, from a bundle's kernels.c (a function ends at a `}` line)."""
    return {match[1]: match[2] for match in re.finditer(r"^void (\w+)\(.*?\) \{\n(.*?)^\}", kernels_c, re.S | re.M)}


_LOCAL_ARRAY = re.compile(r"^\s+(u?int(?:8|16|32|64)_t|float|double) \w+\[(\d+)\];", re.M)
_C_TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8,
                 "uint64_t": 8, "float": 4, "double": 8}


def stack_array_bytes(kernels_c: str) -> dict[str, int]:
    """Each kernel function's local arrays (`  int8_t band_ptr[1023];`) in bytes, summed, as a bundle's kernels.c
    declares them: what the generator counts from the TIR (KernelSignature.stack_array_bytes), read from the C."""
    bodies = re.finditer(r"^(?:void|int32_t) (\w+)\(.*?\) \{\n(.*?)^\}", kernels_c, re.S | re.M)
    return {match[1]: sum(_C_TYPE_BYTES[dtype] * int(count) for dtype, count in _LOCAL_ARRAY.findall(match[2]))
            for match in bodies}
