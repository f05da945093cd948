"""The helpers' unit tests' guards fault (tests/c/guarded_buffers.h, checked by tests/c/test_guarded_buffers.c): on
the host (AddressSanitizer), under QEMU on cortex-m4f (PMSAv7 MPU), cortex-m55 (PMSAv8-M MPU) and rv32imc (PMP), a
program's loads of its copies' bytes pass, and then a word loaded across a copy's end (from inside the buffer: QEMU
checks a sub-page MPU region at an access's first byte only, so a guard must begin on a page boundary) ends the run
before it prints "ok"; on cortex-m4f, so do one byte stored past the end and one byte loaded before the start (the
placement is the same C everywhere). Without this, a guard that did not fault would leave every helper's unit test
passing on an over-read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from c_checks import run_c_program_under_qemu, run_c_program_under_riscv_qemu, run_c_unit_tests
from emulator.tools import RISCV_TOOLS, missing_tools
from required_tools import require_tools

UNIT_TESTS = Path(__file__).resolve().parents[1] / "c"
SOURCE = UNIT_TESTS / "test_guarded_buffers.c"
HEADER = "guarded_buffers.h"
WORD_PAST_END, BYTE_PAST_END, BYTE_BEFORE_START = 1, 2, 3
"""The program's access outside a copy (its GUARDED_ACCESS)."""
ACCESS_NAMES = {WORD_PAST_END: "word-past-end", BYTE_PAST_END: "byte-past-end", BYTE_BEFORE_START: "byte-before-start"}
CASES = [("host", WORD_PAST_END), ("cortex-m4f", WORD_PAST_END), ("cortex-m4f", BYTE_PAST_END),
         ("cortex-m4f", BYTE_BEFORE_START), ("cortex-m55", WORD_PAST_END), ("rv32imc", WORD_PAST_END)]


def run(tmp_path: Path, platform: str, access: int) -> tuple[bool, str]:
    """Whether the program with `access` passed on `platform` (printed "ok"), and what it printed."""
    shutil.copyfile(UNIT_TESTS / HEADER, tmp_path / HEADER)
    if platform == "host":
        result = run_c_unit_tests(SOURCE, tmp_path, tmp_path, (f"-DGUARDED_ACCESS={access}",))
        return result.returncode == 0 and "\nok " in result.stdout, result.stdout + result.stderr
    text = f"#define GUARDED_ACCESS {access}\n" + SOURCE.read_text()
    if platform == "rv32imc":
        require_tools(RISCV_TOOLS)
        (tmp_path / "guard_check.c").write_text(text)
        qemu = run_c_program_under_riscv_qemu(tmp_path, platform, tmp_path / "guard_check.c")
    else:
        if missing_tools():
            pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
        qemu = run_c_program_under_qemu(tmp_path, platform, {"selftest.c": text})
    return qemu.exit_status == 0 and "\nok " in qemu.stdout, qemu.ending() + "\n" + qemu.stdout


@pytest.mark.parametrize(("platform", "access"), CASES,
                         ids=[f"{platform}-{ACCESS_NAMES[access]}" for platform, access in CASES])
def test_a_guarded_copy_faults_on_one_byte_outside_it(tmp_path: Path, platform: str, access: int) -> None:
    passed, output = run(tmp_path, platform, access)
    assert output.startswith("inside ") or "\ninside " in output, output  # the loads inside passed
    assert not passed, output
