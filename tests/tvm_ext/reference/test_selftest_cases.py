"""The self-test runs several input cases, each compared with the reference (issue 28, "A wrong answer the
self-test did not see"): case 0 is the input it always ran, case 1 every integer input at its type's extremes,
then random ones; fewer when they would embed too many bytes or take too many MACs. The verdict requires
every output of every case; a mismatch names its case; a kernel or weight that only a later case reaches is
caught; a stateful model is reset between cases, as the reference runs each case from a fresh interpreter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tflite_builder import Model, Operator, Quantization, Tensor, build

import tvm_ext
from conftest import profile_build_config
from packager.build import make, run_host_selftest
from packager.selftest import (CASES_BUDGET_BYTES, CASES_BUDGET_MACS, HOST_CASES_BUDGET_MACS, MAX_CASES,
                               SOFT_FLOAT_MAC_WEIGHT, budgeted_macs, case_count)
from packager.selftest_verdict import SelftestResult
from svdf_models import SvdfSpec, build_svdf_model
from test_selftest_can_fail import self_test
from tvm_ext.frontend import TensorSpec
from tvm_ext.model_check.limits import MAX_IO_BYTES
from tvm_ext.reference.outputs import selftest_cases
from tvm_ext.reference.outputs import test_inputs as first_case_inputs

SPECS = [TensorSpec("a", (3, 5), "int8"), TensorSpec("b", (7,), "uint8"), TensorSpec("f", (4,), "float32"),
         TensorSpec("i", (6,), "int64")]


def test_case_0_is_the_input_the_self_test_always_ran_and_case_1_the_extremes() -> None:
    cases = selftest_cases(SPECS, MAX_CASES)
    assert len(cases) == MAX_CASES
    for ours, before in zip(cases[0], first_case_inputs(SPECS), strict=True):
        assert np.array_equal(ours, before) and ours.dtype == before.dtype
    a, b, f, i = cases[1]
    assert a.reshape(-1).tolist() == [-128, 127] * 7 + [-128] and b.tolist() == [0, 255] * 3 + [0]
    assert f.tolist() == [-1.0, 1.0, -1.0, 1.0] and i.tolist() == [0, 9, 0, 9, 0, 9]
    assert all(not np.array_equal(x, y) for x, y in zip(cases[2], cases[3]))  # two other random draws


def test_the_extremes_keep_the_inputs_valid_for_a_model_that_divides_or_indexes() -> None:
    _, b, _, i = selftest_cases(SPECS, 2, nonzero_integers=True, index_limits={3: 4})[1]
    assert b.tolist() == [1, 255] * 3 + [1] and i.tolist() == [1, 3] * 3


@pytest.mark.parametrize(("io_bytes", "macs", "count"), [
    (100, 0, MAX_CASES),
    (CASES_BUDGET_BYTES // 3, 0, 3),
    (CASES_BUDGET_BYTES // 2 + 1, 0, 1),
    (MAX_IO_BYTES, 0, 1),
    (100, CASES_BUDGET_MACS // 2, 2),
    (100, CASES_BUDGET_MACS + 1, 1),
])
def test_the_cases_embedded_stay_within_the_byte_and_mac_budget(io_bytes: int, macs: int, count: int) -> None:
    assert case_count(io_bytes, macs) == count


def test_a_host_self_test_runs_every_case_of_a_model_an_emulated_board_runs_once() -> None:
    """ResNet-18 at 64x64 (about 150 million MACs) ran one case on the host, where an onnxruntime QDQ export
    computed a wrong answer on 8 of 20 inputs: one case is too few where the host can run four in a second."""
    resnet18_macs = 150_000_000
    assert case_count(100, resnet18_macs) == 1
    assert case_count(100, resnet18_macs, HOST_CASES_BUDGET_MACS) == MAX_CASES
    assert case_count(100, HOST_CASES_BUDGET_MACS // 2, HOST_CASES_BUDGET_MACS) == 2


def test_a_mismatch_in_a_later_case_fails_and_names_the_case(tmp_path: Path) -> None:
    """The copy bundle outputs its input: case 2's reference differs in one element, cases 0 and 1 agree."""
    agree = [("int8", [1, 2, 3], [1, 2, 3])]
    result = self_test(tmp_path, agree, more_cases=(agree, [("int8", [4, 5, 6], [4, 7, 6])]))
    assert "#define SELFTEST_CASES 3u" in (tmp_path / "selftest.c").read_text()
    assert not result.passed and result.problem is None and result.exit_code == 1, result.output
    assert {m.case for m in result.mismatches} == {2}  # its element, then its checksum
    mismatch = result.mismatches[0]
    assert (mismatch.case, mismatch.output, mismatch.element, mismatch.got, mismatch.expected) == (2, 0, 1, "5", "7")
    assert mismatch.describe().startswith("case 2 output 0, element 1 (1 of 3 differ): got 5, expected 7")
    assert [(r.case, r.bit_identical) for r in result.reports] == [(0, True), (1, True), (2, False)]


def skips_case_1(selftest_c: str) -> str:
    """selftest.c that does not run case 1 (and reports nothing of it), yet passes the others."""
    edited, count = re.subn(r"int status = run_case\(c\);", "int status = c == 1u ? 0 : run_case(c);", selftest_c)
    assert count == 1, selftest_c
    return edited


@pytest.mark.parametrize("profile", [None, "cortex-m4f"], ids=["host", "cortex-m4f"])
def test_a_selftest_that_leaves_out_one_case_fails(tmp_path: Path, profile: str | None) -> None:
    case = [("float32", [1.0, 2.0], [1.0, 2.0]), ("int8", [3], [3])]
    config = profile_build_config(profile) if profile else None
    result = self_test(tmp_path, case, skips_case_1, config, more_cases=(case, case))
    assert result.exit_code == 0 and "selftest: PASS" in result.output and not result.passed, result.output
    assert result.problem == ("reported 4 of its 6 outputs compared with the reference's checksum "
                              "(3 cases of 2; case 1 output 0 is missing)")


def minimum_model(folder: Path) -> tuple[Path, int]:
    """An int8 MINIMUM of the input and a constant of distinct values 90..105 (input, constant and output of
    one quantization, so that the bundle's weights hold the constant as it is), and an element where case 0's
    input lies below the constant and case 1's is 127: there the output is the input in case 0, the
    constant in case 1."""
    q = Quantization((0.05,), (0,))
    constant = np.arange(90, 106, dtype=np.int8).reshape(1, 16)
    tensors = [Tensor("x", (1, 16), "int8", q), Tensor("c", (1, 16), "int8", q, data=constant),
               Tensor("y", (1, 16), "int8", q)]
    path = folder / "minimum.tflite"
    path.write_bytes(build(Model(tensors, [Operator("MINIMUM", inputs=(0, 1), outputs=(2,))], inputs=(0,),
                                 outputs=(2,))))
    first, extremes = (case[0].reshape(-1) for case in selftest_cases([TensorSpec("x", (1, 16), "int8")], 2))
    element = next(k for k in range(16) if first[k] < constant[0, k] and extremes[k] == 127)
    return path, element


def edited_selftest(out_dir: Path, source: Path, pattern: str, replacement: str) -> SelftestResult:
    """The host self-test of the bundle in `out_dir` after `pattern` (a regular expression found exactly once in
    its C file `source`) is replaced with `replacement` and the self-test rebuilt, against the references'
    checksums in its manifest."""
    text, count = re.subn(pattern, replacement, source.read_text())
    assert count == 1, source.read_text()
    source.write_text(text)
    make(out_dir, "selftest")
    entries = json.loads((out_dir / "manifest.json").read_text())["selftest"]["outputs"]
    return run_host_selftest(out_dir, tuple((int(entry["reference_checksum"], 16),) for entry in entries))


def test_a_weight_that_only_a_later_case_reaches_is_caught(tmp_path: Path) -> None:
    """One constant element off by one in the bundle's weights: case 0's output does not change (the input is
    below both values there), case 1's does. The self-test of one case would have passed."""
    path, element = minimum_model(tmp_path)
    bundle = tvm_ext.compile(path, target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed and bundle.selftest.cases == MAX_CASES
    weights = bundle.out_dir / "minimum_weights.c"
    value = 90 + element
    result = edited_selftest(bundle.out_dir, weights, rf"\b{value},", f"{value + 1},")
    assert not result.passed and result.problem is None, result.output
    assert result.reports[0].bit_identical  # case 0 alone passes
    assert result.mismatches[0].case == 1 and result.mismatches[0].element == element, result.mismatches
    assert not any(m.case == 0 for m in result.mismatches)


def test_a_stateful_model_is_reset_between_cases_and_passes(tmp_path: Path) -> None:
    """An SVDF layer keeps its memory from one run to the next: each case is compared with a fresh TFLite
    Micro interpreter's first invocation, so the self-test resets the bundle before every case after the
    first; without the reset, case 1 would see case 0's memory and fail."""
    model = tmp_path / "svdf_layer.tflite"
    model.write_bytes(build_svdf_model(SvdfSpec(rank=2, memory=5, seed=11)))
    bundle = tvm_ext.compile(model, target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed and bundle.selftest.cases == MAX_CASES
    selftest_c = bundle.out_dir / "selftest.c"
    reset = "  if (c > 0u) {\n    svdf_layer_reset();\n  }\n"
    assert selftest_c.read_text().count(reset) == 1
    selftest_c.write_text(selftest_c.read_text().replace(reset, ""))
    make(bundle.out_dir, "selftest")
    entries = json.loads((bundle.out_dir / "manifest.json").read_text())["selftest"]["outputs"]
    checksums = tuple((int(entry["reference_checksum"], 16),) for entry in entries)
    carried = run_host_selftest(bundle.out_dir, checksums)
    assert not carried.passed and carried.mismatches and carried.mismatches[0].case == 1, carried.output


def test_the_board_counts_one_inference_the_first_case(tmp_path: Path) -> None:
    """Four cases on the emulated board, one count: the first case's run (the instructions per inference
    the manifest and report.md give)."""
    agree = [("int8", [1, 2, 3], [1, 2, 3])]
    result = self_test(tmp_path, agree, config=profile_build_config("cortex-m4f"), more_cases=(agree,) * 3)
    assert result.passed and result.instructions, result.output
    assert result.output.count("instructions per inference") == 1
    assert len(result.call_instructions) == 1 and [r.case for r in result.reports] == [0, 1, 2, 3]


def quantize_model(folder: Path, also_float: bool = False) -> Path:
    """An ONNX QuantizeLinear of a float input (scale 0.02, zero point 3) to an int8 output, as a QDQ model's
    first node; `also_float`: the input also feeds a float Relu, a second output."""
    from onnx import TensorProto, helper, numpy_helper, save

    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 64])]
    if also_float:
        nodes.append(helper.make_node("Relu", ["x"], ["r"]))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 64]))
    constants = [numpy_helper.from_array(np.array(0.02, np.float32), "scale"),
                 numpy_helper.from_array(np.array(3, np.int8), "zero_point")]
    graph = helper.make_graph(nodes, "quantize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              outputs, constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    path = folder / "quantize_input.onnx"
    save(model, str(path))
    return path


def test_a_float_input_the_model_only_quantizes_is_drawn_over_its_grid_and_its_ties(tmp_path: Path) -> None:
    from tvm_ext.frontend import import_model
    from tvm_ext.reference.input_grids import QuantizationGrid, quantized_input_grids

    path = quantize_model(tmp_path)
    imported = import_model(path)
    grids = quantized_input_grids(imported.mod["main"])
    assert grids == {0: QuantizationGrid(float(np.float32(0.02)), 3, -128, 127)}
    first, extremes, ties, other = (case[0].reshape(-1) for case in selftest_cases(imported.inputs, 4, grids=grids))
    assert first.min() >= -1.0 and first.max() < 1.0  # case 0 is the input the self-test always ran
    quantized = np.round(extremes.astype(np.float64) / 0.02) + 3
    assert quantized.min() == -129 and quantized.max() == 128  # one step beyond either end: saturates both ways
    steps = ties.astype(np.float64) / 0.02
    assert np.all(np.abs(steps - np.floor(steps) - 0.5) < 1e-4)  # on a tie, within float32's rounding
    assert steps.min() < -120 and steps.max() > 120 and other.min() < -2.0  # the whole grid, not [-1, 1)
    path = quantize_model(tmp_path, also_float=True)
    assert quantized_input_grids(import_model(path).mod["main"]) == {}


def test_a_quantization_rounding_ties_the_wrong_way_is_caught_by_the_ties_case(tmp_path: Path) -> None:
    """The bundle's QuantizeLinear rounds x / scale half to even, as onnxruntime; edited to round every tie up,
    it still passes case 0 (uniform floats, none on a tie) but fails case 2 (every input on a tie)."""
    bundle = tvm_ext.compile(quantize_model(tmp_path), target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed and bundle.selftest.cases == MAX_CASES
    helpers = bundle.out_dir / "quantize_input_internal.h"
    # The rounding helper's addition on the host (packager/templates/round_half_even_small.h.in: value plus 1.5 * 2^23
    # rounds ties to even) takes value one ulp further from zero first: every tie rounds away from zero.
    addition = r"value \+ 12582912\.0f;"
    result = edited_selftest(bundle.out_dir, helpers, addition, "value * 1.0000001f + 12582912.0f;")
    assert not result.passed and result.problem is None, result.output
    assert {m.case for m in result.mismatches} == {2}, result.mismatches


def test_a_float_mac_weighs_more_where_float_runs_in_software() -> None:
    """pretrainedResnet (12.5 M float MACs) on rv32imc, float in software: 1.90 G instructions per inference, so
    its four self-test cases ran some 7.6 G instructions under QEMU; counted SOFT_FLOAT_MAC_WEIGHT times it runs
    one case there, and four where the core has an FPU. Only calls with a float output weigh more."""
    plan = SimpleNamespace(tensors={"f": SimpleNamespace(dtype="float32"), "q": SimpleNamespace(dtype="int8")},
                           calls=[SimpleNamespace(macs=12_500_000, outputs=("f",)),
                                  SimpleNamespace(macs=10, outputs=("q",))])
    assert budgeted_macs(plan, soft_float=False) == 12_500_010
    assert budgeted_macs(plan, soft_float=True) == 12_500_000 * SOFT_FLOAT_MAC_WEIGHT + 10
    assert case_count(100, budgeted_macs(plan, soft_float=False)) == MAX_CASES
    assert case_count(100, budgeted_macs(plan, soft_float=True)) == 1
