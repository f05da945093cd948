"""Flash and RAM bytes of a self-test ELF (arm-none-eabi-size) and the stack peak of one call (-fstack-usage).

Sections come from our linker script (templates/link.ld.in), so their names are a closed set:
`.weights` holds the constants of every `*_weights.c` (flash), `.data` is initialised RAM (its image also
takes flash), `.bss` is zeroed RAM (the arena is in it), and the rest of the allocated sections is code and
other read-only data in flash.

Stack peak method (static, no run): GCC's `-fstack-usage` gives each compiled function's own frame in
bytes (`.su` files); the direct calls come from the linked ELF's disassembly (`bl`/`blx` and branches to
another function's entry, i.e. tail calls, counted as calls: an over-estimate by the caller's frame).
peak(f) = frame(f) + max(peak(callee)), from the named root (the bundle's `<name>_run`; its kernels are
leaves or call libm). Functions without a `.su` entry (newlib, libm, libgcc) count 0 bytes, are listed as
unknown and are not descended into; frames GCC marks `dynamic` (alloca, VLAs) are lower bounds. Either makes the peak inexact,
which the result says. Indirect calls are not followed. Recursion is an error.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SECTION_KINDS: dict[str, str] = {
    ".vectors": "code",
    ".text": "code",
    ".ARM.extab": "code",
    ".ARM.exidx": "code",
    ".preinit_array": "code",
    ".init_array": "code",
    ".fini_array": "code",
    ".weights": "weights",
    ".data": "data",
    ".bss": "bss",
}
"""Each allocated output section of our linker script and what its bytes are."""

_NOT_ALLOCATED = (".debug", ".comment", ".ARM.attributes", ".stab")

_FUNCTION_HEADER = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_CALL = re.compile(r"^\s*[0-9a-f]+:\s+(?:bl|blx|b(?:eq|ne|cs|cc|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)?(?:\.[nw])?)"
                   r"\s+[0-9a-f]+ <([^>+]+)>")


@dataclass(frozen=True)
class StackFrame:
    """One function's own stack use from a `.su` line: bytes, and whether GCC could bound it statically."""

    function: str
    bytes: int
    dynamic: bool


@dataclass(frozen=True)
class StackPeak:
    """Deepest call chain from a root: total bytes, the chain, and what makes the figure inexact."""

    bytes: int
    chain: tuple[str, ...]
    unknown_functions: tuple[str, ...]  # called but without a .su frame: counted 0 bytes
    dynamic_functions: tuple[str, ...]  # frames that are lower bounds

    @property
    def exact(self) -> bool:
        return not self.unknown_functions and not self.dynamic_functions


def read_sizes(elf: Path, su_files: Iterable[Path], stack_root: str | None = None,
               arena_symbol: str | None = None) -> dict[str, object]:
    """Bytes of `elf` by kind, for the manifest; all sizes in bytes.

    Keys: code_bytes, weights_bytes, data_bytes, bss_bytes, flash_bytes (code + weights + data image),
    static_ram_bytes (data + bss); when `arena_symbol` names a symbol of the ELF: arena_bytes and
    other_static_ram_bytes (static RAM besides the arena); when `stack_root` is given: stack_peak_bytes,
    stack_peak_chain, stack_peak_exact, stack_unknown_functions. The heap newlib's printf takes at run time
    (self-test harness, not the bundle) is not included.
    """
    by_kind = {"code": 0, "weights": 0, "data": 0, "bss": 0, "none": 0}
    for section, size in section_sizes(elf).items():
        by_kind[section_kind(section, elf)] += size
    del by_kind["none"]
    sizes: dict[str, object] = {f"{kind}_bytes": size for kind, size in by_kind.items()}
    sizes["flash_bytes"] = by_kind["code"] + by_kind["weights"] + by_kind["data"]
    sizes["static_ram_bytes"] = by_kind["data"] + by_kind["bss"]
    if arena_symbol is not None:
        sizes["arena_bytes"] = symbol_size(elf, arena_symbol)
        sizes["other_static_ram_bytes"] = by_kind["data"] + by_kind["bss"] - sizes["arena_bytes"]
    if stack_root is not None:
        peak = stack_peak(stack_root, read_stack_frames(su_files), call_graph(elf))
        sizes["stack_peak_bytes"] = peak.bytes
        sizes["stack_peak_chain"] = list(peak.chain)
        sizes["stack_peak_exact"] = peak.exact
        sizes["stack_unknown_functions"] = list(peak.unknown_functions)
    return sizes


def section_sizes(elf: Path) -> dict[str, int]:
    """Every section of `elf` and its bytes, from `arm-none-eabi-size -A -d`."""
    sizes = {}
    for line in _tool("arm-none-eabi-size", "-A", "-d", str(elf)).splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0].startswith(".") and fields[1].isdigit():
            sizes[fields[0]] = int(fields[1])
    return sizes


def section_kind(section: str, elf: Path) -> str:
    """What `section`'s bytes are ("code", "weights", "data", "bss"); "none" for non-allocated sections."""
    if section.startswith(_NOT_ALLOCATED):
        return "none"
    try:
        return SECTION_KINDS[section]
    except KeyError:
        raise ValueError(f"{elf}: section {section} is not one our linker script defines") from None


def symbol_size(elf: Path, symbol: str) -> int:
    """Bytes of `symbol` in `elf` (from `arm-none-eabi-nm -S`); ValueError if absent."""
    for line in _tool("arm-none-eabi-nm", "-S", str(elf)).splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] == symbol:
            return int(fields[1], 16)
    raise ValueError(f"{elf}: no sized symbol {symbol}")


def read_stack_frames(su_files: Iterable[Path]) -> dict[str, StackFrame]:
    """Each function's frame from GCC `.su` lines `file:line:col:function<TAB>bytes<TAB>qualifiers`.

    A static function's name may appear in several files: the largest frame is kept.
    """
    frames: dict[str, StackFrame] = {}
    for su_file in su_files:
        for line in Path(su_file).read_text(encoding="utf-8").splitlines():
            location, size, qualifiers = line.split("\t")
            frame = StackFrame(location.rsplit(":", 1)[1], int(size), "dynamic" in qualifiers)
            known = frames.get(frame.function)
            if known is None or frame.bytes > known.bytes:
                frames[frame.function] = frame
    return frames


def call_graph(elf: Path) -> dict[str, set[str]]:
    """Direct callees of every function of `elf`, from `arm-none-eabi-objdump -d` (see the module doc)."""
    graph: dict[str, set[str]] = {}
    current: set[str] | None = None
    caller = ""
    for line in _tool("arm-none-eabi-objdump", "-d", "--no-show-raw-insn", str(elf)).splitlines():
        header = _FUNCTION_HEADER.match(line)
        if header:
            caller = header.group(1)
            current = graph.setdefault(caller, set())
            continue
        call = _CALL.match(line)
        if call and current is not None and call.group(1) != caller:
            current.add(call.group(1))
    return graph


def stack_peak(root: str, frames: dict[str, StackFrame], graph: dict[str, set[str]]) -> StackPeak:
    """The deepest chain from `root`: frame(f) + max over callees, as the module doc describes."""
    if root not in graph:
        raise ValueError(f"stack root {root} is not a function of the ELF")
    peaks: dict[str, tuple[int, tuple[str, ...]]] = {}
    unknown: set[str] = set()
    dynamic: set[str] = set()

    def visit(function: str, path: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        if function in path:
            raise ValueError(f"recursion through {' -> '.join(path + (function,))}: no static stack bound")
        if function not in peaks:
            frame = frames.get(function)
            if frame is None:
                unknown.add(function)
                peaks[function] = (0, (function,))
                return peaks[function]
            if frame.dynamic:
                dynamic.add(function)
            deepest = max((visit(callee, path + (function,)) for callee in sorted(graph.get(function, ()))),
                          default=(0, ()))
            peaks[function] = (frame.bytes + deepest[0], (function,) + deepest[1])
        return peaks[function]

    total, chain = visit(root, ())
    return StackPeak(total, chain, tuple(sorted(unknown)), tuple(sorted(dynamic)))


def _tool(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout
