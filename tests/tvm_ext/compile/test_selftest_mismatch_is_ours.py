"""A self-test mismatch after a successful build is our bug: `SelftestMismatchError`, exit 3, one line; so is
a generated bundle that does not build (`BundleBuildError`: its C is ours); the reference of a user's Relax
module is that module as the user gave it, so a bug in our passes is caught; a model with NaN and Inf weights
compiles with the reference's non-finite values in the same places."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper
from tvm import relax

import tvm_ext
import tvm_ext.lower
from packager.build import build_bundle
from tvm_ext.compile import SelftestMismatchError, pipeline
from tvm_ext.compile.__main__ import main
from test_user_pipeline import users_module


@relax.expr_functor.mutator
class _DoubleFloatWeights(relax.PyExprMutator):
    def visit_generic_const_(self, op: tvm.ir.expr.Constant) -> relax.Expr:
        data = op.value.numpy()
        return relax.const(data * 2, str(data.dtype)) if data.dtype.kind == "f" and data.size > 1 else op


def buggy_first_pass(**_options) -> tvm.transform.Pass:
    """Stands in for our first pass (LowerQuantizedToInteger) with a bug: it doubles every float weight,
    assigning the result to the module it was given, as a Python pass may."""

    @tvm.transform.module_pass(opt_level=0, name="DoubleWeightsInPlace")
    def double_weights(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        mod["main"] = _DoubleFloatWeights().visit_expr(mod["main"])
        return mod

    return double_weights


@pytest.fixture
def buggy_passes(monkeypatch):
    monkeypatch.setattr(tvm_ext.lower, "LowerQuantizedToInteger", buggy_first_pass)


def test_a_bug_in_our_passes_on_a_users_relax_module_is_caught(tmp_path, buggy_passes):
    with pytest.raises(SelftestMismatchError) as caught:
        tvm_ext.compile(users_module(), target="lowpower", out=tmp_path / "out", name="users_kws")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("users_kws (Relax module): the bundle disagrees with the reference TVM ")
    assert "output 0, element " in message and "got " in message and "abs error" in message
    assert not (tmp_path / "out").exists()


def test_the_cli_reports_a_selftest_mismatch_as_our_bug_in_one_line(tmp_path, buggy_passes, capfd):
    assert main(["--example", "-o", str(tmp_path / "out")]) == 3
    stderr = capfd.readouterr().err.strip().splitlines()
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith("tvm_ext.compile: internal error: ")
    assert "the bundle disagrees with the reference onnxruntime" in stderr[0]
    assert "output 0, element " in stderr[0] and "a bug of tvm_ext, not of the model" in stderr[0]


def build_with_a_broken_kernels_file(bundle_dir, config, jobs=1):
    """Stands in for the bundle's build with a bug of our code generation: a line of the kernels file not C."""
    kernels = next(bundle_dir.glob("*_kernels.c"))
    kernels.write_text(kernels.read_text() + "\nthis line is not C;\n")
    build_bundle(bundle_dir, config, jobs)


def test_a_generated_bundle_that_does_not_build_is_our_bug_in_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(pipeline, "build_bundle", build_with_a_broken_kernels_file)
    assert main(["--example", "-o", str(tmp_path / "out"), "--jobs", "1"]) == 3
    stderr = capfd.readouterr().err.strip().splitlines()
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith("tvm_ext.compile: internal error: ")
    assert "the generated bundle does not build: " in stderr[0] and "_kernels.c" in stderr[0]
    assert not (tmp_path / "out").exists()


def nonfinite_weights_model() -> onnx.ModelProto:
    """y = x + w with w = [NaN, +Inf, -Inf, 0.5]."""
    weights = helper.make_tensor("w", TensorProto.FLOAT, [1, 4], [float("nan"), float("inf"), float("-inf"), 0.5])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add_nonfinite")], "nonfinite",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weights],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_nan_and_inf_weights_compile_with_the_references_non_finite_values_in_place(tmp_path):
    model = tmp_path / "nonfinite.onnx"
    onnx.save(nonfinite_weights_model(), model)
    bundle = tvm_ext.compile(model, target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    facts = json.loads((tmp_path / "out" / "manifest.json").read_text())["selftest"]["outputs"]
    assert facts[0]["reference_non_finite"] == {"nan": 1, "+inf": 1, "-inf": 1}
    assert np.isfinite(facts[0]["max_abs_error"])
