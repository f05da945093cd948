"""The compile's own self-test of a RISC-V profile runs on QEMU's RISC-V virt machine (backends.riscv.runner),
as a Cortex-M profile's runs on its MPS2 board: the verdict is the board's, the manifest records the board,
the instructions per inference, the bytes by kind and the run call's stack under the key "riscv" (none under
"cortex_m"), the RAM check counts the measured stack, and report.md has each call's instructions from the
profiling build. Issue 30.

Needs riscv64-unknown-elf-gcc with picolibc and qemu-system-riscv32 (scripts/install_deps.sh installs them).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import writable_copy
from emulator.tools import RISCV_TOOLS
from required_tools import require_tools

require_tools(RISCV_TOOLS)

PROFILES = ["rv32imc", "rv32imafc"]
MODELS = ["tflm/hello_world_int8.tflite", "tflm/hello_world_float.tflite"]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("model", MODELS, ids=lambda m: Path(m).stem)
def test_the_compile_self_tests_a_riscv_profile_on_virt_and_records_its_measurements(compiled, profile: str,
                                                                                     model: str) -> None:
    bundle = compiled(model, profile)
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    facts = manifest["riscv"]
    assert "cortex_m" not in manifest
    assert manifest["selftest"]["where"] == "virt" and facts["target"] == profile and facts["board"] == "virt"
    assert facts["selftest_exit_code"] == 0
    assert facts["instructions_per_inference"] == bundle.selftest.instructions > 0
    assert facts["arena_bytes"] == bundle.arena_bytes
    assert facts["weights_bytes"] >= bundle.weight_bytes > 0
    assert facts["code_bytes"] > facts["bundle_code_bytes"] > 0
    assert facts["flash_bytes"] == facts["code_bytes"] + facts["weights_bytes"] + facts["data_bytes"]
    assert facts["stack_peak_chain"][0] == f"{bundle.plan.model}_run" and facts["stack_peak_bytes"] > 0
    # The RAM check counts the stack the board's build measured, not the profile's bound.
    assert manifest["headroom"]["stack_source"] == "measured"
    assert manifest["headroom"]["stack_bytes"] == facts["stack_peak_bytes"] == bundle.ram.stack_bytes
    # Each call's instructions, from the profiling build of the run function.
    calls = manifest["layer_report"]["calls"]
    assert calls and all(call["instructions"] > 0 for call in calls)
    assert sum(call["instructions"] for call in calls) < facts["instructions_per_inference"]
    report = (bundle.out_dir / "report.md").read_text()
    assert "riscv/*_model_profiled.c" in report and "cortex_m" not in report
    assert not (bundle.out_dir / "build-riscv").exists()  # the cross build's intermediates are not shipped


def test_the_bundle_runs_its_own_selftest_on_virt_with_make(compiled, tmp_path: Path) -> None:
    """`make qemu-test` (riscv/qemu-test.mk, riscv/qemu-run.sh) in the shipped folder: the profile's compiler,
    the board, the sandbox; `make check` is that test."""
    bundle = writable_copy(compiled("tflm/hello_world_int8.tflite", "rv32imc"), tmp_path)
    run = subprocess.run(["make", "-s", "check"], cwd=bundle.out_dir, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "selftest: PASS" in run.stdout and run.stdout.rstrip().endswith("lp: exit 0")
    assert "instructions per inference (QEMU -icount, not cycles)" in run.stdout
