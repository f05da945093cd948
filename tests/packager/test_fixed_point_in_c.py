"""TFLite's fixed-point helpers as generated C: on negative and extreme int32 values they give the numpy
reference's results, build without a warning under -Wconversion -Wshadow, and run clean under UBSan (a left
shift of a negative value, or an int32 overflow, would stop the program)."""

from __future__ import annotations

import subprocess

import numpy as np

import tvm
from tvm import te

import tflite_int8_reference as ref
from c_checks import SANITIZE, STRICT_WARNINGS
from packager.fixed_point_c import requantize_helpers_c
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.layers import NUM_OUTPUTS_ATTR
from tvm_ext.kernels.fixed_point import (
    Rounding,
    multiply_by_quantized_multiplier,
    saturating_left_shift,
)

VALUES = np.array([-2**31, -2**31 + 1, -2**30, -123_456_789, -65_536, -1_000, -1, 0, 1, 999,
                   65_535, 123_456_789, 2**30, 2**31 - 1], dtype=np.int32)
MULTIPLIER = 1_518_500_250  # sqrt(1/2) in Q0.31
LEFT_SHIFT = 3
SATURATING_SHIFT = 5


def elementwise_kernel(expression) -> tvm.tirx.PrimFunc:
    x = te.placeholder((len(VALUES),), "int32", name="x")
    y = te.compute(x.shape, lambda i: expression(x[i]), name="y")
    return te.create_prim_func([x, y]).with_attr(NUM_OUTPUTS_ATTR, 1)


def run_in_c(tmp_path, kernels: dict) -> tuple[str, dict[str, np.ndarray]]:
    """Each kernel applied to VALUES by a C program built strict and sanitized; returns (C text, outputs)."""
    source = generate_c(kernels, tvm.target.Target({"kind": "c"}))
    values = ", ".join(f"{v}" if v != -2**31 else "INT32_MIN" for v in VALUES.tolist())
    calls = "\n".join(f'  {name}(x, y); printf("{name}"); for (int i = 0; i < N; ++i) printf(" %ld", (long)y[i]);'
                      ' printf("\\n");' for name in kernels)
    helpers = requantize_helpers_c("tvm_ext", source.requantize_roundings)
    main = (f"#include <stdio.h>\n#include <stdint.h>\n{helpers}{source.c_text}\n"
            f"#define N {len(VALUES)}\nint main(void) {{\n  const int32_t x[N] = {{{values}}};\n"
            f"  int32_t y[N];\n{calls}\n  return 0;\n}}\n")
    (tmp_path / "fixed_point.c").write_text(main)
    build = ["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
             "-o", str(tmp_path / "fixed_point"), str(tmp_path / "fixed_point.c")]
    subprocess.run(build, check=True, capture_output=True, text=True)
    run = subprocess.run([str(tmp_path / "fixed_point")], check=True, capture_output=True, text=True)
    outputs = {}
    for line in run.stdout.splitlines():
        name, *numbers = line.split()
        outputs[name] = np.array([int(n) for n in numbers], dtype=np.int64)
    return source.c_text, outputs


def test_negative_values_scale_up_without_undefined_behaviour(tmp_path):
    kernels = {
        "scale_up_then_requantize": elementwise_kernel(
            lambda v: multiply_by_quantized_multiplier(v, MULTIPLIER, LEFT_SHIFT, Rounding.DOUBLE)),
        "saturating_shift": elementwise_kernel(lambda v: saturating_left_shift(v, SATURATING_SHIFT)),
    }
    c_text, outputs = run_in_c(tmp_path, kernels)
    expected_requantized = ref.multiply_by_quantized_multiplier(VALUES, MULTIPLIER, LEFT_SHIFT)
    expected_saturated = [ref._sat_shl(int(v), SATURATING_SHIFT) for v in VALUES]
    np.testing.assert_array_equal(outputs["scale_up_then_requantize"], expected_requantized)
    np.testing.assert_array_equal(outputs["saturating_shift"], expected_saturated)
    # INT32_MIN, the saturation's lower bound, is printed so that C types it int32_t, not long (as <stdint.h>
    # spells it: tvm_ext.codegen.codegen_c.spell_int32_min).
    assert "(-2147483647 - 1)" in c_text and "-2147483648" not in c_text
