"""ONNX ConvTranspose with `output_shape`: its pads are computed from it (TVM's converter ignored the
attribute, the kernel had the wrong shape, and the bundle did not build)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.compile import compile
from tvm_ext.frontend.onnx_ops.conv_transpose import OutputShapeError, output_shape_as_pads


def test_pads_follow_the_onnx_rule():
    # ONNX's test_convtranspose_output_shape: in 3x3, kernel 3x3, strides 3x2, output 10x8: the total
    # padding is -1 on both axes, i.e. one more output row and column at the end.
    attrs = {"strides": [3, 2], "output_shape": [10, 8]}
    assert output_shape_as_pads(attrs, [3, 3], [3, 3]) == {"strides": [3, 2], "pads": [0, 0, 0, 0],
                                                           "output_padding": [1, 1]}
    # Total padding 3: SAME_UPPER puts the odd one at the end, otherwise at the beginning.
    same = {"strides": [2], "output_shape": [7], "auto_pad": b"SAME_UPPER"}
    assert output_shape_as_pads(same, [4], [4])["pads"] == [1, 2]
    assert output_shape_as_pads({"strides": [2], "output_shape": [7]}, [4], [4])["pads"] == [2, 1]


def test_an_output_shape_needing_a_negative_begin_pad_is_refused():
    with pytest.raises(OutputShapeError, match="negative begin pad on spatial axis 0"):
        output_shape_as_pads({"output_shape": [9]}, [3], [3])


@pytest.mark.parametrize("output_shape", [[10, 8], [8, 6]])
def test_conv_transpose_with_output_shape_matches_onnxruntime(tmp_path, output_shape):
    weights = numpy_helper.from_array(np.linspace(-1, 1, 18, dtype=np.float32).reshape(1, 2, 3, 3), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2], output_shape=output_shape,
                            name="deconv")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, *output_shape])], [weights])
    path = tmp_path / "deconv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and "onnxruntime" in bundle.selftest.output
