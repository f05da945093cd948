"""With `--io-in-arena` the model's input gives its bytes away at its last read, even when that is step 0
(`Buffer.filled_before`: the caller fills it before the run, so the first kernel only reads it): the first
kernel's output may take them through its stream order. Planner, independent checker and a compiled bundle
(its self-test with poisoned gaps and sanitizers) agree."""

from __future__ import annotations

import pytest

from memory_planner import plan_memory
from memory_planner.api import Buffer, MemoryPlan, StreamOrder
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import InplaceOutput, KernelAccess, KernelCall, TensorRole
from memory_planner_cases import make_plan, tensor

ROWS = StreamOrder(((0, 200), (200, 400)), ((0, 200), (200, 400)))  # row by row: the taker may start 200 B below


def test_a_model_input_read_only_at_step_0_hands_its_bytes_to_that_step_s_output() -> None:
    """x (400 B, input) is read at step 0 only, where k0 writes a (400 B) row by row; k1 writes y (40 B).
    x and a share all but 200 B at step 0: 600 B live, not 800 (the arena: 608, x 16-byte aligned)."""
    r = TensorRole
    tensors = [tensor("x", (100,), r.INPUT), tensor("a", (100,)), tensor("y", (10,), r.OUTPUT)]
    calls = [KernelCall("k0", ("a",), ("x",), ("a",), access=KernelAccess((InplaceOutput("a", "x", ROWS),))),
             KernelCall("k1", ("y",), ("a",), ("y",))]
    buffers = buffers_from_plan(make_plan(tensors, calls), io_in_arena=True)
    by_name = {b.name: b for b in buffers}
    assert by_name["x"].filled_before and (by_name["x"].first_step, by_name["x"].last_step) == (0, 0)
    assert by_name["a"].inplace_of == "x"
    memory = plan_memory(buffers)
    check_plan(buffers, memory)
    assert (memory.lower_bound, memory.arena_bytes) == (600, 608)
    assert memory.offsets["x"] - memory.offsets["a"] == 208


def test_the_checker_lets_only_a_filled_before_source_give_bytes_at_its_birth_step() -> None:
    """The same pair placed 200 B apart: legal when x is filled before step 0, not when a kernel writes it
    there (it could still be writing x while it writes a)."""
    taker = Buffer("a", 400, 0, 1, inplace_of="x", stream=ROWS)
    plan = MemoryPlan({"a": 0, "x": 208}, 608, 600, "given", False)
    check_plan([Buffer("x", 400, 0, 0, filled_before=True), taker], plan)
    with pytest.raises(InvalidMemoryPlanError, match="overlap while both live"):
        check_plan([Buffer("x", 400, 0, 0), taker], MemoryPlan({"a": 0, "x": 208}, 608, 800, "given", False))


def test_a_first_convolution_writes_over_the_model_input_in_the_bundle(tmp_path) -> None:
    """Three convolutions from a [1, 7, 6, 8] int8 input (336 B); the first, 1x1, writes 336 B at step 0,
    where the input is read for the last time. Without the input's hand-over that step alone needs 672 B;
    the bundle needs less, and passes its self-test with poisoned gaps and sanitizers."""
    from c_checks import strict_sanitized_selftest
    from test_helper_access import _conv_chain_model
    from tvm_ext.compile import compile

    model = tmp_path / "chain.tflite"
    model.write_bytes(_conv_chain_model())
    bundle = compile(model, "lowpower", tmp_path / "in_arena", io_in_arena=True, jobs=1)
    assert bundle.selftest.passed, bundle.selftest.output
    assert (bundle.ram.input_bytes, bundle.ram.output_bytes) == (0, 0) and bundle.arena_bytes < 336 + 336
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{bundle.plan.model.upper()}_POISON_ARENA")
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


def test_a_bundle_without_gaps_builds_with_poisoning_on(tmp_path) -> None:
    """One CONV_2D over a [1, 7, 6, 8] input into [1, 5, 4, 8], both in the arena: the two fill it at the
    only step, so no byte is poisoned, and the test build must not define an unused poison() either
    (-Werror=unused-function)."""
    from c_checks import strict_sanitized_selftest
    from test_dual_mac import VALID, _conv_model
    from tvm_ext.compile import compile

    model = tmp_path / "conv.tflite"
    model.write_bytes(_conv_model(8, [(8, 3, 3, 1, VALID)]))
    bundle = compile(model, "lowpower", tmp_path / "in_arena", io_in_arena=True, jobs=1)
    assert "poison(arena" not in (bundle.out_dir / f"{bundle.plan.model}_model.c").read_text()
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{bundle.plan.model.upper()}_POISON_ARENA")
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr
