"""Kernel and constant names that say what they are (issue 14, item 7): a kernel by its operator kind, its
sliding window and its output shape (`<prefix>_conv2d_add_3x3_s2_6x4x4`), a float model's constants by
role (`l0_weights`, `l0_bias`), and no name TVM gave a parameter (`B`, `param_0`) in the C."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper, numpy_helper
from tvm import relax

from target import load_profile
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.plan.extract_plan import extract_plan, unique_kernels
from tvm_ext.frontend import import_model
from tvm_ext.tir.kernel_names import Window, kernel_kind
from tvm_ext.lower import pipeline

ONNX_OPSET = 13


@pytest.mark.parametrize("name_hint, kind", [
    ("atan2", "atan2"),  # the old rule cut every word's trailing digits: `atan`
    ("atan21", "atan2"),  # TVM's second atan2
    ("fused_conv2d1_add1_relu1", "conv2d_add_relu"),
    ("max_pool2d", "max_pool2d"),
    ("fully_connected12", "fully_connected"),  # an int8 kernel of ours, de-duplicated
    ("fused", "fused"),
])
def test_kind_keeps_operator_digits_and_drops_tvms(name_hint, kind):
    assert kernel_kind(name_hint) == kind


def test_atan2_kernels_keep_their_name():
    bb = relax.BlockBuilder()
    x, y = relax.Var("x", relax.TensorType((4,), "float32")), relax.Var("y", relax.TensorType((3,), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            first = bb.emit(relax.op.atan2(x, x))
            second = bb.emit(relax.op.atan2(y, y))
            out = bb.emit_output(relax.Tuple([first, second]))
        bb.emit_func_output(out)
    lowered = relax.transform.LegalizeOps()(bb.get())
    kernels, _ = unique_kernels(lowered, "m")
    assert sorted(kernels) == ["m_atan2_3", "m_atan2_4"]


def test_window_label():
    assert Window((3, 3), (2, 2), (1, 1)).label == "3x3_s2"
    assert Window((3, 1), (2, 1), (1, 1)).label == "3x1_s2x1"
    assert Window((3, 3), (1, 1), (2, 2)).label == "3x3_s1_d2"


def _windowed_model(path) -> None:
    """x (1,4,9,9) -> Conv 3x3 stride 2 with bias -> Conv 3x3 dilation 2 -> depthwise Conv 3x3 -> MaxPool 2x2
    stride 2 -> Gemm."""
    rng = np.random.default_rng(0)

    def weights(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    initializers = [weights("w1", 6, 4, 3, 3), weights("b1", 6), weights("w2", 6, 6, 3, 3),
                    weights("w3", 6, 1, 3, 3), weights("w4", 24, 5), weights("b4", 5)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "w2"], ["c2"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["c2", "w3"], ["c3"], group=6, pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c3"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w4", "b4"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4, 9, 9))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 5))], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def windowed(tmp_path_factory):
    """The windowed model's kernels, C and plan constants."""
    path = tmp_path_factory.mktemp("names") / "windowed.onnx"
    _windowed_model(path)
    model = import_model(path)
    lowered = pipeline(layout="NCHW")(model.mod)
    kernels, c_name_of = unique_kernels(lowered, "m")
    source = generate_c(kernels, tvm.target.Target({"kind": "c"}), "m")
    plan, constants = extract_plan(lowered, model, load_profile("lowpower"), c_name_of, source.signatures)
    return [c_name_of[name] for name in c_name_of], source.c_text, plan, constants


def test_kernels_are_named_by_kind_window_and_shape(windowed):
    names, _, _, _ = windowed
    assert names == ["m_conv2d_add_3x3_s2_6x5x5", "m_conv2d_3x3_s1_d2_6x5x5", "m_conv2d_3x3_s1_6x5x5",
                     "m_max_pool2d_2x2_s2_6x2x2", "m_matmul_add_5"]


def test_float_constants_are_named_by_role(windowed):
    _, _, _, constants = windowed
    assert list(constants) == ["l0_weights", "l0_bias", "l1_weights", "l2_weights", "l4_weights", "l4_bias"]


def test_no_parameter_name_of_tvm_reaches_the_c(windowed):
    _, text, _, _ = windowed
    parameters = {p.split()[-1].lstrip("*") for line in re.findall(r"^void \w+\((.*)\) \{$", text, re.MULTILINE)
                  for p in line.split(", ")}
    assert parameters == {"input0", "weights", "bias", "output0"}
    assert "param_" not in text
