"""Flash and RAM bytes of a self-test ELF (binutils' size) and the stack peak of one call (-fstack-usage).

Sections come from our linker scripts (the backends' templates/link.ld.in), so their names are a closed set:
`.weights` holds the constants of every `*_weights.c` (flash), `.cases` the self-test's read-only data (its
embedded cases, beside the weights; counted as code, as when they were in `.text`), `.data` (and RISC-V's
thread-local `.tdata`) is initialised RAM (its image also takes flash), `.bss` (and `.tbss`) is zeroed RAM (the
arena is in it), and the rest of the allocated sections is code and other read-only data in flash. The binutils are those of
the ELF's instruction set (`emulator.stack.CodeReading`: Arm's unless given).

The bundle's own code (its kernels and run function, without libc, libm, libgcc and the self-test harness)
is read from the linker map next to the ELF (`selftest.map`, which both qemu-test builds write): the input
sections its object files put in `.text`. Its flash is read the same way: what the objects of its library
(kernels, run function, weights) put in every output section that takes flash, by kind (code with its
read-only data, weights, the `.data` image); this is what the compile's flash check counts. The stack peak of
the run call comes from `emulator.stack` (method described there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from emulator.stack import ARM_CODE, CodeReading, disassemble, read_stack_frames, stack_peak
from emulator.tools import tool_output

SECTION_KINDS: dict[str, str] = {
    ".vectors": "code",
    ".text": "code",
    ".ARM.extab": "code",
    ".ARM.exidx": "code",
    ".preinit_array": "code",
    ".init_array": "code",
    ".fini_array": "code",
    ".weights": "weights",
    ".cases": "code",
    ".data": "data",
    ".bss": "bss",
    ".rodata": "code",
    ".tdata": "data",
    ".tbss": "bss",
}
"""Each allocated output section of our linker script and what its bytes are."""

# Sections that occupy no memory on the device; ".GCC.command.line" comes from a profile's -frecord-gcc-switches.
_NOT_ALLOCATED = (".debug", ".comment", ".ARM.attributes", ".riscv.attributes", ".stab", ".GCC.command.line")

_MAP_START = "Linker script and memory map"
_MAP_OUTPUT_SECTION = re.compile(r"^(\.\S+|/DISCARD/)")
_MAP_INPUT_SECTION = re.compile(r"^ (\.\S+)(?:\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+))?$")
_MAP_CONTINUATION = re.compile(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)$")
_MAP_FILL = re.compile(r"^ \*fill\*\s+0x[0-9a-f]+\s+0x([0-9a-f]+)")

FLASH_KINDS = ("code", "weights", "data")
"""The kinds of output section whose bytes take flash (a `.data` section's initial image does)."""


def read_sizes(elf: Path, su_files: Iterable[Path], stack_roots: Mapping[str, str] | None = None,
               arena_symbol: str | None = None, bundle_sources: Iterable[str] = (),
               code: CodeReading = ARM_CODE, bundle_weight_sources: Iterable[str] = (),
               stack_indirect: Iterable[str] = ()) -> dict[str, object]:
    """Bytes of `elf` by kind, for the manifest; all sizes in bytes.

    Keys: code_bytes, weights_bytes, data_bytes, bss_bytes, flash_bytes (code + weights + data image),
    static_ram_bytes (data + bss); when `arena_symbol` is given: arena_bytes (see arena_size) and
    other_static_ram_bytes (static RAM besides the arena); when `bundle_sources` names the bundle's C files
    without their extension (e.g. "m_kernels", "m_model"): bundle_code_bytes, their part of code_bytes, and
    with `bundle_weight_sources` (e.g. "m_weights") too: bundle_flash (the flash the objects of both put in the
    ELF, by kind: bundle_flash_parts(...)); when `stack_roots` maps labels to run functions (with
    `stack_indirect`, the functions they call through a pointer, emulator.stack.stack_peak): the deepest run's
    stack_peak_bytes and stack_peak_chain, stack_peak_exact (every run's peak exact) and
    stack_estimated_functions (of every run), and with several runs stack_peak_bytes_per_model (label: bytes).
    The heap newlib's printf takes at run time (self-test harness, not the bundle) is not included.
    """
    by_kind = {"code": 0, "weights": 0, "data": 0, "bss": 0}
    for section, size in section_sizes(elf, code).items():
        kind = section_kind(section, elf)
        if kind is not None:
            by_kind[kind] += size
    sizes: dict[str, object] = {f"{kind}_bytes": size for kind, size in by_kind.items()}
    sizes["flash_bytes"] = by_kind["code"] + by_kind["weights"] + by_kind["data"]
    sizes["static_ram_bytes"] = by_kind["data"] + by_kind["bss"]
    if arena_symbol is not None:
        sizes["arena_bytes"] = arena_size(elf, arena_symbol, code)
        sizes["other_static_ram_bytes"] = by_kind["data"] + by_kind["bss"] - sizes["arena_bytes"]
    stems = tuple(bundle_sources)
    if stems:
        sizes["bundle_code_bytes"] = mapped_code_bytes(Path(elf).with_suffix(".map"), stems)
    weight_stems = tuple(bundle_weight_sources)
    if stems and weight_stems:
        sizes["bundle_flash"] = bundle_flash_parts(Path(elf).with_suffix(".map"), stems + weight_stems)
    if stack_roots:
        frames, functions = read_stack_frames(su_files), disassemble(elf, code)
        peaks = {label: stack_peak(root, frames, functions, stack_indirect) for label, root in stack_roots.items()}
        deepest = max(peaks.values(), key=lambda peak: peak.bytes)
        sizes["stack_peak_bytes"] = deepest.bytes
        sizes["stack_peak_chain"] = list(deepest.chain)
        sizes["stack_peak_exact"] = all(peak.exact for peak in peaks.values())
        sizes["stack_estimated_functions"] = sorted({f for peak in peaks.values() for f in peak.estimated_functions})
        if len(peaks) > 1:
            sizes["stack_peak_bytes_per_model"] = {label: peak.bytes for label, peak in peaks.items()}
    return sizes


def section_sizes(elf: Path, code: CodeReading) -> dict[str, int]:
    """Every section of `elf` (an ELF or object file) and its bytes, from `code`'s `size -A -d`."""
    sizes = {}
    for line in tool_output(code.tool("size"), "-A", "-d", str(elf)).splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0].startswith(".") and fields[1].isdigit():
            sizes[fields[0]] = int(fields[1])
    return sizes


def section_kind(section: str, elf: Path) -> str | None:
    """What `section`'s bytes are ("code", "weights", "data", "bss"); None for non-allocated sections."""
    if section.startswith(_NOT_ALLOCATED):
        return None
    try:
        return SECTION_KINDS[section]
    except KeyError:
        raise ValueError(f"{elf}: section {section} is not one our linker script defines") from None


def symbol_size(elf: Path, symbol: str, code: CodeReading) -> int:
    """Bytes of `symbol` in `elf` (from `code`'s `nm -S`); ValueError if absent."""
    for line in tool_output(code.tool("nm"), "-S", str(elf)).splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] == symbol:
            return int(fields[1], 16)
    raise ValueError(f"{elf}: no sized symbol {symbol}")


def arena_size(elf: Path, symbol: str, code: CodeReading) -> int:
    """Bytes of the static arena `symbol` in `elf`: 0 when the ELF has no such symbol. The compiler drops
    the arena of a model that needs none (its placeholder array, which no instruction reads), while an
    arena the kernels use is always linked."""
    try:
        return symbol_size(elf, symbol, code)
    except ValueError:
        return 0


def mapped_code_bytes(map_file: Path, stems: tuple[str, ...]) -> int:
    """Bytes the objects of sources `stems` (`m_model` matches m_model.o and m_model.c.obj) put in `.text`,
    from a GNU ld map file."""
    return mapped_section_bytes(map_file, stems).get(".text", 0)


def bundle_flash_parts(map_file: Path, stems: tuple[str, ...]) -> dict[str, int]:
    """The flash the objects of sources `stems` put in the ELF whose GNU ld map file is `map_file`, by kind
    ("code", "weights", "data": FLASH_KINDS; bytes)."""
    parts = dict.fromkeys(FLASH_KINDS, 0)
    for section, size in mapped_section_bytes(map_file, stems).items():
        kind = SECTION_KINDS.get(section)  # None: not allocated, or discarded
        if kind in parts:
            parts[kind] += size
    return parts


def mapped_section_bytes(map_file: Path, stems: tuple[str, ...]) -> dict[str, int]:
    """Bytes the objects of sources `stems` (`m_model` matches m_model.o and m_model.c.obj) put in each output
    section, from a GNU ld map file: each of their input sections' bytes and the linker's fill before it (the
    padding its alignment asked for: a weights array aligned to 32 B on cortex-m55 after one of 0x30 B takes 16 B
    more of flash)."""
    totals: dict[str, int] = {}
    output_section = ""
    pending_input = False
    fill = 0  # the fill bytes since the last input section with bytes, in this output section
    lines = map_file.read_text(encoding="utf-8").splitlines()
    for line in lines[lines.index(_MAP_START) + 1:]:
        output = _MAP_OUTPUT_SECTION.match(line)
        if output:
            output_section, fill = output.group(1), 0
            continue
        filled = _MAP_FILL.match(line)
        if filled:
            fill += int(filled.group(1), 16)
            continue
        placed = None
        single_line = _MAP_INPUT_SECTION.match(line)
        if single_line:
            pending_input = single_line.group(2) is None
            placed = None if pending_input else single_line.group(2, 3)
        elif pending_input:
            continuation = _MAP_CONTINUATION.match(line)
            placed = continuation.group(1, 2) if continuation else None
            pending_input = False
        if placed and int(placed[0], 16):
            if Path(placed[1]).name.split(".")[0] in stems:
                totals[output_section] = totals.get(output_section, 0) + fill + int(placed[0], 16)
            fill = 0
    return totals
