"""A QDQ LeakyRelu (DequantizeLinear -> LeakyRelu -> QuantizeLinear, as quantize_static writes a YOLO-style
Conv -> LeakyRelu) runs as onnxruntime's QLinearLeakyRelu: one lookup per element in the table of its 256 outputs
(``tvm_ext.kernels.onnxruntime_lookup``), fused into the convolution before it as its epilogue.

Before, the group stayed float (DequantizeLinear, LeakyRelu, QuantizeLinear fused into the convolution's kernel), and
the convolution's epilogue was two requantizations and a test (yolo_small_64x80_int8 on cortex-m4f: about 5
instructions per MAC)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration, mismatches, session
from tvm_ext.compile import compile
from tvm_ext.frontend.onnx_ops.qdq_fusion import fuse_qdq
from tvm_ext.kernels.onnxruntime_lookup import leaky_relu_table


def _qdq_leaky_relu(x_scale: float, x_zero_point: int, y_scale: float, y_zero_point: int, alpha: float,
                    ) -> onnx.ModelProto:
    """int8 [256] -> DequantizeLinear -> LeakyRelu -> QuantizeLinear -> Identity (the QuantizeLinear's output no
    graph output, so that onnxruntime selects the group) -> int8 [256]."""
    constants = [numpy_helper.from_array(np.array(x_scale, np.float32), "x_scale"),
                 numpy_helper.from_array(np.array(x_zero_point, np.int8), "x_zero_point"),
                 numpy_helper.from_array(np.array(y_scale, np.float32), "y_scale"),
                 numpy_helper.from_array(np.array(y_zero_point, np.int8), "y_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_float"]),
             helper.make_node("LeakyRelu", ["x_float"], ["activated"], alpha=alpha),
             helper.make_node("QuantizeLinear", ["activated", "y_scale", "y_zero_point"], ["q"]),
             helper.make_node("Identity", ["q"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_leaky_relu", [helper.make_tensor_value_info("x", TensorProto.INT8, [256])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [256])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _parameters() -> list[tuple[float, int, float, int, float]]:
    """(x_scale, x_zero_point, y_scale, y_zero_point, alpha): quantize_static's (a wider input range than output,
    alpha 0.1), equal scales, an output scale far finer than the input's (saturating), and 40 drawn at random."""
    rng = np.random.default_rng(7)
    drawn = [(float(np.float32(10 ** rng.uniform(-3, 0))), int(rng.integers(-128, 128)),
              float(np.float32(10 ** rng.uniform(-3, 0))), int(rng.integers(-128, 128)),
              float(np.float32(rng.choice([0.01, 0.1, 0.2, 1 / 3, rng.uniform(0, 1)])))) for _ in range(40)]
    return [(0.0413, 103, 0.0297, -3, 0.1), (0.05, 0, 0.05, 0, 0.2), (0.2, -20, 0.001, 40, 0.01), *drawn]


def test_table_equals_onnxruntime_on_every_input():
    """The table is onnxruntime's for all 256 inputs, whether onnxruntime selects the QDQ group itself or runs our
    fused QLinearLeakyRelu node."""
    inputs = {"x": np.arange(-128, 128, dtype=np.int8)}
    for parameters in _parameters():
        model = _qdq_leaky_relu(*parameters)
        fused = fuse_qdq(model)
        assert [n.op_type for n in fused.graph.node] == ["QLinearLeakyRelu", "Identity"], fused.graph.node
        want = leaky_relu_table(*parameters)
        for runs in (model, fused):
            got = session(runs.SerializeToString()).run(None, inputs)[0]
            assert np.array_equal(got, want), (parameters, np.flatnonzero(got != want))


def test_uint8_group_stays_as_written():
    """A uint8 group is not fused (the lookup kernel is int8's): the float path computes the same numbers."""
    model = _qdq_leaky_relu(0.05, 0, 0.05, 0, 0.1)
    for init in model.graph.initializer:
        if init.name.endswith("zero_point"):
            init.CopyFrom(numpy_helper.from_array(np.array(128, np.uint8), init.name))
    assert [n.op_type for n in fuse_qdq(model).graph.node][:3] == ["DequantizeLinear", "LeakyRelu", "QuantizeLinear"]


def _float_yolo_block(path, out_channels: int) -> None:
    """Conv 3x3 (pads 1) -> LeakyRelu 0.1 -> Conv 3x3 (pads 1) of ``out_channels`` -> LeakyRelu 0.1, float32,
    [1, 3, 10, 12] -> [1, out_channels, 10, 12]."""
    rng = np.random.default_rng(3)

    def weights(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c1"], ["a1"], name="leaky1", alpha=0.1),
             helper.make_node("Conv", ["a1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c2"], ["y"], name="leaky2", alpha=0.1)]
    constants = [weights("w1", 10, 3, 3, 3), weights("b1", 10), weights("w2", out_channels, 10, 3, 3),
                 weights("b2", out_channels)]
    graph = helper.make_graph(nodes, "yolo_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out_channels, 10, 12])],
                              constants)
    onnx.save(onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])),
              str(path))


@pytest.mark.parametrize("target", ["lowpower", "cortex-m4f"])
def test_conv_leaky_relu_runs_the_lookup_as_its_epilogue(tmp_path, target):
    """Each Conv -> LeakyRelu is one kernel whose epilogue looks the convolution's output up, bit-exact with
    onnxruntime (the last one's QuantizeLinear feeds the output's DequantizeLinear, no graph output: onnxruntime
    selects that group too). Its 7 output channels are two tiles of four on cortex-m4f (one padded)."""
    _float_yolo_block(tmp_path / "float.onnx", 7)
    path = tmp_path / "yolo_block.onnx"
    quantization.quantize_static(str(tmp_path / "float.onnx"), str(path), NormalCalibration("x", (1, 3, 10, 12)),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True,
                                 activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    bundle = compile(path, target, tmp_path / "out")
    layers = [" + ".join(call.layers) for call in bundle.plan.calls]
    fused = [label for label in layers if "(QLinearConv)" in label and "(QLinearLeakyRelu)" in label]
    assert len(fused) == 2, layers
    if target == "lowpower":
        assert mismatches(bundle, path, 20) == []
    else:
        selftest = json.loads((bundle.out_dir / "manifest.json").read_text())["selftest"]
        assert selftest["passed"] and all(o["bit_identical"] for o in selftest["outputs"]), selftest
        kernels = next(bundle.out_dir.glob("*_kernels.c")).read_text()
        assert "_dual_mac_s8x4(" in kernels, "10 and 7 channels not tiled for the dual MAC"
