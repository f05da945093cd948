"""Which convolutions run backwards (`tvm_ext.compile.reversed_loops`), on hand-made plans, and the shared
str_ww_ref_model on cortex-m4f: its arena at the liveness bound, bit-exact with TFLite Micro on a poisoned arena
under QEMU (issue 31)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import tvm_ext
from conftest import models_dir
from emulator.tools import missing_tools
from memory_planner.api import StreamOrder
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import (ExecutionPlan, InplaceOutput, KernelAccess, KernelCall, ModelOperator, Tensor,
                                 TensorRole)
from memory_planner.planner import plan_memory
from tvm_ext.compile.reversed_loops import kernels_to_reverse, reversible_kernels, with_reversed_streams

ROW, ROWS = 128, 8


def _rows(rows: int, window: int) -> StreamOrder:
    """Forwards, pass r reads input rows r..r+window-1 and writes output row r."""
    return StreamOrder(tuple((r * ROW, (r + window) * ROW) for r in range(rows)),
                       tuple((r * ROW, (r + 1) * ROW) for r in range(rows)))


def _call(kernel: str, kind: str, source: str, taker: str, stream: StreamOrder | None) -> KernelCall:
    facts = () if stream is None else (InplaceOutput(taker, source, stream),)
    return KernelCall(kernel, (kind,), (source,), (taker,), access=KernelAccess(facts),
                      operators=(ModelOperator("", kind, 0),))


def _chain(first_kind: str = "DEPTHWISE_CONV_2D") -> ExecutionPlan:
    """input -> x (10 rows) -> 3x1 window -> y -> 1x1 -> z -> 1x1 -> w -> dense -> output."""
    rows = {"x": ROWS + 2, "y": ROWS, "z": ROWS, "w": ROWS}
    tensors = {name: Tensor(name, (1, n, 1, ROW), "int8", TensorRole.INTERMEDIATE) for name, n in rows.items()}
    tensors["input"] = Tensor("input", (1, ROWS + 2, 1, ROW), "int8", TensorRole.INPUT)
    tensors["output"] = Tensor("output", (1, 4), "int8", TensorRole.OUTPUT)
    calls = [_call("k_copy", "CONV_2D", "input", "x", None),
             _call("k_window", first_kind, "x", "y", _rows(ROWS, 3)),
             _call("k_point", "CONV_2D", "y", "z", _rows(ROWS, 1)),
             _call("k_point_2", "CONV_2D", "z", "w", _rows(ROWS, 1)),
             _call("k_dense", "FULLY_CONNECTED", "w", "output", None)]
    return ExecutionPlan("m", "m.tflite", "hand-made", tensors, calls, ["input"], ["output"])


def _arena_of(plan: ExecutionPlan) -> int:
    return plan_memory(buffers_from_plan(plan)).arena_bytes


def test_the_chain_reaches_its_liveness_bound_with_a_kernel_run_backwards() -> None:
    """Forwards the chain drifts three rows down below x; the flips that shrink the arena reach the bound."""
    plan = _chain()
    forwards = plan_memory(buffers_from_plan(plan))
    assert forwards.arena_bytes == (ROWS + 2) * ROW + 3 * ROW > forwards.lower_bound
    assert reversible_kernels(plan) == ["k_window", "k_point", "k_point_2"]  # largest hand-over first
    chosen = kernels_to_reverse(plan, forwards, _arena_of)
    assert chosen
    backwards = plan_memory(buffers_from_plan(with_reversed_streams(plan, chosen)))
    assert backwards.arena_bytes == backwards.lower_bound < forwards.arena_bytes


def test_nothing_is_reversed_at_the_bound_or_for_other_operators() -> None:
    """A plan at its liveness bound keeps every kernel forwards; a kernel of any operator but a convolution
    (here the window a pool) is never a candidate."""
    plan = _chain()
    at_bound = plan_memory(buffers_from_plan(with_reversed_streams(plan, frozenset({"k_window"}))))
    assert at_bound.arena_bytes == at_bound.lower_bound
    assert kernels_to_reverse(plan, at_bound, _arena_of) == frozenset()
    assert "k_window" not in reversible_kernels(_chain("MAX_POOL_2D"))


def test_a_refused_kernel_is_never_chosen_and_leaves_its_try_to_the_next() -> None:
    """Choosing again without the kernels chosen first (their generated reversal planned no smaller): none of
    them is chosen, and the next candidates are tried in their place."""
    plan = _chain()
    forwards = plan_memory(buffers_from_plan(plan))
    first = kernels_to_reverse(plan, forwards, _arena_of)
    assert first == frozenset({"k_window"})
    again = kernels_to_reverse(plan, forwards, _arena_of, refused=first)
    assert again and not again & first
    assert plan_memory(buffers_from_plan(with_reversed_streams(plan, again))).arena_bytes < forwards.arena_bytes


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")
@pytest.mark.parametrize("rows", [False, True])
def test_str_ww_reaches_its_liveness_bound_bit_exact_on_a_poisoned_arena(tmp_path: Path, rows: bool) -> None:
    """str_ww_ref_model on cortex-m4f in a memory-first plan (`--patches 2x1`, which adds no MACs to it): its
    convolutions drift the arena down forwards, and with some run backwards it reaches its liveness bound, 3,712 B
    (its two 1x1 convolutions whose fused pair tiles' widened inputs sat at the peak, 3,840 B, in their scratch-free
    form: `tvm_ext.compile.scratch_forms`), also taking its input row by row (two bands); the self-test is
    bit-exact with TFLite Micro under QEMU, also with every byte no live buffer holds poisoned before each call."""
    out = tmp_path / "out"
    options = {"patches": "2x1", "input_rows": rows}
    bundle = tvm_ext.compile(models_dir() / "mlperf_tiny" / "str_ww_ref_model.tflite", "cortex-m4f", out, **options)
    assert bundle.selftest.passed
    manifest = json.loads((out / "manifest.json").read_text())
    arena = manifest["arena"]
    assert arena["bytes"] == arena["lower_bound_bytes"] == 3_712
    forms = manifest["scratch_forms"]
    assert "str_ww_ref_model_conv_2d_1x1_s1_24x1x128" in forms["kernels"] and forms["arena_bytes"] == 3_712
    kernels = (out / "str_ww_ref_model_kernels.c").read_text()
    assert " - ax1" in kernels  # some loop runs last row first
    assert "str_ww_ref_model_pair_tiles_direct_s8(" in kernels  # the peak's convolution without its scratch
    model = bundle.plan.model.upper()
    proc = subprocess.run(["make", "qemu-test", f"CORTEX_M_CC=arm-none-eabi-gcc -D{model}_POISON_ARENA"],
                          cwd=out, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
