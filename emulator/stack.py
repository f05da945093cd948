"""The stack peak of one call of a self-test ELF, from GCC's -fstack-usage and the ELF's disassembly.

Stack peak method (static, no run): GCC's `-fstack-usage` gives each compiled function's own frame in
bytes (`.su` files); the direct calls come from the linked ELF's disassembly (`bl`/`blx` and branches to
another function's entry, i.e. tail calls, counted as calls: an over-estimate by the caller's frame).
peak(f) = frame(f) + max(peak(callee)), from the named root (the bundle's `<name>_run`; its kernels are
leaves or call libm/libgcc). Functions without a `.su` entry (newlib, libm, libgcc's soft-float and
64-bit helpers) get the frame their disassembly shows: the sum of every push, stmdb/vpush to sp, store
with sp pre-decrement and `sub sp, #N` in the body, an upper bound; they are listed as estimated. A frame
lowered by a register amount (alloca, VLAs; GCC's `dynamic`) is a lower bound, also listed. Either makes
the peak inexact, which the result says. Indirect calls are not followed: a function the root calls through a
pointer (a row-wise input's read_row) is named as an indirect callee, and its peak is added to the root's, as if
it were called at the root's deepest point (an upper bound). Recursion is an error.
RV32 code built with -msave-restore saves and restores a function's registers in libgcc's millicode
(`jal t0, __riscv_save_N` in its prologue, `j __riscv_restore_N` as its return): the save routine's part of the
frame is the caller's (GCC's .su counts it there), so a millicode routine is no callee and the disassembly's
frame of its caller adds the save area (`riscv_millicode_frame`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from emulator.tools import RISCV_BINUTILS_PREFIX, tool_output

_FUNCTION_HEADER = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$")
_BRANCH = re.compile(r"(?:bl|blx|b(?:eq|ne|cs|cc|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)?)(?:\.[nw])?")
_BRANCH_TARGET = re.compile(r"^[0-9a-f]+ <([^>+]+)>")
_REGISTER_LIST = re.compile(r"\{([^}]*)\}")
_PRE_DECREMENT = re.compile(r"\[sp, #-(\d+)\]!")
_SP_MINUS_IMMEDIATE = re.compile(r"^sp, (?:sp, )?#(\d+)")
_SP_MINUS_REGISTER = re.compile(r"^sp, (?:sp, )?[a-z]")
_RISCV_BRANCH = re.compile(r"(?:c\.)?(?:jal|call|tail|j|beq|bne|blt|bge|bltu|bgeu|beqz|bnez|blez|bgez|bltz|bgtz|bgt|ble|bgtu|bleu)")
_RISCV_BRANCH_TARGET = re.compile(r"(?:^|,)\s*[0-9a-f]+ <([^>+]+)>$")
_RISCV_SP_MINUS_IMMEDIATE = re.compile(r"^sp,\s*(?:sp,\s*)?-(\d+)$")
_RISCV_SP_FROM_REGISTER = re.compile(r"^sp,\s*sp,\s*[a-z]|^sp,\s*[a-z]\w*,\s*sp$")
_RISCV_MILLICODE = re.compile(r"__riscv_(save|restore)_(\d+)")


@dataclass(frozen=True)
class StackFrame:
    """One function's own stack use in bytes, and whether it is only a lower bound (alloca, VLAs)."""

    function: str
    bytes: int
    dynamic: bool


@dataclass(frozen=True)
class DisassembledFunction:
    """What the linked ELF's code says about a function: its direct callees and its frame estimate."""

    callees: frozenset[str]
    frame: StackFrame


@dataclass(frozen=True)
class StackPeak:
    """Deepest call chain from a root: total bytes, the chain, and what makes the figure inexact."""

    bytes: int
    chain: tuple[str, ...]
    estimated_functions: tuple[str, ...]  # no .su frame: the disassembly's upper bound was used
    dynamic_functions: tuple[str, ...]  # frames that are lower bounds

    @property
    def exact(self) -> bool:
        return not self.estimated_functions and not self.dynamic_functions


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


def disassemble(elf: Path, code: CodeReading) -> dict[str, DisassembledFunction]:
    """Every function of `elf` with its direct callees and frame estimate, from `code`'s objdump -d."""
    bodies: dict[str, list[tuple[str, str]]] = {}
    body: list[tuple[str, str]] = []
    for line in tool_output(code.tool("objdump"), "-d", "--no-show-raw-insn", str(elf)).splitlines():
        header = _FUNCTION_HEADER.match(line)
        instruction = _INSTRUCTION.match(line)
        if header:
            body = bodies.setdefault(header.group(1), [])
        elif instruction:
            body.append((instruction.group(1), instruction.group(2)))
    return {name: _analyse(name, instructions, code) for name, instructions in bodies.items()}


def pushed_bytes(mnemonic: str, operands: str) -> int | None:
    """Bytes one instruction moves sp down by (0 if none); None when it is a register amount (unbounded)."""
    base = mnemonic.split(".")[0]
    if base in ("push", "vpush") or (base in ("stmdb", "stmfd", "vstmdb") and operands.startswith("sp!")):
        registers = _REGISTER_LIST.search(operands)
        return sum(_register_bytes(part.strip()) for part in registers.group(1).split(",")) if registers else 0
    pre_decrement = _PRE_DECREMENT.search(operands)
    if pre_decrement and mnemonic.startswith(("str", "vstr")):
        return int(pre_decrement.group(1))
    if mnemonic in ("sub", "subs", "sub.w", "subw"):
        immediate = _SP_MINUS_IMMEDIATE.match(operands)
        if immediate:
            return int(immediate.group(1))
        if _SP_MINUS_REGISTER.match(operands):
            return None
    return 0


def _register_bytes(registers: str) -> int:
    """Bytes of `r4`, `lr`, `d8`, `s16` or a range such as `d8-d15`."""
    first, _, last = registers.partition("-")
    width = {"d": 8, "q": 16}.get(first[0], 4)
    if not last:
        return width
    return width * (int(last[1:]) - int(first[1:]) + 1)


def riscv_pushed_bytes(mnemonic: str, operands: str) -> int | None:
    """Bytes one RV32 instruction moves sp down by (0 if none): `addi sp,sp,-N`, which objdump may show as
    `add sp,sp,-N` and, compressed, as `c.addi16sp sp,-N`; None when a register is added to or subtracted
    from sp (a frame of run-time size)."""
    immediate = _RISCV_SP_MINUS_IMMEDIATE.match(operands)
    if mnemonic in ("addi", "add", "c.addi16sp", "c.addi") and immediate:
        return int(immediate.group(1))
    if mnemonic in ("sub", "add", "c.add") and _RISCV_SP_FROM_REGISTER.match(operands):
        return None
    return 0


def riscv_millicode_frame(function: str) -> int | None:
    """Bytes of its caller's frame that a call of libgcc's -msave-restore millicode `function` sets up (0 for a
    restore routine: it releases them), None for any other function. `__riscv_save_N` (ilp32) saves ra and s0..s(N-1)
    in sp's 16-byte alignment: 4 (N + 1) bytes rounded up to 16 (save_12: 64, save_10: 48, save_4: 32, save_0: 16),
    the amount GCC's .su counts in the caller's frame; its own `add sp,sp,-64` is undone in part by a register
    amount, so its disassembly does not give it."""
    millicode = _RISCV_MILLICODE.fullmatch(function)
    if millicode is None:
        return None
    return 0 if millicode.group(1) == "restore" else (4 * (int(millicode.group(2)) + 1) + 15) // 16 * 16


def _no_millicode(function: str) -> int | None:
    """None: no function of Arm code is a caller's save or restore routine."""
    return None


@dataclass(frozen=True)
class CodeReading:
    """How the stack method reads one instruction set's linked code: its binutils (`prefix` + "objdump",
    "size", "nm"), which mnemonics are direct calls or branches to another function (`branch`), where in the
    operands the branch's target function is (`target`, group 1 its name) and how many bytes an
    instruction moves sp down by (`pushed_bytes`; None: a register amount), and the bytes of its caller's frame a
    call of a millicode routine sets up (`millicode_frame`: None for an ordinary callee)."""

    prefix: str
    branch: re.Pattern[str]
    target: re.Pattern[str]
    pushed_bytes: Callable[[str, str], int | None]
    millicode_frame: Callable[[str], int | None] = _no_millicode

    def tool(self, name: str) -> str:
        """The binutils program `name` ("objdump", "size", "nm") for this instruction set."""
        return f"{self.prefix}{name}"


ARM_CODE = CodeReading("arm-none-eabi-", _BRANCH, _BRANCH_TARGET, pushed_bytes)
"""Arm Thumb code: `bl`/`blx` and branches, frames from push/stmdb/vpush/str pre-decrement/`sub sp`."""

RISCV_CODE = CodeReading(RISCV_BINUTILS_PREFIX, _RISCV_BRANCH, _RISCV_BRANCH_TARGET, riscv_pushed_bytes,
                         riscv_millicode_frame)
"""RV32 code: `jal`/`call`/`tail`/`j` and conditional branches, frames from `addi sp,sp,-N` and the -msave-restore
millicode's save areas."""


def _analyse(name: str, instructions: list[tuple[str, str]], code: CodeReading) -> DisassembledFunction:
    callees = set()
    frame_bytes = 0
    dynamic = False
    for mnemonic, operands in instructions:
        target = code.target.search(operands)
        if target and code.branch.fullmatch(mnemonic) and target.group(1) != name:
            millicode = code.millicode_frame(target.group(1))
            if millicode is None:
                callees.add(target.group(1))
            else:
                frame_bytes += millicode
        pushed = code.pushed_bytes(mnemonic, operands)
        if pushed is None:
            dynamic = True
        else:
            frame_bytes += pushed
    return DisassembledFunction(frozenset(callees), StackFrame(name, frame_bytes, dynamic))


def stack_peak(root: str, frames: dict[str, StackFrame], functions: dict[str, DisassembledFunction],
               indirect: Iterable[str] = ()) -> StackPeak:
    """The deepest chain from `root`: frame(f) + max over callees, as the module doc describes; plus the deepest
    peak of the `indirect` callees present in `functions` (those `root` calls through a pointer), its chain after
    the root's.

    `frames` are the compiler's (.su); a function without one takes its disassembled frame estimate.
    """
    if root not in functions:
        raise ValueError(f"stack root {root} is not a function of the ELF")
    peaks: dict[str, tuple[int, tuple[str, ...]]] = {}
    estimated: set[str] = set()
    dynamic: set[str] = set()

    def visit(function: str, path: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
        if function in path:
            raise ValueError(f"recursion through {' -> '.join(path + (function,))}: no static stack bound")
        if function not in peaks:
            code = functions.get(function, DisassembledFunction(frozenset(), StackFrame(function, 0, False)))
            frame = frames.get(function)
            if frame is None:
                frame = code.frame
                estimated.add(function)
            if frame.dynamic:
                dynamic.add(function)
            deepest = max((visit(callee, path + (function,)) for callee in sorted(code.callees)), default=(0, ()))
            peaks[function] = (frame.bytes + deepest[0], (function,) + deepest[1])
        return peaks[function]

    total, chain = visit(root, ())
    called = max((visit(callee, ()) for callee in sorted(set(indirect) & set(functions))), default=(0, ()))
    total, chain = total + called[0], chain + called[1]
    return StackPeak(total, chain, tuple(sorted(estimated)), tuple(sorted(dynamic)))

