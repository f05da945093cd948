"""Sizes an ONNX model computes from its tensors' static shapes are folded before import: PyTorch's exporter
writes ``torch.chunk`` (ShuffleNetV2's channel split) as Shape -> Gather -> Add -> Div -> Mul -> Slice, with its
constants as Constant nodes. TVM's importer left those Slices without a static shape, and the layout pass
crashed on the convolution after them (exit 3, AttributeError in layout_per_subgraph._conv_macs)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches
from tvm_ext.compile import compile
from tvm_ext.frontend.onnx_ops.fold_shapes import fold_shape_arithmetic

CHANNELS = 8


def _constant(name: str, values) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=f"{name}_node",
                            value=numpy_helper.from_array(np.array(values, np.int64), name))


def _shuffle_block() -> onnx.ModelProto:
    """Conv -> Relu, split in two channel halves as the exporter writes torch.chunk(2, dim=1), a convolution
    on the second half, Concat, and the channel shuffle (Reshape, Transpose, Reshape)."""
    rng = np.random.default_rng(4)
    half, size = CHANNELS // 2, 6

    def weights(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.4).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["stem"], name="stem", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["stem"], ["features"], name="stem_relu"),
        helper.make_node("Shape", ["features"], ["shape"], name="shape"),
        _constant("axis", [1]), _constant("start", [0]), _constant("one", [1]), _constant("chunks", [2]),
        helper.make_node("Gather", ["shape", "axis"], ["channels"], name="gather", axis=0),
        helper.make_node("Add", ["channels", "one"], ["rounded_up"], name="add"),
        helper.make_node("Div", ["rounded_up", "chunks"], ["chunk"], name="div"),
        helper.make_node("Mul", ["chunk", "one"], ["first_end"], name="mul"),
        helper.make_node("Slice", ["features", "start", "first_end", "axis"], ["first"], name="slice_first"),
        helper.make_node("Mul", ["chunk", "chunks"], ["second_end"], name="mul_2"),
        helper.make_node("Slice", ["features", "first_end", "second_end", "axis"], ["second"], name="slice_second"),
        helper.make_node("Conv", ["second", "w1"], ["branch"], name="branch", pads=[1, 1, 1, 1], group=half),
        helper.make_node("Relu", ["branch"], ["branch_relu"], name="branch_relu"),
        helper.make_node("Concat", ["first", "branch_relu"], ["joined"], name="concat", axis=1),
        _constant("grouped", [1, 2, half, size, size]),
        helper.make_node("Reshape", ["joined", "grouped"], ["groups"], name="reshape_groups"),
        helper.make_node("Transpose", ["groups"], ["swapped"], name="transpose", perm=[0, 2, 1, 3, 4]),
        _constant("flat", [1, -1, size, size]),
        helper.make_node("Reshape", ["swapped", "flat"], ["shuffled"], name="reshape_back"),
        helper.make_node("Conv", ["shuffled", "w2"], ["y"], name="head"),
    ]
    graph = helper.make_graph(
        nodes, "shuffle_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, size, size])],
        [weights("w0", CHANNELS, 3, 3, 3), weights("w1", half, 1, 3, 3), weights("w2", 4, CHANNELS, 1, 1)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_chunk_arithmetic_becomes_constants():
    folded = fold_shape_arithmetic(_shuffle_block())
    assert [n.op_type for n in folded.graph.node if n.op_type != "Constant"] == [
        "Conv", "Relu", "Slice", "Slice", "Conv", "Relu", "Concat", "Reshape", "Transpose", "Reshape", "Conv"]
    values = {init.name: numpy_helper.to_array(init).tolist() for init in folded.graph.initializer}
    assert (values["first_end"], values["second_end"]) == ([4], [8])


def test_a_pytorch_channel_split_compiles_and_equals_onnxruntime(tmp_path):
    path = tmp_path / "shuffle_block.onnx"
    onnx.save(_shuffle_block(), str(path))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed
    # Float outputs: the bundle's sums may round differently from onnxruntime's, by a few float32 ulps.
    assert mismatches(bundle, path, 5, float_tolerance=1e-5) == []
