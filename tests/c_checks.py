"""Checks of a bundle's C beyond its self-test.

Issue 8's bar for generated C: no warning under -Wall -Wextra -Wconversion -Wshadow -Werror with gcc, a
self-test that passes under AddressSanitizer and UndefinedBehaviorSanitizer (which stop at the first
finding: no recovery), and a library whose every loop bound is a constant.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all"
STRICT_WARNINGS = "-Wconversion -Wshadow -Werror"  # on top of the Makefile's -Wall -Wextra


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


def run_c_unit_tests(source: Path, include: Path, work_dir: Path) -> subprocess.CompletedProcess:
    """Build the C unit-test program ``source`` (headers from ``include``) with gcc, the strict warnings and the
    sanitizers, and run it (a passing one prints "ok <checks>" and exits 0)."""
    program = work_dir / source.stem
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    f"-I{include}", str(source), "-lm", "-o", str(program)], check=True)
    return subprocess.run([str(program)], capture_output=True, text=True)


def build_for_cortex_m4f(source_text: str, include: Path, work_dir: Path) -> None:
    """Compile ``source_text`` (headers from ``include``) for cortex-m4f with the strict warnings (-Werror):
    CalledProcessError on a warning."""
    source = work_dir / "cortex_m4f.c"
    source.write_text(source_text)
    subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{include}", "-c",
                    str(source), "-o", str(work_dir / "cortex_m4f.o")], check=True)


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
