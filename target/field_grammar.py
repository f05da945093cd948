"""The grammar every profile field is held to when a profile file is read (target/README.md, "Field grammar").

Profiles are shared files (board vendors publish them), so the loader treats them as untrusted: a value that
would reach the bundle's Makefile, CMakeLists.txt or a command line (compiler flags, tool names) must match a
strict pattern of characters that mean nothing to make, CMake or the shell, and numbers must lie in ranges a
real device has. The build files quote what they write all the same (`packager.make_text`,
`packager.cmake_text`); this grammar is the first of the two defences, and the one that names the field.

Each check takes the value as parsed from TOML or JSON and returns it as the Profile stores it, or raises
`BadValue` whose text says what the value must be; the caller adds the file, the field and the value shown
by `shown` (a repr cut to SHOWN_CHARS, so that one line stays one short line).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

SHOWN_CHARS = 60
"""At most this many characters of a refused value are quoted in the error line."""

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
"""A profile's name: lowercase letters, digits, '-', '_', '.'; it names the TVM tag and the manifest's profile."""

CORE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.+-]{0,63}")
"""`cpu`, `arch`, `qemu_board`: names as GCC (-mcpu=cortex-m55+nomve), TVM and QEMU spell them."""

UNIT_NAME_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,31}")
"""A compute unit's name: a lowercase ASCII C identifier (it names a C file and a make target)."""

REGION_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A RAM region's name: a lowercase ASCII C identifier starting with a letter (it ends a C array's name and,
upper-cased, a macro's middle: `<model>_arena_dtcm`, `<MODEL>_ARENA_DTCM_SECTION`)."""

OPERATOR_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
"""An operator kind: a TFLite builtin code (CONV_2D) or an ONNX op type (Conv)."""

FLAG_PATTERN = re.compile(r"(?=.{2,128}\Z)--?[A-Za-z0-9][A-Za-z0-9_.,=+-]*")
"""One compiler or linker flag: '-' or '--', a letter or digit, then letters, digits and `_ . , = + -`, at
most 128 characters in all.
Enough for -mcpu=cortex-m4, -mfloat-abi=hard, -O2, -DNAME=VALUE (a value of those characters),
-Wl,--gc-sections, --specs=nano.specs. No '/': a flag names no path (so no -I, -L, -T, --sysroot or -mlsp
folder, and no file written or read outside the build's own folder and the toolchain's); no quote, '$', '#',
'\\', ';', space or control character."""

MIN_CLOCK_HZ = 1_000
MAX_CLOCK_HZ = 10_000_000_000
"""`clock_hz`: from 1 kHz (a watch crystal's core, divided) to 10 GHz (beyond any microcontroller or DSP)."""

MAX_FLAGS = 64
"""At most this many flags in one list."""

_TOOL_WORD = r"[A-Za-z0-9_.+-]+"
TOOL_PATTERN = re.compile(rf"(?!-)[A-Za-z0-9_.+-]{{1,255}}|(?=/.{{1,255}}\Z)(/{_TOOL_WORD})+")
"""A tool (`c_compiler`, a unit's `c_compiler`, `binutils_prefix` + "ar"): a command name found on PATH
(letters, digits, `_ . + -`, not starting with '-') or an absolute path of such names, at most 256
characters. Not a relative path: make runs in the bundle's folder, where it would name another file."""

COMPILER_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.+-]*(cc|clang)(-[0-9][0-9.]*)?")
"""The last name of a C compiler's command: it ends in `cc` or `clang` (cc, gcc, arm-none-eabi-gcc, clang,
xt-clang, armclang), maybe with a version (gcc-12, clang-17): a profile cannot make the build run another
program on this machine (sh, env, python3) with the flags as its arguments."""

MAX_BYTES = 2**32
"""`sram_bytes`, `flash_bytes`, `subgraph_bytes` are at most 4 GiB: the address space of the 32-bit cores
and DSPs profiles describe."""

MIN_ALIGNMENT_BYTES = 8
"""The smallest `alignment_bytes`: the alignment of the widest C scalar a bundle keeps in its arena or weights
(int64_t, double)."""

MAX_ALIGNMENT_BYTES = 4096
"""The largest `alignment_bytes`: a memory page; more only wastes arena between buffers."""

MAX_INSTRUCTIONS_PER_MAC = 1e6
"""A unit's cost per multiply-accumulate is a finite number in (0, 1e6]."""

TEXT_CHARS = 200
"""`description` and `memory_source`: one line of printable characters, at most this long."""

TEXT_REFUSED = frozenset("$`\\\"")
"""Characters a text line may not hold: those that start an expansion or quote in make, the shell or CMake.
Text lines reach only the manifest (JSON) and messages, never a build file; this keeps them inert anyway."""


class BadValue(ValueError):
    """A field value that fails its check; the text says what it must be (the caller names file and field, and
    the value unless `names_the_value`: the text quotes the part at fault itself)."""

    def __init__(self, reason: str, *, names_the_value: bool = False) -> None:
        super().__init__(reason)
        self.names_the_value = names_the_value


def shown(value: Any) -> str:
    """`value` as the error line quotes it: its repr (control characters escaped), cut to SHOWN_CHARS."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise BadValue(f"must be {what}")
        return value

    return check


name = _matching(NAME_PATTERN, "lowercase letters, digits, '-', '_' or '.' (at most 64)")
core_name = _matching(CORE_PATTERN, "lowercase letters, digits, '-', '_', '.' or '+' (at most 64)")
unit_name = _matching(UNIT_NAME_PATTERN, "a lowercase C identifier of ASCII letters, digits and '_' (at most 32)")
region_name = _matching(REGION_NAME_PATTERN, "a lowercase C identifier of ASCII letters, digits and '_', "
                        "starting with a letter (at most 32)")
operator_kind = _matching(OPERATOR_PATTERN, "an operator kind: letters, digits and '_' (at most 64)")


def compiler(value: Any) -> str:
    """A C compiler's command: a TOOL_PATTERN whose last name matches COMPILER_NAME_PATTERN."""
    if (not isinstance(value, str) or not TOOL_PATTERN.fullmatch(value)
            or not COMPILER_NAME_PATTERN.fullmatch(value.rsplit("/", 1)[-1])):
        raise BadValue("must be a C compiler's command name or absolute path (letters, digits, '_', '.', '+', '-'; "
                       "the name ending in 'cc' or 'clang', maybe with a version such as gcc-12)")
    return value


def tool_prefix(value: Any) -> str:
    """`binutils_prefix`: "" (the host's binutils), or a prefix ending in '-' or '/' that makes a tool of "ar"
    ("arm-none-eabi-", "/opt/arm/bin/arm-none-eabi-", "/opt/llvm/bin/")."""
    if value == "":
        return value
    if not isinstance(value, str) or not value.endswith(("-", "/")) or not TOOL_PATTERN.fullmatch(value + "ar"):
        raise BadValue('must be "" (the host\'s binutils) or a command name or absolute path prefix ending in '
                       "'-' or '/', of letters, digits, '_', '.', '+', '-'")
    return value


def flags(value: Any) -> tuple[str, ...]:
    """A list of at most MAX_FLAGS flags, each matching FLAG_PATTERN."""
    if not isinstance(value, list) or len(value) > MAX_FLAGS:
        raise BadValue(f"must be a list of at most {MAX_FLAGS} flags")
    for flag in value:
        if not isinstance(flag, str) or not FLAG_PATTERN.fullmatch(flag):
            raise BadValue(f"has the flag {shown(flag)}: a flag is '-' then letters, digits and _ . , = + - "
                           "(no path, space, quote or shell or make character), at most 128 characters",
                           names_the_value=True)
    return tuple(value)


def text_line(value: Any) -> str:
    """One line for humans: printable characters (no control or line-separator character) other than
    TEXT_REFUSED, at most TEXT_CHARS."""
    if (not isinstance(value, str) or not value.strip() or not value.isprintable() or len(value) > TEXT_CHARS
            or not TEXT_REFUSED.isdisjoint(value)):
        raise BadValue(f"must be one non-empty line of printable characters other than $ ` \\ \", at most "
                       f"{TEXT_CHARS}")
    return value


def byte_count(value: Any) -> int:
    """A whole number of bytes in 1..MAX_BYTES."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_BYTES:
        raise BadValue(f"must be a positive whole number of bytes, at most {MAX_BYTES:,} (4 GiB)")
    return value


def clock_hz(value: Any) -> int:
    """A core clock in hertz: a whole number in MIN_CLOCK_HZ..MAX_CLOCK_HZ."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_CLOCK_HZ <= value <= MAX_CLOCK_HZ:
        raise BadValue(f"must be a whole number of hertz from {MIN_CLOCK_HZ:,} (1 kHz) to {MAX_CLOCK_HZ:,} (10 GHz)")
    return value


def alignment(value: Any) -> int:
    """A power of two in MIN_ALIGNMENT_BYTES..MAX_ALIGNMENT_BYTES."""
    if (isinstance(value, bool) or not isinstance(value, int) or value & (value - 1)
            or not MIN_ALIGNMENT_BYTES <= value <= MAX_ALIGNMENT_BYTES):
        raise BadValue(f"must be a power of two from {MIN_ALIGNMENT_BYTES} to {MAX_ALIGNMENT_BYTES} bytes")
    return value


def instructions_per_mac(value: Any) -> float:
    """A cost in instructions per multiply-accumulate: a finite number in (0, MAX_INSTRUCTIONS_PER_MAC]."""
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not 0 < value <= MAX_INSTRUCTIONS_PER_MAC):
        raise BadValue(f"must be a number of instructions per MAC above 0 and at most {MAX_INSTRUCTIONS_PER_MAC:g}")
    return float(value)


def one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    """A check that the value is one of `choices`."""
    def check(value: Any) -> str:
        if value not in choices:
            raise BadValue(f"must be one of {', '.join(repr(c) for c in choices)}")
        return value

    return check
