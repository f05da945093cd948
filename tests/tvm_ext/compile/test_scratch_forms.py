"""Which kernels take their form with less scratch (`tvm_ext.compile.scratch_forms`), on hand-made plans: only a
kernel whose scratch sets the arena, and of several that each lower it only those the arena needs; the estimate
of the instructions they add counts every call's MACs (issue 31)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import tvm_ext
from conftest import models_dir
from backends.backend import ScratchFreeForm
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import ExecutionPlan, KernelCall, Tensor, TensorRole
from memory_planner.planner import plan_memory
from target import resolve_profile
from tvm_ext.compile.scratch_forms import ScratchChoice, fewest_forms, forms_to_take, without_freed_scratch

BIG, SMALL = 1024, 256  # bytes of the activations at the peak and elsewhere
PEAK_SCRATCH, OTHER_SCRATCH = 512, 64  # int32 scratch bytes of the peak's kernel and of another


def _plan() -> ExecutionPlan:
    """input -> k_in -> a (BIG) -> k_peak (scratch PEAK_SCRATCH) -> b (BIG) -> k_small (scratch OTHER_SCRATCH)
    -> c (SMALL) -> k_out -> output: the peak is k_peak's call, a, b and its scratch."""
    sizes = {"a": BIG, "b": BIG, "c": SMALL}
    tensors = {name: Tensor(name, (1, n), "int8", TensorRole.INTERMEDIATE) for name, n in sizes.items()}
    tensors["input"] = Tensor("input", (1, SMALL), "int8", TensorRole.INPUT)
    tensors["output"] = Tensor("output", (1, 4), "int8", TensorRole.OUTPUT)
    tensors["b_scratch0"] = Tensor("b_scratch0", (PEAK_SCRATCH // 4,), "int32", TensorRole.SCRATCH)
    tensors["c_scratch0"] = Tensor("c_scratch0", (OTHER_SCRATCH // 4,), "int32", TensorRole.SCRATCH)
    calls = [KernelCall("k_in", ("in",), ("input",), ("a",), macs=100),
             KernelCall("k_peak", ("peak",), ("a",), ("b",), ("b_scratch0",), macs=1000),
             KernelCall("k_small", ("small",), ("b",), ("c",), ("c_scratch0",), macs=400),
             KernelCall("k_out", ("out",), ("c",), ("output",), macs=10)]
    return ExecutionPlan("m", "m.tflite", "hand-made", tensors, calls, ["input"], ["output"])


FORMS = {"k_peak": ScratchFreeForm(None, (("int32", PEAK_SCRATCH),), 0.5),
         "k_small": ScratchFreeForm(None, (("int32", OTHER_SCRATCH),), 0.25)}


def _arena(plan: ExecutionPlan) -> int:
    return plan_memory(buffers_from_plan(plan)).arena_bytes


def test_only_the_kernel_whose_scratch_sets_the_arena_takes_its_form() -> None:
    plan = _plan()
    buffers = buffers_from_plan(plan)
    memory = plan_memory(buffers)
    assert memory.arena_bytes == 2 * BIG + PEAK_SCRATCH
    chosen = forms_to_take(plan, buffers, memory, FORMS, lambda p: plan_memory(buffers_from_plan(p)))
    assert set(chosen) == {"k_peak"}  # k_small's scratch sits beside its smaller output: no byte saved
    without = without_freed_scratch(plan, "k_peak", FORMS["k_peak"].freed)
    assert without.calls[1].scratch == () and "b_scratch0" not in without.tensors
    assert _arena(without) == 2 * BIG
    choice = ScratchChoice.of(plan, chosen, memory.arena_bytes, _arena(without))
    assert choice.extra_instructions == 500  # 0.5 per MAC of k_peak's one call
    assert choice.manifest_entry() == {
        "kernels": {"k_peak": {"scratch_bytes_freed": PEAK_SCRATCH, "extra_instructions": 500}},
        "arena_bytes_with_scratch": 2 * BIG + PEAK_SCRATCH, "arena_bytes": 2 * BIG, "extra_instructions": 500}
    assert choice.summary() == "1 kernel without scratch (-512 B of arena, ~+500 instructions estimated)"
    assert choice.phrase() == f", {choice.summary()}"
    assert choice.none().manifest_entry() is None and choice.none().phrase() == choice.none().summary() == ""


def test_a_form_the_arena_does_not_need_is_left_out() -> None:
    """Of both forms, the arena needs only k_peak's: k_small keeps its faster form."""
    assert set(fewest_forms(_plan(), FORMS, _arena)) == {"k_peak"}


def test_no_form_where_no_scratch_sets_the_arena() -> None:
    """Without k_peak's scratch in the plan at all, nothing is taken."""
    plan = without_freed_scratch(_plan(), "k_peak", FORMS["k_peak"].freed)
    buffers = buffers_from_plan(plan)
    assert forms_to_take(plan, buffers, plan_memory(buffers), FORMS,
                         lambda p: plan_memory(buffers_from_plan(p))) == {}


STR_WW = "mlperf_tiny/str_ww_ref_model.tflite"


def _str_ww_manifest(bundle) -> tuple[dict, str, int]:
    """A bundle of str_ww_ref_model: its manifest, kernels' C and total RAM (bytes)."""
    return (json.loads((bundle.out_dir / "manifest.json").read_text()),
            (bundle.out_dir / "str_ww_ref_model_kernels.c").read_text(), bundle.ram.total_bytes)


@pytest.mark.parametrize("options", [{}, {"patches": "off"}], ids=["None", "off"])
def test_a_model_that_fits_keeps_every_kernels_scratch(compiled, options: dict) -> None:
    """str_ww_ref_model fits cortex-m4f layer by layer: its default compile (auto) and `--patches off` take no
    scratch-free form (they cost instructions; memory is not the constraint): the arena keeps the 1x1
    convolution's widened inputs, 3,840 B. (The session's compiles: the next test reads the same `off` one.)"""
    manifest, kernels, _ = _str_ww_manifest(compiled(STR_WW, "cortex-m4f", build=False, **options))
    assert "scratch_forms" not in manifest or manifest["scratch_forms"] is None
    assert manifest["arena"]["bytes"] == 3_840
    assert "_pair_tiles_direct_s8(" not in kernels and "str_ww_ref_model_pair_tiles_s8" in kernels  # with scratch


def test_auto_takes_the_forms_before_patches_where_layer_by_layer_does_not_fit(compiled, tmp_path: Path) -> None:
    """On a cortex-m4f with too little SRAM for str_ww_ref_model's layer-by-layer RAM but enough without the peak's
    scratch, auto takes the scratch-free forms (no extra MACs) and no patch plan; the manifest records the bytes
    saved and the instructions added."""
    total = _str_ww_manifest(compiled(STR_WW, "cortex-m4f", build=False, patches="off"))[2]
    small = replace(resolve_profile("cortex-m4f"), sram_bytes=total - 64)  # the forms save 128 B of arena
    manifest, kernels, _ = _str_ww_manifest(tvm_ext.compile(models_dir() / STR_WW, small, tmp_path / "out",
                                                            build=False, patches="auto"))
    forms = manifest["scratch_forms"]
    assert manifest.get("patches") is None and manifest["arena"]["bytes"] == forms["arena_bytes"] == 3_712
    assert forms["arena_bytes_with_scratch"] == 3_840 and forms["extra_instructions"] > 0
    assert all(kernel["scratch_bytes_freed"] > 0 for kernel in forms["kernels"].values())
    assert "str_ww_ref_model_pair_tiles_direct_s8(" in kernels
