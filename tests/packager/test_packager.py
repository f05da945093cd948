"""The packager on a hand-made plan with hand-written kernels: no TVM anywhere, the bundle builds and its
self-test passes, and fails when the expected output is wrong."""

from __future__ import annotations

import numpy as np
import pytest

KERNELS_C = """\
void k_scale(const float* x, const float* w, float* y) {
  for (int32_t i = 0; i < 4; ++i) {
    y[i] = x[i] * w[i];
  }
}

void k_sum_pairs(const float* x, float* y, float* scratch) {
  for (int32_t i = 0; i < 4; ++i) {
    scratch[i] = x[i];
  }
  y[0] = scratch[0] + scratch[1];
  y[1] = scratch[2] + scratch[3];
}
"""


def hand_made_bundle(expected: np.ndarray):
    from memory_planner.api import Buffer, MemoryPlan
    from memory_planner.plan import (ExecutionPlan, KernelCall, KernelParameter, KernelSignature, ScratchBuffer,
                                     Tensor, TensorRole)
    from packager import BuildConfig, BundleInputs, TestCase, TestVectors

    def floats(*names: str, read_only: bool) -> tuple:
        return tuple(KernelParameter(name, "float32", read_only) for name in names)

    tensors = {
        "x": Tensor("x", (1, 4), "float32", TensorRole.INPUT, "x"),
        "w": Tensor("w", (4,), "float32", TensorRole.CONSTANT, "scale"),
        "t": Tensor("t", (1, 4), "float32", TensorRole.INTERMEDIATE, "scale"),
        "t_flat": Tensor("t_flat", (4,), "float32", TensorRole.INTERMEDIATE, "flatten", view_of="t"),
        "s": Tensor("s", (4,), "float32", TensorRole.SCRATCH, "sum"),
        "y": Tensor("y", (1, 2), "float32", TensorRole.OUTPUT, "sum"),
    }
    calls = [
        KernelCall("k_scale", ("scale",), ("x", "w"), ("t",)),
        KernelCall("k_sum_pairs", ("sum",), ("t_flat",), ("y",), ("s",)),
    ]
    plan = ExecutionPlan("hand", "hand-made", "lowpower", tensors, calls, ["x"], ["y"])
    buffers = [Buffer("t", 16, 0, 1, 16, "scale"), Buffer("s", 16, 1, 1, 16, "sum")]
    memory = MemoryPlan({"t": 0, "s": 16}, 32, 32, "by hand", True)
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    return BundleInputs(
        plan=plan, memory=memory, buffers=buffers, kernels_c="#include <stdint.h>\n" + KERNELS_C,
        kernel_signatures=(
            KernelSignature("k_scale", 2, 1, (), floats("x", "w", read_only=True) + floats("y", read_only=False)),
            KernelSignature("k_sum_pairs", 1, 1, (ScratchBuffer("float32", 16),),
                            floats("x", read_only=True) + floats("y", "scratch", read_only=False)),
        ),
        constants={"w": np.array([0.5, -1.0, 2.0, 0.25], np.float32)},
        vectors=TestVectors((TestCase([x], [expected]),), "hand arithmetic"), config=BuildConfig(),
        input_names=["x"], output_names=["y"],
    )


@pytest.mark.parametrize("expected, passes", [([[-1.5, 7.0]], True), ([[-1.5, 7.001]], False)])
def test_hand_made_plan_builds_and_self_tests(tmp_path, expected, passes):
    from packager import write_bundle
    from packager.build import build_bundle, selftest_bundle

    bundle = hand_made_bundle(np.array(expected, np.float32))
    write_bundle(tmp_path, bundle)
    build_bundle(tmp_path, bundle.config)
    result, measured = selftest_bundle(tmp_path, bundle)
    assert measured == {} and result.where == "host"
    assert result.passed is passes
    assert result.exit_code == (0 if passes else 1)
    model_c = (tmp_path / "hand_model.c").read_text()
    assert "k_scale(input, hand_w, (float*)(arena + 0u));" in model_c
    assert "k_sum_pairs((float*)(arena + 0u), output, (float*)(arena + 16u));" in model_c
