"""The fit check counts everything one inference holds in SRAM, not the arena alone: the arena, the inputs and
outputs outside it, the state, and the run call's stack (measured on the emulated board, else counted: the
profile's `stack_bound_bytes` for the frames + the largest local arrays one kernel declares); a refusal names every part and the excess (exit 2, nothing left behind).

Before: a board whose SRAM held kws_ref_model's arena (10,048 B) but not its arena, input, output and stack
(10,762 B) accepted it; the check compared the arena alone with the SRAM."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import target
import tvm_ext
from c_checks import stack_array_bytes
from conftest import models_dir
from emulator.tools import missing_tools
from tvm_ext.compile import DoesNotFitError

MODEL = "hello_world_int8"

needs_qemu = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")


def model_path() -> Path:
    return models_dir() / "tflm" / f"{MODEL}.tflite"


def board(tmp_path: Path, base: str, sram_bytes: int) -> str:
    """A profile file that is `base` with `sram_bytes` of SRAM, named my-board."""
    path = tmp_path / f"board_{base}_{sram_bytes}.toml"
    path.write_text(f'extends = "{base}"\nname = "my-board"\nsram_bytes = {sram_bytes}\n')
    return str(path)


@needs_qemu
def test_the_emulated_bundle_counts_every_part_and_its_measured_stack(compiled):
    bundle = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus")
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    ram = bundle.ram
    assert ram.stack_source is target.StackSource.MEASURED
    assert ram.stack_bytes == manifest["cortex_m"]["stack_peak_bytes"] > 0
    assert (ram.arena_bytes, ram.input_bytes, ram.output_bytes, ram.state_bytes) == (
        bundle.arena_bytes, 1, 1, 0)  # hello_world: one int8 in, one int8 out
    assert bundle.total_ram_bytes == ram.total_bytes == manifest["headroom"]["total_ram_bytes"]
    assert manifest["headroom"]["sram_headroom_bytes"] == 32_768 - ram.total_bytes
    assert manifest["headroom"]["stack_source"] == "measured"
    assert ram.stack_bytes <= manifest["headroom"]["stack_bound"]["bytes"]  # the --no-build count bounds it


@needs_qemu
def test_a_board_one_byte_short_of_the_whole_ram_is_refused_after_its_stack_is_measured(compiled, tmp_path,
                                                                                        cli_in_process):
    ram = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus").ram
    short = ram.total_bytes - 1
    out = tmp_path / "out"
    proc = cli_in_process(str(model_path()), "--target", board(tmp_path, "cortex-m0plus", short), "-o", str(out),
                          "--jobs", "1")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"tvm_ext.compile: error: {MODEL}: RAM needs {ram.total_bytes:,} B of SRAM (arena {ram.arena_bytes:,} B + "
        f"inputs 1 B + outputs 1 B + state 0 B + stack {ram.stack_bytes:,} B measured on the emulated board) but "
        f"my-board has {short:,} B (1 B over)"]
    assert "[tvm_ext] self-test" in proc.stdout  # the stack is known only once the emulated build ran
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [Path(board(tmp_path, "cortex-m0plus",
                                                                                      short)).name]


@needs_qemu
def test_a_board_short_of_the_ram_without_the_stack_is_refused_before_the_build(compiled, tmp_path):
    ram = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus").ram
    short = ram.total_bytes - ram.stack_bytes - 1
    stages: list[str] = []
    with pytest.raises(DoesNotFitError) as error:
        tvm_ext.compile(model_path(), board(tmp_path, "cortex-m0plus", short), tmp_path / "out", jobs=1,
                        log=lambda line: stages.append(line.split()[0]), patches="off")
    assert stages[-1] == "planning"
    assert str(error.value).endswith(
        f"+ state 0 B; stack not yet counted: measured after the build) but my-board has {short:,} B (1 B over)")


def test_a_host_profile_counts_its_stack_bound_and_its_kernels_stack_arrays(compiled, tmp_path):
    bundle = compiled(f"tflm/{MODEL}.tflite")
    ram = bundle.ram
    arrays = stack_array_bytes((bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text())
    deepest = max(arrays, key=arrays.get)
    assert arrays[deepest] > 0  # hello_world's FC kernels keep accumulators on the stack
    assert ram.stack_bound == target.StackBound(1_024, arrays[deepest], deepest)
    assert (ram.stack_source, ram.stack_bytes) == (target.StackSource.BOUND, 1_024 + arrays[deepest])
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["headroom"]["stack_bound"] == {"bytes": ram.stack_bytes, "frames_bytes": 1_024,
                                                   "kernel_arrays_bytes": arrays[deepest], "kernel": deepest}
    short = ram.total_bytes - 1
    with pytest.raises(DoesNotFitError) as error:
        tvm_ext.compile(model_path(), board(tmp_path, "lowpower", short), tmp_path / "out", jobs=1, patches="off")
    assert str(error.value) == (
        f"{MODEL}: RAM needs {ram.total_bytes:,} B of SRAM (arena {ram.arena_bytes:,} B + inputs 1 B + outputs 1 B + "
        f"state 0 B + stack {ram.stack_bytes:,} B counted: frames 1,024 B (the profile's stack_bound_bytes) + "
        f"{arrays[deepest]:,} B of the kernel {deepest}'s stack arrays) but my-board has {short:,} B (1 B over)")
    assert not (tmp_path / "out").exists()
