"""emulator and backends.cortex_m.bundle_files without the cross tools: stack-peak arithmetic, .su parsing, lookups, the Make fragment."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from emulator.boards import BOARDS, Board, MemoryRegion
from emulator.qemu import QemuError, run_qemu
from emulator.stack import stack_peak
from backends.cortex_m.bundle_files import write_cortex_m_support
from conftest import profile_build_config, profile_target
from emulator.sizes import section_kind
from emulator.stack import DisassembledFunction, StackFrame, pushed_bytes, read_stack_frames
from backends.cortex_m.bundle_files.support import ticks_per_instruction


def frames(**bytes_by_function: int) -> dict[str, StackFrame]:
    return {name: StackFrame(name, size, dynamic=False) for name, size in bytes_by_function.items()}


def code(callees_by_function: dict[str, set[str]], **estimated_bytes: int) -> dict[str, DisassembledFunction]:
    return {name: DisassembledFunction(frozenset(callees), StackFrame(name, estimated_bytes.get(name, 0), False))
            for name, callees in callees_by_function.items()}


def test_stack_peak_is_the_deepest_sum_of_frames_along_a_call_chain() -> None:
    graph = code({"run": {"conv", "dense"}, "conv": {"im2col"}, "dense": set(), "im2col": set()})
    peak = stack_peak("run", frames(run=24, conv=16, im2col=32, dense=64), graph)
    assert peak.bytes == 24 + 64  # run -> dense (88) beats run -> conv -> im2col (72)
    assert peak.chain == ("run", "dense")
    assert peak.exact


def test_stack_peak_adds_the_deepest_function_the_root_calls_through_a_pointer() -> None:
    """A row-wise input's read_row runs on the run's stack: its peak comes on top (an upper bound); one not in
    the ELF (a bundle that takes its input whole) adds nothing."""
    graph = code({"run": {"conv"}, "conv": set(), "read_row": {"memcpy"}, "memcpy": set(), "other": set()})
    sizes = frames(run=24, conv=40, read_row=16, memcpy=8, other=4)
    peak = stack_peak("run", sizes, graph, ("read_row", "other", "absent"))
    assert (peak.bytes, peak.chain) == (24 + 40 + 16 + 8, ("run", "conv", "read_row", "memcpy"))
    assert stack_peak("run", sizes, graph, ("absent",)) == stack_peak("run", sizes, graph)


def test_stack_peak_takes_the_disassembled_frame_when_there_is_no_su_entry() -> None:
    graph = code({"run": {"kernel"}, "kernel": {"expf"}, "expf": {"__math_oflow"}, "__math_oflow": set()},
                 run=99, expf=24, __math_oflow=8)
    peak = stack_peak("run", frames(run=8, kernel=40), graph)
    assert peak.bytes == 8 + 40 + 24 + 8  # the .su frame of run (8) wins over its disassembled 99
    assert peak.estimated_functions == ("__math_oflow", "expf")
    assert not peak.exact


def test_stack_peak_marks_dynamic_frames_as_lower_bounds() -> None:
    peak = stack_peak("run", {"run": StackFrame("run", 32, dynamic=True)}, code({"run": set()}))
    assert (peak.bytes, peak.dynamic_functions, peak.exact) == (32, ("run",), False)


def test_stack_peak_refuses_recursion_and_names_the_cycle() -> None:
    with pytest.raises(ValueError, match="run -> a -> b -> a"):
        stack_peak("run", frames(run=8, a=8, b=8), code({"run": {"a"}, "a": {"b"}, "b": {"a"}}))


def test_stack_peak_names_a_root_that_is_not_in_the_elf() -> None:
    with pytest.raises(ValueError, match="model_run"):
        stack_peak("model_run", {}, code({"main": set()}))


@pytest.mark.parametrize(("mnemonic", "operands", "expected"), [
    ("push", "{r4, r5, r6, r7, lr}", 20),
    ("stmdb", "sp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}", 36),
    ("vpush", "{d8-d15}", 64),
    ("vpush", "{s16-s19}", 16),
    ("str.w", "lr, [sp, #-8]!", 8),
    ("strd", "r4, r5, [sp, #-8]!", 8),
    ("sub", "sp, #92 @ 0x5c", 92),
    ("sub.w", "sp, sp, #1024", 1024),
    ("sub", "sp, r3", None),  # alloca: no bound
    ("stmdb", "r0!, {r4, r5}", 0),  # not the stack
    ("sub", "r3, r3, #1", 0),
    ("ldr", "r3, [sp, #4]", 0),
])
def test_pushed_bytes_reads_how_far_an_instruction_moves_sp(mnemonic: str, operands: str,
                                                           expected: int | None) -> None:
    assert pushed_bytes(mnemonic, operands) == expected


def test_su_lines_give_each_function_its_largest_frame(tmp_path: Path) -> None:
    (tmp_path / "a.su").write_text("a.c:3:6:helper\t16\tstatic\nmodel.c:9:5:model_run\t40\tdynamic,bounded\n")
    (tmp_path / "b.su").write_text("b.c:7:13:helper\t24\tstatic\n")
    parsed = read_stack_frames([tmp_path / "a.su", tmp_path / "b.su"])
    assert parsed == {
        "helper": StackFrame("helper", 24, dynamic=False),
        "model_run": StackFrame("model_run", 40, dynamic=True),
    }


def test_an_unknown_section_is_an_error_not_a_silent_miscount() -> None:
    assert section_kind(".weights", Path("x.elf")) == "weights"
    assert section_kind(".debug_info", Path("x.elf")) is None
    with pytest.raises(ValueError, match=r"x\.elf: section \.ram_func"):
        section_kind(".ram_func", Path("x.elf"))


def test_the_emulated_selftest_is_compiled_with_the_profiles_flags(tmp_path: Path) -> None:
    """One source for a core's flags: the profile. (A table of its own once gave the M7 self-test
    -mfpu=fpv5-d16 while its library was built with the profile's fpv5-sp-d16.)"""
    m7 = profile_target("cortex-m7")
    assert (m7.board.name, m7.hard_float) == ("mps2-an500", True)
    write_cortex_m_support(tmp_path, "tiny", profile_build_config("cortex-m7"))
    fragment = (tmp_path / "cortex_m" / "qemu-test.mk").read_text()
    assert "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16" in fragment
    assert not profile_target("cortex-m0plus").hard_float


@pytest.mark.parametrize("profile_name", ["lowpower", "hifi4"])
def test_profiles_without_one_of_our_boards_have_no_emulated_target(profile_name: str) -> None:
    assert profile_build_config(profile_name).emulated is None  # the compile's self-test runs on the host


def test_cortex_m55_runs_on_the_an547_with_its_weights_apart_and_the_system_counter(tmp_path: Path) -> None:
    """The AN547's 512 KiB ITCM boots the core but is too small for large weights: they go to its QSPI region;
    it has no CMSDK timer0: the SSE-300's system counter counts (4.096 ticks per instruction)."""
    m55 = profile_target("cortex-m55")
    assert (m55.board.name, m55.hard_float) == ("mps3-an547", True)
    write_cortex_m_support(tmp_path, "tiny", profile_build_config("cortex-m55"))
    script = (tmp_path / "cortex_m" / "link.ld").read_text()
    assert "CONSTANTS (r) : ORIGIN = 0x28000000, LENGTH = 0x800000" in script
    assert "(.rodata .rodata.*) } > CONSTANTS" in script
    header = (tmp_path / "cortex_m" / "lp_board.h").read_text()
    assert "#define LP_COUNTER_STATUS_BASE 0x58101000u" in header
    assert "#define LP_TICKS_PER_INSTRUCTION_NUM 512u" in header and "_DEN 125u" in header
    counter = (tmp_path / "cortex_m" / "lp_icount.c").read_text()
    assert "LP_CNTCV_HI" in counter and "void Timer0_Handler" not in counter


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("include_first", [True, False])
def test_the_make_fragment_leaves_the_bundle_default_goal(tmp_path: Path, include_first: bool) -> None:
    write_cortex_m_support(tmp_path, "tiny", profile_build_config("cortex-m4f"))
    host_rule = "all:\n\t@echo host build\n"
    include = "include cortex_m/qemu-test.mk\n"
    (tmp_path / "Makefile").write_text(include + host_rule if include_first else host_rule + include)
    dry_run = subprocess.run(["make", "-n", "-C", str(tmp_path)], capture_output=True, text=True, check=True)
    assert "echo host build" in dry_run.stdout
    assert "arm-none-eabi-gcc" not in dry_run.stdout


def test_running_a_missing_elf_is_an_error_not_a_failed_selftest(tmp_path: Path) -> None:
    with pytest.raises(QemuError, match="no ELF to run: .*absent.elf"):
        run_qemu(tmp_path / "absent.elf", profile_target("cortex-m4f").board, timeout_s=10)


def test_ticks_per_instruction_follow_from_the_timer_clock_and_the_icount_shift() -> None:
    assert ticks_per_instruction(BOARDS["mps2-an386"]) == Fraction(128 * 25, 1000)  # 128 ns at 25 MHz
    assert ticks_per_instruction(BOARDS["mps2-an505"]) == Fraction(128 * 20, 1000)  # 128 ns at 20 MHz
    slow = Board("slow", "cortex-m4", MemoryRegion(0, 1), MemoryRegion(0, 1), 0x40000000, 1_000_000, 8, 0x40004000)
    with pytest.raises(ValueError, match="slow: 0.128 timer ticks per instruction"):
        ticks_per_instruction(slow)
