"""packager.cortex_m without the cross tools: stack-peak arithmetic, .su parsing, lookups, the Make fragment."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from packager.cortex_m import QemuError, cortex_m_target, run_qemu, stack_peak, write_cortex_m_support
from packager.cortex_m.sizes import StackFrame, read_stack_frames, section_kind


def frames(**bytes_by_function: int) -> dict[str, StackFrame]:
    return {name: StackFrame(name, size, dynamic=False) for name, size in bytes_by_function.items()}


def test_stack_peak_is_the_deepest_sum_of_frames_along_a_call_chain() -> None:
    graph = {"run": {"conv", "dense"}, "conv": {"im2col"}, "dense": set(), "im2col": set()}
    peak = stack_peak("run", frames(run=24, conv=16, im2col=32, dense=64), graph)
    assert peak.bytes == 24 + 64  # run -> dense (88) beats run -> conv -> im2col (72)
    assert peak.chain == ("run", "dense")
    assert peak.exact


def test_stack_peak_counts_functions_without_a_frame_as_zero_and_says_so() -> None:
    graph = {"run": {"kernel"}, "kernel": {"expf"}, "expf": {"__math_oflow"}}
    peak = stack_peak("run", frames(run=8, kernel=40), graph)
    assert peak.bytes == 48
    assert peak.unknown_functions == ("expf",)  # not descended into
    assert not peak.exact


def test_stack_peak_marks_dynamic_frames_as_lower_bounds() -> None:
    peak = stack_peak("run", {"run": StackFrame("run", 32, dynamic=True)}, {"run": set()})
    assert (peak.bytes, peak.dynamic_functions, peak.exact) == (32, ("run",), False)


def test_stack_peak_refuses_recursion_and_names_the_cycle() -> None:
    with pytest.raises(ValueError, match="run -> a -> b -> a"):
        stack_peak("run", frames(run=8, a=8, b=8), {"run": {"a"}, "a": {"b"}, "b": {"a"}})


def test_stack_peak_names_a_root_that_is_not_in_the_elf() -> None:
    with pytest.raises(ValueError, match="model_run"):
        stack_peak("model_run", {}, {"main": set()})


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
    assert section_kind(".debug_info", Path("x.elf")) == "none"
    with pytest.raises(ValueError, match=r"x\.elf: section \.ram_func"):
        section_kind(".ram_func", Path("x.elf"))


def test_unknown_target_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="cortex-m55.*cortex-m0plus, cortex-m3, cortex-m33, cortex-m4f, cortex-m7"):
        cortex_m_target("cortex-m55")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("include_first", [True, False])
def test_the_make_fragment_leaves_the_bundle_default_goal(tmp_path: Path, include_first: bool) -> None:
    write_cortex_m_support(tmp_path, "tiny", cortex_m_target("cortex-m4f"))
    host_rule = "all:\n\t@echo host build\n"
    include = "include cortex_m/qemu-test.mk\n"
    (tmp_path / "Makefile").write_text(include + host_rule if include_first else host_rule + include)
    dry_run = subprocess.run(["make", "-n", "-C", str(tmp_path)], capture_output=True, text=True, check=True)
    assert "echo host build" in dry_run.stdout
    assert "arm-none-eabi-gcc" not in dry_run.stdout


def test_running_a_missing_elf_is_an_error_not_a_failed_selftest(tmp_path: Path) -> None:
    with pytest.raises(QemuError, match="no ELF to run: .*absent.elf"):
        run_qemu(tmp_path / "absent.elf", cortex_m_target("cortex-m4f").board, timeout_s=10)
