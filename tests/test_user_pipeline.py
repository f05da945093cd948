"""A TVM user's own flow: their Relax module, stock TVM passes of their choice, our passes inserted, and a
bundle that runs and matches the reference."""

from __future__ import annotations

import numpy as np
import onnxruntime
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

import tvm_ext
from tvm_ext.example import example_model


def users_module() -> tvm.IRModule:
    """What a user would write: the ONNX frontend, then stock passes they like."""
    mod = from_onnx(example_model(), keep_params_in_input=False)
    return tvm.transform.Sequential(
        [relax.transform.CanonicalizeBindings(), relax.transform.FoldConstant(), relax.transform.DeadCodeElimination()]
    )(mod)


def onnxruntime_output(x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(example_model().SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"mfcc": x})[0]


def test_our_pipeline_inside_a_users_sequential_still_builds_with_tvm():
    mod = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(), tvm_ext.pipeline("lowpower")])(
        users_module()
    )
    x = np.random.default_rng(1).uniform(-1, 1, (1, 1, 49, 10)).astype("float32")
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), onnxruntime_output(x), rtol=1e-5, atol=1e-6)


def test_users_module_compiles_to_a_bundle_that_matches(tmp_path):
    bundle = tvm_ext.compile(users_module(), target="lowpower", out=tmp_path / "out", name="users_kws")
    assert bundle.selftest.passed, bundle.selftest.output
    assert "Relax VM" in bundle.selftest.output
    assert (tmp_path / "out" / "libusers_kws.a").is_file()


def test_profiles_are_tvm_targets_once_tvm_ext_is_loaded():
    t = tvm.target.Target("lowpower-cortex-m4f")
    assert "lowpower" in t.keys
    assert str(t.attrs["mcpu"]) == "cortex-m4"
