"""Which kernels take their form with less scratch (`tvm_ext.compile.scratch_forms`), on hand-made plans: only a
kernel whose scratch sets the arena, and of several that each lower it only those the arena needs; the estimate
of the instructions they add counts every call's MACs (issue 31)."""

from __future__ import annotations

from backends.backend import ScratchFreeForm
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import ExecutionPlan, KernelCall, Tensor, TensorRole
from memory_planner.planner import plan_memory
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
    assert "1 kernel without scratch (-512 B of arena, ~+500 instructions estimated)" in choice.phrase()
    assert choice.none().manifest_entry() is None and choice.none().phrase() == ""


def test_a_form_the_arena_does_not_need_is_left_out() -> None:
    """Of both forms, the arena needs only k_peak's: k_small keeps its faster form."""
    assert set(fewest_forms(_plan(), FORMS, _arena)) == {"k_peak"}


def test_no_form_where_no_scratch_sets_the_arena() -> None:
    """Without k_peak's scratch in the plan at all, nothing is taken."""
    plan = without_freed_scratch(_plan(), "k_peak", FORMS["k_peak"].freed)
    buffers = buffers_from_plan(plan)
    assert forms_to_take(plan, buffers, plan_memory(buffers), FORMS,
                         lambda p: plan_memory(buffers_from_plan(p))) == {}
