"""A TVM user's own flow: their Relax module, stock TVM passes of their choice, our passes inserted, and a
bundle that runs and matches the reference."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
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


@pytest.fixture(scope="module")
def users_bundle(tmp_path_factory) -> tvm_ext.Bundle:
    """The user's module compiled for lowpower (once for this file's tests)."""
    return tvm_ext.compile(users_module(), target="lowpower", out=tmp_path_factory.mktemp("users") / "out",
                           name="users_kws")


def test_users_module_compiles_to_a_bundle_that_matches(users_bundle):
    assert users_bundle.selftest.passed, users_bundle.selftest.output
    assert "Relax VM" in users_bundle.selftest.output
    assert (users_bundle.out_dir / "libusers_kws.a").is_file()


def bundle_without_reference(folder) -> dict[str, object]:
    """The bundle's files but what its self-test's reference outputs decide (selftest.c's expected outputs,
    the manifest's `selftest`), which the library does not contain."""
    files: dict[str, object] = {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
                                if path.is_file() and path.name not in ("selftest.c", "manifest.json", "users_kws.tar.gz")}
    manifest = json.loads((folder / "manifest.json").read_text())
    files["manifest.json"] = {key: value for key, value in manifest.items() if key != "selftest"}
    return files


def test_the_docs_flow_gives_the_bundle_compile_makes(tmp_path, users_bundle):
    """docs/tvm_users.md: the module through `tvm_ext.pipeline` (inside the user's Sequential), then
    `tvm_ext.compile` -> the library `tvm_ext.compile` (and the CLI, the same function) makes of the module
    itself: one pass list, the layout per subgraph included. It used to hold the Relax passes only: compile
    then ran its passes again on kernels whose convolutions no layout pass could see, and the docs' bundle
    was NCHW (2.6x the instructions on cortex-m4f). Only the reference differs: the Relax VM ran the lowered
    module, which is bit-identical to the bundle, instead of the user's."""
    lowered = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(), tvm_ext.pipeline("lowpower")])(
        users_module())
    functions = dict(lowered.functions)
    piped = tvm_ext.compile(lowered, target="lowpower", out=tmp_path / "piped", name="users_kws")
    assert dict(lowered.functions) == functions  # the user's module object is left as it was
    assert piped.selftest.passed, piped.selftest.output
    layouts = json.loads((tmp_path / "piped" / "manifest.json").read_text())["subgraph_layouts"]
    assert {layout["layout"] for layout in layouts} == {"NHWC"}
    assert bundle_without_reference(tmp_path / "piped") == bundle_without_reference(users_bundle.out_dir)


def test_a_module_lowered_for_another_profile_is_refused(tmp_path):
    lowered = tvm_ext.pipeline("cortex-m4f")(users_module())
    with pytest.raises(tvm_ext.CompileError, match="tvm_ext.pipeline for profile cortex-m4f, not for lowpower"):
        tvm_ext.compile(lowered, target="lowpower", out=tmp_path / "out", name="users_kws")


def test_a_layout_for_a_lowered_module_is_refused_not_ignored(tmp_path):
    """The layouts of a module tvm_ext.pipeline lowered are chosen already: a layout asked of compile would be
    ignored (the bundle NHWC where the user asked NCHW)."""
    lowered = tvm_ext.pipeline("lowpower")(users_module())
    with pytest.raises(tvm_ext.CompileError, match="give layout='NCHW' to tvm_ext.pipeline"):
        tvm_ext.compile(lowered, target="lowpower", out=tmp_path / "out", name="users_kws", layout="nchw")
    assert not (tmp_path / "out").exists()


def test_profiles_are_tvm_targets_once_tvm_ext_is_loaded():
    t = tvm.target.Target("lowpower-cortex-m4f")
    assert "lowpower" in t.keys
    assert str(t.attrs["mcpu"]) == "cortex-m4"


def test_a_lowered_module_is_imported_without_renaming_it_again():
    """The pipeline's first pass (GeneratedVarNames) is the one renaming: the import of a module it lowered
    keeps main's record of the user's own names (for messages) instead of renaming the generated ones."""
    from tvm_ext.frontend import from_relax
    from tvm_ext.layers import ORIGINAL_VAR_NAMES_ATTR

    lowered = tvm_ext.pipeline("lowpower")(users_module())
    given = dict(lowered["main"].attrs[ORIGINAL_VAR_NAMES_ATTR])
    assert given["input0"] == "mfcc"
    assert dict(from_relax(lowered, "users_kws").mod["main"].attrs[ORIGINAL_VAR_NAMES_ATTR]) == given


def test_a_module_lowered_with_a_backends_helper_calls_is_refused_before_any_work(tmp_path, shared_models):
    """An int8 model lowered for a DSP core calls the Cortex-M backend's C helpers, which TVM's Relax VM (the
    self-test's reference for a module from no file) cannot run: one error line, naming them and the remedy, not
    an internal error from the VM's build."""
    from tvm_ext.frontend import import_model

    mod = import_model(shared_models / "tflm" / "hello_world_int8.tflite").mod
    lowered = tvm_ext.pipeline("cortex-m4f")(mod)
    with pytest.raises(tvm_ext.CompileError, match=r"call the backend's C helpers \(tvm_ext\.\w+"):
        tvm_ext.compile(lowered, target="cortex-m4f", out=tmp_path / "out", name="hello")
    assert not (tmp_path / "out").exists()
