"""No emulated guest gets a capability on the host: a self-test ELF that asks QEMU's semihosting for the host's
shell (SYS_SYSTEM) or files (SYS_OPEN/SYS_WRITE) gets a fault, not the host, in our runs and in the shipped
bundle's `make qemu-test` and CMake target alike, and is reported as a failure (issue 26, section 1).

The guest's only channel is the board's UART0; it ends with its exit marker and a system reset. The hostile
self-tests are built here, from a hand-made bundle whose self-test would otherwise pass.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import example_model, profile_build_config, profile_target, writable_copy
from emulator.boards import BOARDS, EXIT_MARKER, FAULT_EXIT_CODES
from emulator.qemu import QemuError, QemuTimeoutError, qemu_command, run_qemu
from packager.c_text import c_string
from backends.cortex_m.bundle_files import SELFTEST_ELF
# test_cortex_m_qemu skips (under CI: fails) this module too when the cross toolchain or QEMU is missing
from test_cortex_m_qemu import RUN_TIMEOUT_S, build_tiny, configure_tiny_cmake, write_tiny_bundle
from test_selftest_can_fail import copy_bundle

# ARM semihosting: `bkpt 0xAB` with the operation in r0 and its argument block in r1. Under `qemu -semihosting`
# SYS_SYSTEM (0x12) runs a host command, SYS_OPEN (0x01, mode 4 = "w"), SYS_WRITE (0x05) and SYS_CLOSE (0x02)
# write a host file.
_SEMIHOSTING_CALLS = """\
#include <stdint.h>
static int32_t hostile_semihost(uint32_t operation, const void *block)
{
  register uint32_t r0 __asm__("r0") = operation;
  register const void *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return (int32_t)r0;
}

static void hostile_reach_the_host(void)
{
  static const char command[] = COMMAND;
  static const char path[] = PATH;
  static const char text[] = "written by the guest\\n";
  const uint32_t system_block[2] = {(uint32_t)(uintptr_t)command, sizeof command - 1u};
  const uint32_t open_block[3] = {(uint32_t)(uintptr_t)path, 4u, sizeof path - 1u};
  int32_t handle;
  (void)hostile_semihost(0x12u, system_block);
  handle = hostile_semihost(0x01u, open_block);
  {
    const uint32_t write_block[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)text, sizeof text - 1u};
    const uint32_t close_block[1] = {(uint32_t)handle};
    (void)hostile_semihost(0x05u, write_block);
    (void)hostile_semihost(0x02u, close_block);
  }
}

"""


def hostile_selftest(selftest_c: str, folder: Path) -> str:
    """`selftest_c` whose main first asks semihosting to run `touch FOLDER/system-ran` and to write
    FOLDER/written: the rest of the self-test (its comparisons, its PASS) is left as it was."""
    calls = (_SEMIHOSTING_CALLS.replace("COMMAND", c_string(f"touch {folder / 'system-ran'}"))
             .replace("PATH", c_string(str(folder / "written"))))
    assert selftest_c.count("int main(void)\n{\n") == 1
    return selftest_c.replace("int main(void)\n{\n", calls + "int main(void)\n{\n  hostile_reach_the_host();\n")


def host_files(folder: Path) -> list[Path]:
    return [path for path in (folder / "system-ran", folder / "written") if path.exists()]


def hostile_bundle(out: Path, host: Path, profile: str = "cortex-m4f"):
    """A hand-made bundle for `profile` (its outputs match the reference) whose self-test reaches for `host`."""
    from packager import write_bundle

    bundle = replace(copy_bundle([("float32", [1.0, 2.0], [1.0, 2.0])]), config=profile_build_config(profile))
    write_bundle(out, bundle)
    selftest = out / "selftest.c"
    selftest.write_text(hostile_selftest(selftest.read_text(), host))
    return bundle


def test_a_selftest_that_calls_semihosting_reaches_nothing_on_the_host_and_fails(tmp_path: Path) -> None:
    from packager.build import build_bundle, selftest_bundle

    host = tmp_path / "host"
    host.mkdir()
    bundle = hostile_bundle(tmp_path / "out", host)
    build_bundle(tmp_path / "out", bundle.config)
    result, _ = selftest_bundle(tmp_path / "out", bundle)
    assert host_files(host) == []
    assert not result.passed
    assert result.problem == "ended with a HardFault before its verdict", result.output
    assert "lp: HardFault" in result.output  # semihosting's breakpoint, with no debugger, is a fault


@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m55"])  # an MPS2 board and the SSE-300 one
def test_the_shipped_make_qemu_test_gives_the_guest_no_host_access_and_fails(tmp_path: Path, profile: str) -> None:
    host = tmp_path / "host"
    host.mkdir()
    hostile_bundle(tmp_path / "out", host, profile)
    run = subprocess.run(["make", "-s", "qemu-test"], cwd=tmp_path / "out", capture_output=True, text=True,
                         timeout=300)
    assert host_files(host) == []
    assert run.returncode != 0, run.stdout + run.stderr
    assert "lp: HardFault" in run.stdout and f'did not end with "{EXIT_MARKER}0"' in run.stderr


@pytest.mark.slow
def test_the_shipped_cmake_qemu_test_gives_the_guest_no_host_access_and_fails(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    target = profile_target("cortex-m4f")
    write_tiny_bundle(tmp_path, target)
    selftest = tmp_path / "selftest.c"
    selftest.write_text(hostile_selftest(selftest.read_text(), host))
    build = configure_tiny_cmake(tmp_path)
    run = subprocess.run(["cmake", "--build", str(build), "--target", "qemu-test"], capture_output=True, text=True)
    assert host_files(host) == []
    assert run.returncode != 0 and "lp: HardFault" in run.stdout, run.stdout + run.stderr


def test_our_qemu_command_gives_no_semihosting_no_network_and_runs_sandboxed() -> None:
    for board in BOARDS.values():
        command = qemu_command(board)
        assert not any("semihosting" in word for word in command), command
        assert command[command.index("-nic") + 1] == "none" and "-nodefaults" in command
        assert "spawn=deny" in command[command.index("-sandbox") + 1] and "-no-reboot" in command


def test_the_shipped_build_files_run_no_semihosting_and_qemu_test_judges_the_uart(compiled, tmp_path: Path) -> None:
    bundle = writable_copy(compiled(example_model, "cortex-m4f"), tmp_path)
    build_files = [bundle.out_dir / name for name in ("Makefile", "CMakeLists.txt")] + [
        bundle.out_dir / "cortex_m" / name for name in ("qemu-test.mk", "CMakeLists.txt", "qemu-test.cmake",
                                                          "qemu-run.sh")]
    assert not [path for path in build_files if re.search(r"-semihosting|rdimon", path.read_text())]
    script = (bundle.out_dir / "cortex_m" / "qemu-run.sh").read_text()
    assert "-nic none" in script and "-sandbox" in script and "-no-reboot" in script
    dry_run = subprocess.run(["make", "-n", "qemu-test", "qemu-profile"], cwd=bundle.out_dir, capture_output=True,
                             text=True, check=True).stdout
    runs = [line for line in dry_run.splitlines() if "qemu-system-arm" in line]
    assert len(runs) == 2 and all(" sh 'cortex_m/qemu-run.sh' " in line for line in runs), runs  # QEMU only there
    passed = subprocess.run(["make", "-s", "qemu-test"], cwd=bundle.out_dir, capture_output=True, text=True,
                            timeout=300)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.endswith(f"selftest: PASS\n{EXIT_MARKER}0\n") and passed.stderr == ""
    profiled = subprocess.run(["make", "-s", "qemu-profile"], cwd=bundle.out_dir, capture_output=True, text=True,
                              timeout=300)
    assert profiled.returncode == 0 and "profile: call 0 " in profiled.stdout, profiled.stdout + profiled.stderr
    disassembly = subprocess.run(["arm-none-eabi-objdump", "-d", str(bundle.out_dir / SELFTEST_ELF)],
                                 capture_output=True, text=True, check=True).stdout
    assert not re.search(r"\sbkpt\s", disassembly)  # no semihosting call, nor any breakpoint, in what runs


def test_a_selftest_that_fails_makes_make_qemu_test_fail(compiled, tmp_path: Path) -> None:
    bundle = writable_copy(compiled(example_model, "cortex-m4f"), tmp_path)
    selftest = bundle.out_dir / "selftest.c"
    first_check = "  failed |= check_float(c, 0u"
    selftest.write_text(selftest.read_text().replace(first_check, "  failed = 1;\n" + first_check, 1))
    run = subprocess.run(["make", "-s", "qemu-test"], cwd=bundle.out_dir, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "selftest: FAIL" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("board_name", sorted(BOARDS))
def test_every_board_prints_on_its_uart0_and_ends_with_its_exit_marker(tmp_path: Path, board_name: str) -> None:
    """The UART0 addresses and the reset ending of emulator/boards.py, on the real emulator: the tiny self-test
    prints through UART0 only (nothing else reaches QEMU's stdout) and its status arrives in the marker."""
    target = next(profile_target(name) for name in ("cortex-m0plus", "cortex-m4f", "cortex-m7", "cortex-m33",
                                                    "cortex-m55")
                  if profile_target(name).board.name == board_name)
    result = run_qemu(build_tiny(tmp_path, target), target.board, RUN_TIMEOUT_S)
    assert result.exit_status == 0 and result.ending() == "exit status 0"
    assert result.stdout.endswith("selftest: PASS\n") and result.instructions, result.stdout


def test_a_program_that_resets_without_its_exit_marker_did_not_end(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    reset = "*(volatile uint32_t *)0xE000ED0Cu = 0x05FA0004u; for (;;) {}"
    result = run_qemu(build_tiny(tmp_path, target, probe=reset), target.board, RUN_TIMEOUT_S)
    assert result.exit_status is None and result.ending().startswith("no exit marker"), result.stdout


def test_a_locked_up_core_is_a_program_that_did_not_end(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    lockup = '__asm__ volatile("mov sp, %0\\n\\tudf #0" :: "r"(0xF0000000u));'  # no stack for the fault handler
    result = run_qemu(build_tiny(tmp_path, target, probe=lockup), target.board, RUN_TIMEOUT_S)
    assert result.exit_status is None and "Lockup" in result.ending(), result.stderr


def test_a_fault_names_itself_and_ends_with_its_status(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    result = run_qemu(build_tiny(tmp_path, target, probe='__asm__ volatile("udf #0");'), target.board, RUN_TIMEOUT_S)
    assert result.exit_status == FAULT_EXIT_CODES["UsageFault"] and result.stdout.endswith("\nlp: UsageFault\n")


def test_a_program_that_prints_without_end_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import emulator.qemu

    target = profile_target("cortex-m4f")
    elf = build_tiny(tmp_path, target, probe='for (;;) { printf("more\\n"); }')
    monkeypatch.setattr(emulator.qemu, "MAX_OUTPUT_BYTES", 4096)
    with pytest.raises(QemuError, match="printed more than 4,096 bytes"):
        run_qemu(elf, target.board, RUN_TIMEOUT_S)


def test_a_program_that_never_ends_times_out(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    with pytest.raises(QemuTimeoutError, match="within 2 s"):
        run_qemu(build_tiny(tmp_path, target, probe="for (;;) {}"), target.board, timeout_s=2)
