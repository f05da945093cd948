"""The embedded self-test (packager/selftest.py) can fail: NaN and Inf are compared by class, integers as
integers, the checksum of a bit-exact output is checked, and a mismatch is reported with its place.

Each case builds a hand-made bundle without TVM whose kernels copy their input to their output: the input
is what "the bundle computes", the expected output what "the reference computed".
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from c_checks import strict_sanitized_selftest

INF, NAN = float("inf"), float("nan")


def copy_bundle(outputs: list[tuple[str, list, list]], more_cases: tuple[list[tuple[str, list, list]], ...] = ()):
    """A bundle with one copy kernel per (dtype, what the bundle outputs, what the reference expects); its
    self-test's case 0 is `outputs`, the cases after it `more_cases` (each of the same dtypes and sizes)."""
    from memory_planner.api import Buffer, MemoryPlan
    from memory_planner.plan import (ExecutionPlan, KernelCall, KernelParameter, KernelSignature,
                                     ScratchBuffer, Tensor, TensorRole)
    from packager import BuildConfig, BundleInputs, TestCase, TestVectors
    from packager.c_types import c_type_of

    tensors, calls, kernels, signatures = {}, [], ["#include <stdint.h>"], []
    for k, (dtype, got, _) in enumerate(outputs):
        c_type, count = c_type_of(dtype), len(got)
        tensors[f"x{k}"] = Tensor(f"x{k}", (count,), dtype, TensorRole.INPUT, "in")
        tensors[f"y{k}"] = Tensor(f"y{k}", (count,), dtype, TensorRole.OUTPUT, "copy")
        calls.append(KernelCall(f"k_copy{k}", ("copy",), (f"x{k}",), (f"y{k}",), ("s",) if k == 0 else ()))
        scratch = ", float* scratch" if k == 0 else ""
        scratch_parameters = (KernelParameter("scratch", "float32", False),) if k == 0 else ()
        signatures.append(KernelSignature(
            f"k_copy{k}", 1, 1, (ScratchBuffer("float32", 16),) if k == 0 else (),
            (KernelParameter("x", dtype, True), KernelParameter("y", dtype, False)) + scratch_parameters))
        kernels.append(f"void k_copy{k}(const {c_type}* x, {c_type}* y{scratch}) {{\n"
                       + ("  scratch[0] = 0.0f;\n" if k == 0 else "")
                       + f"  for (int32_t i = 0; i < {count}; ++i) {{\n    y[i] = x[i];\n  }}\n}}\n")
    tensors["s"] = Tensor("s", (4,), "float32", TensorRole.SCRATCH, "copy")
    names = list(tensors)
    plan = ExecutionPlan("copy", "hand-made", "lowpower", tensors, calls,
                         [n for n in names if n.startswith("x")], [n for n in names if n.startswith("y")])
    vectors = TestVectors(tuple(TestCase([np.array(got, dtype) for dtype, got, _ in case],
                                         [np.array(want, dtype) for dtype, _, want in case])
                                for case in (outputs, *more_cases)), "hand-written values")
    return BundleInputs(
        plan=plan, memory=MemoryPlan({"s": 0}, 16, 16, "by hand", True), buffers=[Buffer("s", 16, 0, 0, 16, "copy")],
        kernels_c="\n".join(kernels), kernel_signatures=tuple(signatures), constants={}, vectors=vectors,
        config=BuildConfig(),
        input_names=plan.inputs, output_names=plan.outputs,
    )


def self_test(tmp_path, outputs, edit_selftest=None, config=None, more_cases=()):
    """Write, build and run the copy bundle's self-test (`copy_bundle(outputs, more_cases)`); `edit_selftest`
    may rewrite selftest.c first; `config` (a BuildConfig) builds it for a profile other than the host's."""
    from packager import write_bundle
    from packager.build import build_bundle, selftest_bundle

    bundle = copy_bundle(outputs, more_cases)
    if config is not None:
        bundle = replace(bundle, config=config)
    write_bundle(tmp_path, bundle)
    if edit_selftest:
        source = tmp_path / "selftest.c"
        source.write_text(edit_selftest(source.read_text()))
    build_bundle(tmp_path, bundle.config)
    return selftest_bundle(tmp_path, bundle)[0]


def test_nan_where_a_finite_value_is_expected_fails_and_says_where(tmp_path):
    result = self_test(tmp_path, [("float32", [1.0, NAN, 3.0], [1.0, 2.0, 3.0])])
    assert not result.passed and result.exit_code == 1, result.output
    (mismatch,) = result.mismatches
    assert (mismatch.output, mismatch.element, mismatch.failing_elements) == (0, 1, 1)
    assert "nan" in mismatch.got and mismatch.expected == "2"
    assert mismatch.detail == "not the same non-finite class"


def test_the_same_non_finite_values_in_the_same_places_pass(tmp_path):
    values = [NAN, INF, -INF, 0.5]
    result = self_test(tmp_path, [("float32", values, values)])
    assert result.passed, result.output
    assert result.outputs[0].non_finite == {"nan": 1, "+inf": 1, "-inf": 1}


def test_plus_inf_where_minus_inf_is_expected_fails(tmp_path):
    result = self_test(tmp_path, [("float32", [0.5, INF], [0.5, -INF])])
    assert not result.passed, result.output
    assert (result.mismatches[0].element, result.mismatches[0].got, result.mismatches[0].expected) == (1, "inf", "-inf")


def test_int64_outputs_near_2_to_the_62_that_differ_by_7_fail_with_exact_values(tmp_path):
    big = 2**62 + 1
    result = self_test(tmp_path, [("int64", [5, big + 7], [5, big])])
    assert not result.passed, result.output
    mismatch = result.mismatches[0]
    assert (mismatch.element, mismatch.got, mismatch.expected) == (1, str(big + 7), str(big))
    assert mismatch.detail == "abs error 7, allowed 0"
    assert result.max_errors == (7.0,)


def test_a_checksum_mismatch_fails_an_integer_output_and_is_only_reported_for_a_float_one(tmp_path):
    """Equal elements, but selftest.c's embedded reference checksum edited: the bit-exact int8 output fails,
    the float output (within tolerance by element) passes and is reported as not bit-identical."""
    from packager.selftest import expected_checksum

    int8_values, float_values = [-128, 0, 127], [1.0, 2.0]
    checksums = [f"0x{expected_checksum(np.array(int8_values, 'int8'), 'int8'):08x}ul",
                 f"0x{expected_checksum(np.array(float_values, 'float32'), 'float32'):08x}ul"]

    def corrupt_checksums(text: str) -> str:
        assert all(text.count(c) == 1 for c in checksums), text
        return text.replace(checksums[0], "0x00000001ul").replace(checksums[1], "0x00000002ul")

    result = self_test(tmp_path, [("int8", int8_values, int8_values), ("float32", float_values, float_values)],
                       corrupt_checksums)
    assert not result.passed, result.output
    (mismatch,) = result.mismatches
    assert (mismatch.output, mismatch.element, mismatch.expected) == (0, None, "00000001")
    assert [r.bit_identical for r in result.outputs] == [False, False]
    assert [r.reference_checksum for r in result.outputs] == ["00000001", "00000002"]


def test_a_float_output_one_ulp_off_passes_and_is_reported_not_bit_identical(tmp_path):
    one_ulp_above_7 = float(np.nextafter(np.float32(7.0), np.float32(8.0)))
    result = self_test(tmp_path, [("float32", [one_ulp_above_7, 1.0], [7.0, 1.0])])
    assert result.passed, result.output
    assert not result.outputs[0].bit_identical
    exact = self_test(tmp_path / "exact", [("float32", [7.0, 1.0], [7.0, 1.0])])
    assert exact.outputs[0].bit_identical


def test_every_comparison_builds_warning_free_under_the_strict_flags(tmp_path):
    from packager import write_bundle

    outputs = [("float32", [1.0, NAN], [1.0, NAN]), ("int64", [2**62, -(2**63)], [2**62, -(2**63)]),
               ("int8", [-128, 127], [-128, 126]), ("uint8", [255], [255]), ("int32", [-(2**31)], [-(2**31)])]
    write_bundle(tmp_path / "copy", copy_bundle(outputs))
    proc = strict_sanitized_selftest(tmp_path / "copy", tmp_path / "strict")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # output 2 differs by one step: atol 0
    assert re.search(r"output 2 mismatch at element 1 \(1 of 2 differ\): got 127, expected 126", proc.stdout)
    assert "output 1 max abs error 0 (allowed 0)" in proc.stdout


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_identical_outputs_pass(tmp_path, dtype):
    values = [3, -4, 2**40] if dtype == "int64" else [0.25, -3.0, 1e30]
    result = self_test(tmp_path, [(dtype, values, values)])
    assert result.passed and result.outputs[0].bit_identical, result.output
