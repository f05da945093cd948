"""A QDQ Softmax (DequantizeLinear -> Softmax -> QuantizeLinear, as quantize_static writes a transformer's
attention) equals onnxruntime bit for bit: onnxruntime runs the group as its QLinearSoftmax (a float32 table of
exponentials, tvm_ext.kernels.onnxruntime_softmax), which rounds otherwise than a float softmax quantized.

Before, the group stayed a float softmax and QuantizeLinear: one step off in about 4 % of the outputs of a
[1, 2, 24, 24] attention map (a PyTorch ViT block failed its self-test on every target)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches
from tvm_ext.compile import compile

ONNX_TYPE = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def _qdq_softmax(path, shape: tuple, dtype, x: tuple, y: tuple, axis: int = -1, opset: int = 13) -> None:
    """Integer input of ``shape`` and ``dtype``, dequantized by ``x`` (scale, zero point), Softmax over ``axis``
    (before opset 13: over the axes from ``axis`` on, flattened), quantized by ``y`` (scale, zero point) to the
    same type."""
    constants = [numpy_helper.from_array(np.array(x[0], np.float32), "x_scale"),
                 numpy_helper.from_array(np.array(x[1], dtype), "x_zero_point"),
                 numpy_helper.from_array(np.array(y[0], np.float32), "y_scale"),
                 numpy_helper.from_array(np.array(y[1], dtype), "y_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_float"]),
             helper.make_node("Softmax", ["x_float"], ["p"], axis=axis),
             helper.make_node("QuantizeLinear", ["p", "y_scale", "y_zero_point"], ["y"])]
    onnx_type = ONNX_TYPE[np.dtype(dtype)]
    graph = helper.make_graph(nodes, "qdq_softmax", [helper.make_tensor_value_info("x", onnx_type, shape)],
                              [helper.make_tensor_value_info("y", onnx_type, shape)], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))


# shape, dtype, x (scale, zero point), y (scale, zero point)[, axis, opset]
CASES = {
    # quantize_static's softmax output: 1/255 from -128 (a PyTorch attention map of 2 heads over 24 tokens)
    "attention_int8": ((1, 2, 24, 24), np.int8, (0.01575687, 1), (1 / 255, -128)),
    # 1/256: floor(1 / y_scale) is 256, a certain output 128 past 127, which onnxruntime saturates
    "int8_scale_256": ((3, 37), np.int8, (0.09, -4), (1 / 256, -128)),
    "uint8_odd_length": ((5, 13), np.uint8, (0.031, 128), (1 / 256, 0)),
    # over the channels of NCHW: onnxruntime moves the axis last and back (opset 13), or flattens the axes from it
    # on into one (opset 11)
    "int8_channel_axis": ((1, 7, 3, 5), np.int8, (0.05, 2), (1 / 256, -128), 1, 13),
    "int8_flattened_opset_11": ((1, 7, 3, 5), np.int8, (0.05, 2), (1 / 256, -128), 1, 11),
}


def _one_hot_rows_first(shape: tuple, dtype):
    """Draws whose first has in each row one largest value (the type's) and the type's smallest elsewhere (an
    output of about 1: past 127 where floor(1 / y_scale) is 256), the others uniform over the type's range."""
    info = np.iinfo(dtype)

    def draw(rng):
        if not hasattr(draw, "done"):
            draw.done = True
            rows = np.full((int(np.prod(shape[:-1])), shape[-1]), info.min, dtype)
            rows[np.arange(len(rows)), np.arange(len(rows)) % shape[-1]] = info.max
            return {"x": rows.reshape(shape)}
        return {"x": rng.integers(info.min, info.max + 1, shape).astype(dtype)}

    return draw


@pytest.mark.parametrize("case", sorted(CASES))
def test_qdq_softmax_equals_onnxruntime(tmp_path, case):
    shape, dtype, x, y, *axis_and_opset = CASES[case]
    path = tmp_path / f"{case}.onnx"
    _qdq_softmax(path, shape, dtype, x, y, *axis_and_opset)
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 50, _one_hot_rows_first(shape, dtype)) == []
