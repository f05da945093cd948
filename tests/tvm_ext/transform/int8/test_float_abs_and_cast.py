"""A float `Abs`, a Cast from float to an integer type and `IsInf` compile and agree with onnxruntime.

They ended in an internal error (exit 3): TVM 0.27 has no C lowering of `tirx.fabs`, which its `abs` of a float
and its `isinf`/`isfinite` (ONNX Cast from float to an integer, IsInf) emit (`tvm_ext.codegen.libm_lowering`), and its
C printer writes an infinite constant as `inff` (`tvm_ext.codegen.exact_float_constants`). The bundles run here on
inputs of our choosing: the self-test's uniform [-1, 1) inputs hit neither a truncation nor a non-finite value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

from onnxruntime_match import conformance
from tvm_ext.compile import compile


FLOAT32 = np.finfo(np.float32)
# Float values whose truncation toward zero each integer type holds: ONNX defines Cast from float to an
# integer only there ("undefined if out of range"). Fractions of both signs, and each type's extremes.
CAST_INPUTS = {
    TensorProto.INT8: [-128.9, -2.7, -0.5, 0.0, 0.99, 2.5, 100.4, 127.9],
    TensorProto.UINT8: [-0.9, 0.0, 0.5, 1.5, 2.7, 128.0, 200.6, 255.9],
    TensorProto.INT32: [-2147483648.0, -16777217.0, -3.5, -0.25, 0.75, 7.9, 1e9, 2147483520.0],
    TensorProto.INT64: [-9.2e18, -4294967296.5, -1.5, 0.0, 1.9, 3e9, 2.5e17, 9.2e18],
}


def _run_both(path: Path, feeds: dict[str, np.ndarray], tmp_path: Path) -> tuple[list, list]:
    """(the bundle's outputs, onnxruntime's) of the model at `path` on `feeds`, in the model's output order."""
    bundle = compile(path, "lowpower", tmp_path / "out")
    expected = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = conformance.run_bundle(bundle.out_dir, bundle.plan.model, list(feeds.values()), expected)
    return got, expected


def test_float_abs_and_isinf_compile_and_agree_with_onnxruntime_on_non_finite_values(tmp_path):
    values = [-0.0, 0.0, -1.5, 2.25, -FLOAT32.max, float(FLOAT32.smallest_subnormal) * -3, float("inf"),
              float("-inf"), float("nan"), -float("nan")]
    x = np.array(values, np.float32)
    graph = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["magnitude"], name="abs"),
         helper.make_node("IsInf", ["x"], ["infinite"], name="is_inf")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(values)])],
        [helper.make_tensor_value_info("magnitude", TensorProto.FLOAT, [len(values)]),
         helper.make_tensor_value_info("infinite", TensorProto.BOOL, [len(values)])])
    path = tmp_path / "abs_isinf.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    (magnitude, infinite), (want_magnitude, want_infinite) = _run_both(path, {"x": x}, tmp_path)
    finite = ~np.isnan(want_magnitude)
    np.testing.assert_array_equal(magnitude[finite].view(np.uint32), want_magnitude[finite].view(np.uint32))
    assert np.isnan(magnitude[~finite]).all() and not np.signbit(magnitude).any()
    np.testing.assert_array_equal(infinite, want_infinite)
    np.testing.assert_array_equal(want_infinite, np.isinf(x))


def test_casts_from_float_to_integers_truncate_toward_zero_like_onnxruntime(tmp_path):
    names = {to: f"x_{TensorProto.DataType.Name(to).lower()}" for to in CAST_INPUTS}
    graph = helper.make_graph(
        [helper.make_node("Cast", [name], [f"{name}_cast"], name=f"cast_{name}", to=to) for to, name in names.items()],
        "g", [helper.make_tensor_value_info(name, TensorProto.FLOAT, [8]) for name in names.values()],
        [helper.make_tensor_value_info(f"{name}_cast", to, [8]) for to, name in names.items()])
    path = tmp_path / "casts.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    feeds = {names[to]: np.array(values, np.float32) for to, values in CAST_INPUTS.items()}
    got, expected = _run_both(path, feeds, tmp_path)
    for (name, x), ours, theirs in zip(feeds.items(), got, expected):
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
        np.testing.assert_array_equal(theirs, np.trunc(x.astype(np.float64)).astype(theirs.dtype), err_msg=name)
