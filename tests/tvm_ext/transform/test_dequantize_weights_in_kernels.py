"""tvm_ext.transform.DequantizeWeightsInKernels leaves no dequantize of constant weights behind in main.

Each float Conv of a quantized ONNX model becomes one kernel that dequantizes its int8 weights itself; the
DequantizeLinear calls that fed the Convs are then unused. Left for a later dead-code elimination, they were
computed on the host by the FoldConstant that runs first (torchvision SqueezeNet 1.1: 5.3 s of that pass's
CPU, 1.8 s without them).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402
from tvm.ir.expr import Constant  # noqa: E402

from tvm_ext.frontend import import_model  # noqa: E402
from tvm_ext.layers import bindings_of  # noqa: E402
from tvm_ext.lower import pipeline  # noqa: E402
from tvm_ext.transform.dequantize_weights_in_kernels import DEQUANTIZE_KERNEL  # noqa: E402
from tvm_ext.tir.tir_walk import walk  # noqa: E402

CHANNELS, SIDE = 4, 5


def _two_float_convs(path) -> None:
    """x (int8) -> DequantizeLinear -> Conv 3x3 -> QuantizeLinear -> DequantizeLinear -> Conv 3x3 -> QuantizeLinear,
    each Conv's per-channel int8 weights dequantized, its bias scale twice x_scale * w_scale (a float Conv)."""
    rng = np.random.default_rng(5)
    w_scale = np.full(CHANNELS, 2.0 ** -7, np.float32)
    constants = [numpy_helper.from_array(np.array(0.05, np.float32), "scale"),
                 numpy_helper.from_array(np.array(0, np.int8), "zero_point"),
                 numpy_helper.from_array(w_scale, "w_scale"),
                 numpy_helper.from_array(np.zeros(CHANNELS, np.int8), "w_zero_point"),
                 numpy_helper.from_array((np.float32(0.05) * w_scale * 2).astype(np.float32), "b_scale"),
                 numpy_helper.from_array(np.zeros(CHANNELS, np.int32), "b_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["x0"])]
    for k in range(2):
        constants += [numpy_helper.from_array(rng.integers(-127, 128, (CHANNELS, CHANNELS, 3, 3)).astype(np.int8),
                                              f"w{k}"),
                      numpy_helper.from_array(rng.integers(-50, 50, CHANNELS).astype(np.int32), f"b{k}")]
        nodes += [helper.make_node("DequantizeLinear", [f"w{k}", "w_scale", "w_zero_point"], [f"w{k}_float"], axis=0),
                  helper.make_node("DequantizeLinear", [f"b{k}", "b_scale", "b_zero_point"], [f"b{k}_float"], axis=0),
                  helper.make_node("Conv", [f"x{k}", f"w{k}_float", f"b{k}_float"], [f"conv{k}"], pads=[1, 1, 1, 1]),
                  helper.make_node("QuantizeLinear", [f"conv{k}", "scale", "zero_point"], [f"q{k}"]),
                  helper.make_node("DequantizeLinear", [f"q{k}", "scale", "zero_point"], [f"x{k + 1}"])]
    nodes[-1] = helper.make_node("Identity", ["q1"], ["y"])
    shape = [1, CHANNELS, SIDE, SIDE]
    graph = helper.make_graph(nodes, "two_float_convs", [helper.make_tensor_value_info("x", TensorProto.INT8, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, shape)], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def _through(mod: tvm.IRModule, last: str) -> tvm.IRModule:
    """`mod` through the pipeline's passes up to the one named `last`, that one included."""
    for each in pipeline("lowpower").passes:
        mod = each(mod)
        if last in each.info.name:
            return mod
    raise AssertionError(f"no pass {last} in the pipeline")


def _constant_dequantizes(mod: tvm.IRModule) -> int:
    """The calls in main, on constants alone, of a kernel whose only block is the dequantize."""
    count = 0
    for binding in bindings_of(mod["main"]):
        value = binding.value
        if (isinstance(value, relax.Call) and isinstance(value.args[0], tvm.ir.GlobalVar)
                and all(isinstance(arg, Constant) for arg in value.args[1].fields)):
            blocks = [node.name_hint for node in walk(mod[value.args[0]].body)
                      if isinstance(node, tvm.s_tir.SBlock) and node.name_hint != "root"]
            count += blocks == [DEQUANTIZE_KERNEL]
    return count


def test_the_weights_dequantizes_are_gone_and_each_conv_is_one_kernel(tmp_path):
    path = tmp_path / "two_float_convs.onnx"
    _two_float_convs(path)
    mod = _through(import_model(path).mod, "DequantizeWeightsInKernels")
    # The two biases' dequantizes stay (FoldConstant folds them); the weights' two are gone.
    assert _constant_dequantizes(mod) == 2
    kernels = [mod[b.value.args[0]] for b in bindings_of(mod["main"]) if isinstance(b.value, relax.Call)
               and isinstance(b.value.args[0], tvm.ir.GlobalVar) and "conv2d" in b.value.args[0].name_hint]
    assert len(kernels) == 2
