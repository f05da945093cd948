"""Generated C that reads like hand-written C (issue 14): requantization is one `static inline` helper of
the bundle, bit-exact with TFLite, called from every kernel; the bundle records the model's base name only."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

import tflite_int8_reference as ref
from c_checks import SANITIZE, STRICT_WARNINGS
from conftest import models_dir
from packager.fixed_point_c import SMALL_RIGHT_SHIFT, requantize_helper_name, requantize_helpers_c

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Accumulators at the edges of int32 and around the rounding ties of small shifts.
ACCUMULATORS = sorted({INT32_MIN, INT32_MIN + 1, -(2**30), -123_456_789, -65_537, -1_000, -5, -4, -3, -2, -1,
                       0, 1, 2, 3, 4, 5, 999, 65_535, 123_456_789, 2**30, INT32_MAX - 1, INT32_MAX})
# (multiplier in [2^30, 2^31) or 0, shift) as TFLite's QuantizeMultiplier makes them.
MULTIPLIERS = [(0, 0), (1 << 30, -1), (1 << 30, 0), (1_518_500_250, 3), (1_518_500_250, -31), (INT32_MAX, -7),
               (1_561_796_740, -6), (2_039_655_759, 1), (1_073_741_825, 30), (1_630_361_784, -20)]


def _run_helpers(tmp_path, rounding: str) -> np.ndarray:
    """Every (accumulator, multiplier, shift) through the C helper, built strict and sanitized."""
    name = requantize_helper_name("t", rounding)
    accs = ", ".join("INT32_MIN" if a == INT32_MIN else str(a) for a in ACCUMULATORS)
    pairs = ", ".join(f"{{{m}, {s}}}" for m, s in MULTIPLIERS)
    program = (
        "#include <stdint.h>\n#include <stdio.h>\n" + requantize_helpers_c("t", [rounding])
        + f"static const int32_t accs[] = {{{accs}}};\nstatic const int32_t pairs[][2] = {{{pairs}}};\n"
        "int main(void) {\n"
        "  for (unsigned p = 0; p < sizeof pairs / sizeof pairs[0]; ++p)\n"
        "    for (unsigned a = 0; a < sizeof accs / sizeof accs[0]; ++a)\n"
        f'      printf("%ld\\n", (long){name}(accs[a], pairs[p][0], pairs[p][1]));\n'
        "  return 0;\n}\n"
    )
    (tmp_path / "helpers.c").write_text(program)
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    "-o", str(tmp_path / "helpers"), str(tmp_path / "helpers.c")], check=True, capture_output=True)
    run = subprocess.run([str(tmp_path / "helpers")], check=True, capture_output=True, text=True)
    return np.array([int(v) for v in run.stdout.split()], dtype=np.int64)


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_requantize_helper_is_tflite_bit_exact_without_undefined_behaviour(tmp_path, rounding):
    got = _run_helpers(tmp_path, rounding)
    # TFLite's single rounding narrows its int64 result with static_cast<int32_t>: it wraps.
    want = ref.wrap_int32(np.concatenate([
        ref.multiply_by_quantized_multiplier(np.array(ACCUMULATORS, np.int64), m, s, rounding == "single")
        for m, s in MULTIPLIERS
    ]))
    np.testing.assert_array_equal(got, want)


def test_helpers_are_written_in_a_fixed_order_once_each():
    text = requantize_helpers_c("m", ["single", "double", "double"])
    assert text.count("static inline int32_t m_requantize_double(") == 1
    assert text.index("m_requantize_double(") < text.index("m_requantize_single(")
    assert requantize_helpers_c("m", []) == ""


@pytest.fixture
def hello_world_bundle(compiled):
    """hello_world_int8's host bundle folder, from the session's cache (test_e2e_int8_models compiles it too)."""
    bundle = compiled("tflm/hello_world_int8.tflite")
    assert bundle.selftest.passed
    return bundle.out_dir


def test_requantization_is_one_helper_called_from_every_kernel(hello_world_bundle):
    internal = (hello_world_bundle / "hello_world_int8_internal.h").read_text()
    kernels = (hello_world_bundle / "hello_world_int8_kernels.c").read_text()
    # Every layer's shifts are right shifts and its accumulators small: the cheapest variant of the
    # double-rounding helper, chosen at compile time.
    helper = requantize_helper_name("hello_world_int8", SMALL_RIGHT_SHIFT)
    assert internal.count(f"static inline int32_t {helper}(") == 1
    assert "requantize" not in kernels.replace(f"{helper}(", "")  # no second definition or declaration
    definitions = re.findall(r"^void \w+\([^)\n]*\) \{$(.*?)^\}$", kernels, re.MULTILINE | re.DOTALL)
    assert len(definitions) == 3 and all(f"{helper}(" in body for body in definitions)
    # The old expansion repeated the 64-bit rounding-doubling product in every kernel.
    assert "1073741823" not in kernels and "2147483648" not in kernels


def test_bundle_records_the_model_base_name_only(hello_world_bundle):
    manifest = json.loads((hello_world_bundle / "manifest.json").read_text())
    assert manifest["source"] == "hello_world_int8.tflite"
    for path in hello_world_bundle.iterdir():
        if path.suffix in (".c", ".h", ".json"):
            text = path.read_text()
            assert str(models_dir()) not in text and "shared/models" not in text, path.name


def _bundle_c(folder) -> str:
    return "\n".join(path.read_text() for path in sorted(folder.iterdir()) if path.suffix in (".c", ".h"))


def test_kernels_constants_and_parameters_are_named_by_role(hello_world_bundle):
    text = _bundle_c(hello_world_bundle)
    internal = (hello_world_bundle / "hello_world_int8_internal.h").read_text()
    assert "param_" not in text and not re.search(r"\bweight\d+\b", text)
    assert not re.search(r"[(,] ?(?:const )?\w+\* [A-Z]\b", text), "a single-letter parameter"
    # Kernels by kind and output shape, without TVM's de-duplication digits (fully_connected1, ...).
    prototypes = re.findall(r"^void (\w+)\((.*)\);$", internal, re.MULTILINE)
    assert [name for name, _ in prototypes] == [
        "hello_world_int8_fully_connected_1", "hello_world_int8_fully_connected_16",
        "hello_world_int8_fully_connected_16_2"]
    # (an int16 bias that no longer fits once the input zero point is folded into it is widened to int32)
    assert all(re.fullmatch(r"const int8_t\* input0, const int8_t\* weights, const int(16|32)_t\* bias, "
                            r"int8_t\* output0", params) for _, params in prototypes), prototypes
    # Constants by the call that uses them and the parameter they are passed as.
    assert re.findall(r"^extern const \w+ hello_world_int8_(\w+)\[", internal, re.MULTILINE) == [
        "l0_weights", "l0_bias", "l1_weights", "l1_bias", "l2_weights", "l2_bias"]


def test_prototypes_come_from_the_signatures_not_the_c_text():
    from memory_planner.plan import ExecutionPlan, KernelParameter, KernelSignature
    from packager.internal_header import write_internal_header

    plan = ExecutionPlan("m", "m.tflite", "lowpower", {}, [], [], [])
    signature = KernelSignature("m_add_4", 2, 1, (), (KernelParameter("input0", "int8", True),
                                                      KernelParameter("bias", "int32", True),
                                                      KernelParameter("output0", "int8", False)))
    header = write_internal_header(plan, [signature], ("single",))
    assert "void m_add_4(const int8_t* input0, const int32_t* bias, int8_t* output0);" in header
    assert header.count("static inline int32_t m_requantize_single(") == 1
