"""scripts/install_deps.sh on a machine that already has the packages (Cortex-M and RISC-V): a loud, idempotent no-op."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from emulator.tools import RISCV_TOOLS, missing_tools

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_deps.sh"


@pytest.mark.skipif(bool(missing_tools() + missing_tools(RISCV_TOOLS)) and not os.environ.get("CI"),
                    reason="the packages are not installed here: running the script would install them")
def test_install_deps_is_safe_to_run_twice_and_reports_the_tool_versions() -> None:
    first, second = (subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
                     for _ in range(2))
    for run in (first, second):
        assert run.returncode == 0, run.stderr
        assert "arm-none-eabi-gcc" in run.stdout and "QEMU emulator version" in run.stdout
        assert "riscv64-unknown-elf-gcc" in run.stdout  # the RISC-V cross compiler (and its QEMU) too
    assert "installing" not in second.stdout  # nothing is missing the second time round
