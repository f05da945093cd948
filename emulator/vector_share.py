"""The Helium (MVE) share of each function's executed instructions on the emulated Cortex-M55.

QEMU's -icount counts a vector instruction as one instruction, where a Cortex-M55 spends two beats on most
of them (its 64-bit datapath takes a 128-bit vector in two halves; consecutive vector instructions overlap
their beats, so the cost lies between one and two cycles). The instruction counts of an emulated bundle
therefore understate the M55's cycles by up to the vector instructions' count; this module measures that
count per function, so the cycle picture can be bounded: between `instructions` and `instructions + vector`.

Method: the program runs once on its board under QEMU with one instruction per translation block
(`-singlestep`) and the execution log (`-d exec,nochain`), streamed through a pipe, never written to disk:
one line per executed instruction giving its address. Each address is classified from the ELF's
disassembly (binutils' objdump for Armv8.1-M with MVE): an instruction is a vector one when it is an MVE
instruction, which names a Q register or is a vector predication instruction (VPT, VPST, VCTP). Scalar
floating point (`vadd.f32 s0, ...`) and the low-overhead loops (`dls`, `le`, `dlstp`, `letp`) are not.
The program keeps every restriction of `emulator.qemu` (sandbox, no host device, no semihosting).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from emulator.boards import Board
from emulator.qemu import QemuError, run_qemu
from emulator.tools import tool_output

OBJDUMP = "arm-none-eabi-objdump"
MVE_ARCHITECTURE = "armv8.1-m.main"
"""objdump's machine that decodes MVE (without it, the M55's vector instructions read as coprocessor ones)."""

_FUNCTION_HEADER = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_Q_REGISTER = re.compile(r"\bq[0-7]\b")
_VECTOR_PREDICATION = ("vpt", "vpst", "vctp")
# "Trace 0: 0x7f4e40000100 [0080044a/00001f30/00000150/ff020201] Reset_Handler": the second field is the
# guest address (QEMU 7.2's accel/tcg/cpu-exec.c, CPU_LOG_EXEC).
_TRACE = re.compile(rb"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")


def is_vector(mnemonic: str, operands: str) -> bool:
    """Whether the instruction `mnemonic operands` (objdump's text) is an MVE vector instruction."""
    if not mnemonic.startswith("v"):
        return False
    return mnemonic.startswith(_VECTOR_PREDICATION) or _Q_REGISTER.search(operands) is not None


@dataclass(frozen=True)
class Instruction:
    """One instruction of the ELF: the function it belongs to and whether it is a vector instruction."""

    function: str
    vector: bool


def read_instructions(elf: Path) -> dict[int, Instruction]:
    """Every instruction of `elf` by its address."""
    instructions: dict[int, Instruction] = {}
    function = "?"
    for line in tool_output(OBJDUMP, "-d", "--no-show-raw-insn", "-m", MVE_ARCHITECTURE, str(elf)).splitlines():
        header = _FUNCTION_HEADER.match(line)
        instruction = _INSTRUCTION.match(line)
        if header:
            function = header.group(1)
        elif instruction:
            address, mnemonic, operands = instruction.groups()
            instructions[int(address, 16)] = Instruction(function, is_vector(mnemonic, operands))
    return instructions


def executed_addresses(elf: Path, board: Board, timeout_s: float = 600.0) -> Counter[int]:
    """How many times the program `elf` executed each instruction address on `board` (one whole run).
    QemuTimeoutError after `timeout_s` seconds; QemuError when QEMU fails, ends by a signal, or the program
    prints more than MAX_OUTPUT_BYTES."""
    counts: Counter[int] = Counter()

    def count(line: bytes) -> None:
        executed = _TRACE.match(line)
        if executed:
            counts[int(executed.group(1), 16)] += 1

    result = run_qemu(elf, board, timeout_s, trace=count)
    if result.qemu_status != 0:
        raise QemuError(f"{elf} on {board.name}: {result.ending()}")
    return counts


@dataclass(frozen=True)
class FunctionShare:
    """A function's executed instructions over one run and how many of them were vector instructions."""

    function: str
    instructions: int
    vector: int

    @property
    def share(self) -> float:
        """The vector instructions' fraction of the function's instructions (0 when it ran none)."""
        return self.vector / self.instructions if self.instructions else 0.0


def function_shares(instructions: dict[int, Instruction], executed: Counter[int]) -> list[FunctionShare]:
    """Per function, its executed instructions and vector instructions, most executed first; an address that
    is no instruction of the ELF (none, for a program that does not write code) counts under "?"."""
    totals: Counter[str] = Counter()
    vectors: Counter[str] = Counter()
    for address, times in executed.items():
        instruction = instructions.get(address, Instruction("?", False))
        totals[instruction.function] += times
        if instruction.vector:
            vectors[instruction.function] += times
    return [FunctionShare(function, count, vectors[function]) for function, count in totals.most_common()]


def defined_functions(objects: list[Path]) -> set[str]:
    """The functions the object files `objects` define (global and static, as the ELF's disassembly names
    them)."""
    listing = tool_output("arm-none-eabi-nm", "--defined-only", *map(str, objects))
    return {fields[2] for fields in (line.split() for line in listing.splitlines())
            if len(fields) == 3 and fields[1] in "tT"}
