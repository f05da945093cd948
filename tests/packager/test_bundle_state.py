"""A model with state (TFLite variable tensors): the bundle keeps it in its own static memory from one run to the
next, starts it at its reset value, restores it with `<model>_reset()`, documents it in the header, and keeps it
out of the arena. On a hand-made plan with hand-written kernels (no TVM)."""

from __future__ import annotations

import subprocess

import numpy as np

from memory_planner.api import MemoryPlan
from memory_planner.from_plan import buffers_from_plan
from memory_planner.plan import ExecutionPlan, KernelCall, KernelParameter, KernelSignature, Tensor, TensorRole
import packager
from packager import BuildConfig, BundleInputs, write_bundle
from packager.build import build_bundle, selftest_bundle

KERNELS_C = """\
#include <stdint.h>
void k_accumulate(const int16_t* x, const int16_t* state, int16_t* new_state) {
  for (int32_t i = 0; i < 4; ++i) {
    new_state[i] = (int16_t)(state[i] + x[i]);
  }
}

void k_copy(const int16_t* x, int16_t* y) {
  for (int32_t i = 0; i < 4; ++i) {
    y[i] = x[i];
  }
}
"""

KERNEL_SIGNATURES = (
    KernelSignature("k_accumulate", 2, 1, (), (KernelParameter("x", "int16", True), KernelParameter("state", "int16", True),
                                               KernelParameter("new_state", "int16", False))),
    KernelSignature("k_copy", 1, 1, (), (KernelParameter("x", "int16", True), KernelParameter("y", "int16", False))),
)

DRIVER_C = """\
#include <stdio.h>
#include "stateful.h"
int main(void) {
  const int16_t x[4] = {1, 2, 3, 4};
  int16_t y[4];
  int run;
  for (run = 0; run < 3; ++run) {
    if (run == 2) {
      stateful_reset();
    }
    if (stateful_run(x, y) != STATEFUL_OK) {
      return 1;
    }
    printf("%d %d %d %d\\n", y[0], y[1], y[2], y[3]);
  }
  return 0;
}
"""

RESET_VALUE = -3


def stateful_plan() -> ExecutionPlan:
    """y = state += x, the state a 4-element int16 STATE tensor rewritten through its view `s_new`."""
    tensors = {
        "x": Tensor("x", (4,), "int16", TensorRole.INPUT, "x"),
        "s": Tensor("s", (4,), "int16", TensorRole.STATE, "accumulate"),
        "s_new": Tensor("s_new", (4,), "int16", TensorRole.INTERMEDIATE, "accumulate", view_of="s"),
        "y": Tensor("y", (4,), "int16", TensorRole.OUTPUT, "copy"),
    }
    calls = [KernelCall("k_accumulate", ("accumulate",), ("x", "s"), ("s_new",)),
             KernelCall("k_copy", ("copy",), ("s_new",), ("y",))]
    return ExecutionPlan("stateful", "hand-made", "lowpower", tensors, calls, ["x"], ["y"], {"s": RESET_VALUE})


def test_state_is_not_in_the_arena() -> None:
    assert buffers_from_plan(stateful_plan()) == []


def test_state_lives_across_runs_and_resets(tmp_path) -> None:
    plan = stateful_plan()
    x = np.array([1, 2, 3, 4], np.int16)
    bundle = BundleInputs(
        plan=plan, memory=MemoryPlan({}, 0, 0, "by hand", True), buffers=[], kernels_c=KERNELS_C,
        kernel_signatures=KERNEL_SIGNATURES, constants={},
        vectors=packager.TestVectors((packager.TestCase([x], [x + RESET_VALUE]),), "hand arithmetic"),
        config=BuildConfig(),
        input_names=["x"], output_names=["y"],
    )
    write_bundle(tmp_path, bundle)
    build_bundle(tmp_path, bundle.config)
    result, _ = selftest_bundle(tmp_path, bundle)
    assert result.passed  # the first run starts from the reset value
    header = (tmp_path / "stateful.h").read_text()
    assert "void stateful_reset(void);" in header and "#define STATEFUL_STATE_BYTES 8u" in header
    (tmp_path / "driver.c").write_text(DRIVER_C)
    sources = [str(tmp_path / f"{name}.c")
               for name in ("driver", "stateful_model", "stateful_kernels", "stateful_weights")]
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror", "-o",
                    str(tmp_path / "driver"), *sources], check=True)
    printed = subprocess.run([str(tmp_path / "driver")], check=True, capture_output=True, text=True).stdout
    assert printed.splitlines() == ["-2 -1 0 1", "-1 1 3 5", "-2 -1 0 1"]
