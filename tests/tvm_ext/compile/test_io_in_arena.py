"""`--io-in-arena` (`tvm_ext.compile(..., io_in_arena=True)`): the model's inputs and outputs are planned into the
arena. The header gives their places, the run functions take no I/O arguments, the self-test writes its input
into the arena and reads the output from it (strict warnings, sanitizers and the poisoned gaps included, on the
host and on cortex-m4f under QEMU), and the total RAM is below the default bundle's arena plus its I/O."""

from __future__ import annotations

import json

import pytest

import tvm_ext
from c_checks import strict_sanitized_selftest
from conftest import example_model, run_cli

HELLO_WORLD = "tflm/hello_world_int8.tflite"


def io_bytes(bundle) -> int:
    """The bytes of the model's inputs and outputs."""
    plan = bundle.plan
    return sum(plan.tensors[name].nbytes for name in (*plan.inputs, *plan.outputs))


def compile_in_arena(model, tmp_path, target: str = "lowpower"):
    return tvm_ext.compile(model, target=target, out=tmp_path / f"in_arena_{target}", io_in_arena=True, jobs=1)


@pytest.mark.parametrize("model", [example_model, HELLO_WORLD], ids=["example", "hello_world_int8"])
def test_io_in_arena_bundle_passes_strictly_with_poisoned_gaps_in_less_ram(model, compiled, shared_models, tmp_path):
    default = compiled(model)
    path = model(tmp_path) if callable(model) else shared_models / model
    bundle = compile_in_arena(path, tmp_path)
    m, M = bundle.plan.model, bundle.plan.model.upper()
    assert bundle.selftest.passed
    assert bundle.arena_bytes <= default.arena_bytes + io_bytes(default)
    assert (bundle.ram.input_bytes, bundle.ram.output_bytes) == (0, 0)
    assert bundle.total_ram_bytes == bundle.arena_bytes + bundle.ram.stack_bytes
    assert bundle.total_ram_bytes < default.total_ram_bytes == (default.arena_bytes + io_bytes(default)
                                                                + default.ram.stack_bound.bytes)

    header = (bundle.out_dir / f"{m}.h").read_text()
    assert f"int {m}_run(void);" in header
    assert f"int {m}_run_with_arena(uint8_t* arena, size_t arena_bytes);" in header
    assert f"* {m}_input0(void);" in header and f"* {m}_output0(void);" in header
    offsets = {name: bundle.memory.offsets[bundle.plan.storage_of(name)]
               for name in (bundle.plan.inputs[0], bundle.plan.outputs[0])}
    assert f"#define {M}_INPUT0_OFFSET {offsets[bundle.plan.inputs[0]]}u" in header
    assert f"#define {M}_OUTPUT0_OFFSET {offsets[bundle.plan.outputs[0]]}u" in header
    arena = json.loads((bundle.out_dir / "manifest.json").read_text())["arena"]
    assert (arena["io_in_arena"], arena["total_ram_bytes"]) == (True, bundle.arena_bytes)

    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{M}_POISON_ARENA")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "selftest: PASS" in proc.stdout


@pytest.mark.parametrize("model", [example_model, HELLO_WORLD], ids=["example", "hello_world_int8"])
def test_io_in_arena_self_test_passes_on_cortex_m4f_under_qemu(model, shared_models, tmp_path):
    path = model(tmp_path) if callable(model) else shared_models / model
    bundle = compile_in_arena(path, tmp_path, "cortex-m4f")
    assert bundle.selftest.passed
    assert bundle.selftest.where != "host" and bundle.selftest.instructions > 0  # QEMU's board ran it


def test_the_cli_flag_reports_total_ram_and_the_default_keeps_its_api(compiled, tmp_path, cli_in_process):
    """The summary line gives the total RAM and its parts (no I/O outside the arena with --io-in-arena), and
    the default bundle keeps the caller's I/O buffers: its run functions take them, no offsets, no manifest key."""
    proc = cli_in_process("--example", "--io-in-arena", "--jobs", "1", "-o", str(tmp_path / "cli"))
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    arena = json.loads((tmp_path / "cli" / "manifest.json").read_text())["arena"]["bytes"]
    stack = json.loads((tmp_path / "cli" / "manifest.json").read_text())["headroom"]["stack_bound"]
    assert stack["frames_bytes"] == 1_024  # lowpower's stack_bound_bytes, + the example's accumulators
    assert f"arena {arena:,} B" in summary and (
        f"total RAM {arena + stack['bytes']:,} B (arena {arena:,} B + inputs 0 B + outputs 0 B + state 0 B + stack "
        f"{stack['bytes']:,} B counted: frames 1,024 B (the profile's stack_bound_bytes) + "
        f"{stack['kernel_arrays_bytes']:,} B of the kernel {stack['kernel']}'s stack arrays)") in summary

    default = compiled(example_model)
    m = default.plan.model
    header = (default.out_dir / f"{m}.h").read_text()
    assert f"int {m}_run(const float* input, float* output);" in header
    assert "_OFFSET" not in header and f"{m}_input0" not in header
    assert "io_in_arena" not in (default.out_dir / "manifest.json").read_text()
    assert default.ram.input_bytes + default.ram.output_bytes == io_bytes(default)


def test_io_in_arena_with_a_scheduler_is_refused_in_one_line(tmp_path):
    proc = run_cli(str(tmp_path / "model.tflite"), "--io-in-arena", "--scheduler", "tcp://127.0.0.1:9",
                   "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "tvm_ext.compile: error: model.tflite: --io-in-arena is not available with --scheduler; compile locally"]
