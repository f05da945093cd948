"""The compile's own self-test of a RISC-V profile runs on QEMU's RISC-V virt machine (backends.riscv.runner),
as a Cortex-M profile's runs on its MPS2 board: the verdict is the board's, the manifest records the board,
the instructions per inference, the bytes by kind and the run call's stack under the key "riscv" (none under
"cortex_m"), the RAM check counts the measured stack, and report.md has each call's instructions from the
profiling build. Issue 30.

Needs riscv64-unknown-elf-gcc with picolibc and qemu-system-riscv32 (scripts/install_deps.sh installs them).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import profile_build_config, writable_copy
from emulator.tools import RISCV_BINUTILS_PREFIX, RISCV_TOOLS
from packager.c_text import c_string
from required_tools import require_tools
from test_riscv_qemu import SEMIHOSTING_SYSTEM
from test_selftest_can_fail import copy_bundle

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
    # The flash check counts the bundle's objects the board's build measured: code (RISC-V's .rodata too), weights.
    flash = facts["bundle_flash"]
    # the weights one struct (packager.weights_block): each array padded to a word in it
    assert flash["code"] >= facts["bundle_code_bytes"]
    assert bundle.weight_bytes <= flash["weights"] < bundle.weight_bytes + 4 * len(bundle.plan.constants())
    assert manifest["headroom"]["flash_counted"] == "measured"
    assert manifest["headroom"]["flash_used_bytes"] == sum(flash.values()) == bundle.flash.total_bytes
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


def hostile_riscv_selftest(selftest_c: str, touched: Path) -> str:
    """`selftest_c` whose main first asks RISC-V semihosting (SYS_SYSTEM) to run `touch TOUCHED`; the rest of the
    self-test (its comparisons, its PASS) is left as it was."""
    asks = SEMIHOSTING_SYSTEM.replace("COMMAND", c_string(f"touch {touched}"))
    assert selftest_c.count("int main(void)\n{\n") == 1
    return selftest_c.replace("int main(void)\n{\n", "int main(void)\n{\n" + asks + "\n")


def test_a_guest_that_calls_semihosting_reaches_nothing_and_fails_on_the_board(tmp_path: Path) -> None:
    """The packager's emulated self-test of a RISC-V profile (the runner, emulator.qemu's sandboxed command) and
    the shipped `make qemu-test` (riscv/qemu-run.sh) give the guest no host: its semihosting call is a
    breakpoint trap, reported as the board's failure."""
    from packager import write_bundle
    from packager.build import build_bundle, selftest_bundle

    touched = tmp_path / "system-ran"
    out = tmp_path / "out"
    bundle = replace(copy_bundle([("float32", [1.0, 2.0], [1.0, 2.0])]), config=profile_build_config("rv32imc"))
    write_bundle(out, bundle)
    (out / "selftest.c").write_text(hostile_riscv_selftest((out / "selftest.c").read_text(), touched))
    build_bundle(out, bundle.config)
    result, measured = selftest_bundle(out, bundle)
    assert not touched.exists()
    assert not result.passed and result.where == "virt" and measured["board"] == "virt"
    assert result.problem == "ended with a trap before its verdict", result.output
    assert "lp: trap mcause=3 " in result.output  # the semihosting sequence's ebreak, with no debugger
    script = (out / "riscv" / "qemu-run.sh").read_text()
    assert "-nic none" in script and "-sandbox" in script and "-nodefaults" in script
    assert not re.search(r"-semihosting", script + (out / "riscv" / "qemu-test.mk").read_text())
    run = subprocess.run(["make", "-s", "qemu-test"], cwd=out, capture_output=True, text=True, timeout=300)
    assert not touched.exists()
    assert run.returncode != 0 and "lp: trap mcause=3 " in run.stdout, run.stdout + run.stderr


def test_the_stack_reading_of_riscv_code_agrees_with_gcc_on_every_compiled_function(compiled, tmp_path: Path) -> None:
    """emulator.stack's RISC-V reading (RISCV_CODE: `addi sp,sp,-N`, which objdump may print as `add`) gives
    each function GCC's -fstack-usage frame where GCC gave one, so the frames it estimates for libgcc's
    soft-float helpers (rv32imc has no FPU) are read the same way, and the peak's chain reaches them. rv32imc
    builds with -msave-restore: a frame's save area set up by libgcc's `__riscv_save_N` is its caller's, as GCC
    counts it, and the millicode is no callee; GCC's 16 bytes for a function whose code reserves none (its one
    call became a tail call after GCC counted the save area) is GCC's over-estimate, the only difference: taken only
    where the function's code calls no `__riscv_save_N` (else 16 against 0 is a save area our reading missed)."""
    from emulator.stack import RISCV_CODE, disassemble, read_stack_frames
    from emulator.tools import tool_output

    bundle = writable_copy(compiled("tflm/hello_world_float.tflite", "rv32imc"), tmp_path)
    elf = profile_build_config("rv32imc").emulated.build(bundle.out_dir)
    functions = disassemble(elf, RISCV_CODE)
    frames = read_stack_frames(sorted(elf.parent.rglob("*.su")))
    compared = {name: (frame.bytes, functions[name].frame.bytes) for name, frame in frames.items() if name in functions}
    saving: set[str] = set()  # the functions whose code calls a `__riscv_save_N`
    function = ""
    for line in tool_output(RISCV_CODE.tool("objdump"), "-d", "--no-show-raw-insn", str(elf)).splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if header:
            function = header.group(1)
        elif "<__riscv_save_" in line:
            saving.add(function)
    assert saving & set(compared), sorted(saving)  # the millicode is read, not only absent
    assert len(compared) > 10 and all(gcc == ours or ((gcc, ours) == (16, 0) and name not in saving)
                                      for name, (gcc, ours) in compared.items()), compared
    assert any(gcc == ours > 16 for gcc, ours in compared.values()), compared  # save areas read, not only 0 == 0
    assert not any(name.startswith("__riscv_") for function in functions.values() for name in function.callees)
    assert functions["__mulsf3"].frame.bytes > 0 and not functions["__mulsf3"].frame.dynamic
    facts = json.loads((bundle.out_dir / "manifest.json").read_text())["riscv"]
    assert set(facts["stack_estimated_functions"]) & {"__mulsf3", "__addsf3"}


@pytest.mark.parametrize(("mnemonic", "operands", "pushed"), [
    ("addi", "sp,sp,-48", 48), ("add", "sp,sp,-32", 32), ("c.addi16sp", "sp,-64", 64), ("addi", "sp,sp,32", 0),
    ("add", "sp,sp,a5", None), ("sub", "sp,sp,a5", None), ("add", "sp,a5,sp", None), ("sw", "ra,28(sp)", 0),
    ("mv", "s0,sp", 0), ("addi", "s0,sp,48", 0),
])
def test_riscv_frame_instructions_are_read(mnemonic: str, operands: str, pushed: int | None) -> None:
    from emulator.stack import riscv_pushed_bytes

    assert riscv_pushed_bytes(mnemonic, operands) == pushed


@pytest.mark.parametrize(("function", "frame"), [
    ("__riscv_save_0", 16), ("__riscv_save_3", 16), ("__riscv_save_4", 32), ("__riscv_save_10", 48),
    ("__riscv_save_12", 64), ("__riscv_restore_12", 0), ("__riscv_restore_0", 0), ("memcpy", None),
    ("__riscv_save_12x", None),
])
def test_riscv_millicode_frames_are_their_callers(function: str, frame: int | None) -> None:
    """-msave-restore's save routines set up 4 (N + 1) bytes of their caller's frame in 16-byte steps (libgcc's
    riscv/save-restore.S for ilp32), restores none; other functions are callees."""
    from emulator.stack import riscv_millicode_frame

    assert riscv_millicode_frame(function) == frame


@pytest.mark.parametrize("profile", PROFILES)
def test_the_run_function_passes_every_weight_from_one_base_register(compiled, profile: str) -> None:
    """A RISC-V bundle's weights are the members of one const struct (packager.weights_block) and its run function
    passes each as that struct's one base register plus the member's offset: its object builds the address of one
    weights symbol, the struct's, once (auipc+addi against its relocation), where it built each array's per argument
    (8 B each: 6 in hello_world_int8)."""
    bundle = compiled("tflm/hello_world_int8.tflite", profile)
    m = bundle.plan.model
    model_c = (bundle.out_dir / f"{m}_model.c").read_text()
    assert sorted(set(re.findall(r"weights->(\w+)", model_c))) == sorted(t.name for t in bundle.plan.constants())
    assert f"const struct {m}_weights_block {m}_weights = {{" in (bundle.out_dir / f"{m}_weights.c").read_text()
    dump = subprocess.run([f"{RISCV_BINUTILS_PREFIX}objdump", "-dr",
                           str(bundle.library)], capture_output=True, text=True, check=True).stdout
    model_code = dump[dump.index(f"{m}_model.o:"):dump.index(f"{m}_weights.o:")]
    built = re.findall(r"R_RISCV_PCREL_HI20\s+(\w+)", model_code)
    assert [symbol for symbol in built if not symbol.endswith("_arena")] == [f"{m}_weights"] * 2, built  # run, and
    # run_with_arena (run inlines it)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_model_of_few_macs_keeps_plain_loops_and_float_one_accumulator(compiled, profile: str) -> None:
    """hello_world_int8's 288 MACs save less than one MAC helper's copy costs (backends.riscv.schedules.
    HELPER_MIN_MACS): its kernels are TVM's loops, no helper call, their weights as TFLite stores them (int8 [O, K],
    not paired into int32 words). hello_world_float's kernels of 16 to 256 MACs keep one accumulator: on rv32imc,
    whose float MACs are library calls, below FLOAT_TILE_MIN_MACS; on rv32imafc's FPU, below FPU_FLOAT_TILE_MIN_MACS
    (the tile of eight saves at most 3.5 instructions a MAC there: 256 MACs do not pay its 120 B and more)."""
    int8 = compiled("tflm/hello_world_int8.tflite", profile)
    kernels = (int8.out_dir / "hello_world_int8_kernels.c").read_text()
    assert "_mac_" not in kernels and "_rows_" not in kernels and "_tiles_" not in kernels
    assert re.findall(r"const (\w+)\* weights", kernels) == ["int8_t"] * 3
    assert all(int8.plan.tensors[f"l{layer}_weights"].dtype == "int8" for layer in range(3))
    floats = (compiled("tflm/hello_world_float.tflite", profile).out_dir / "hello_world_float_kernels.c").read_text()
    assert "_ptr[8];" not in floats and "_ptr[1];" in floats
