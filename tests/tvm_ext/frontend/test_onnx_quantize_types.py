"""ONNX QuantizeLinear to uint8 and int16 (and DequantizeLinear from them) keep their type and range: the
int8 pass used to declare every quantized edge int8 and clamp it to [-128, 127] (only the self-test caught it)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ext.compile import compile
from tvm_ext.kernels import quantize_int8

TYPES = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "int16": TensorProto.INT16}


def _quantize_model(tmp_path, dtype: str, zero_point: int, dequantize: bool):
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"], name="quantize")]
    if dequantize:  # a float model output: quantize -> dequantize
        nodes.append(helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["y"], name="dequantize"))
    out_type = TensorProto.FLOAT if dequantize else TYPES[dtype]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y" if dequantize else "q", out_type, [2, 8])],
        [numpy_helper.from_array(np.array(1 / 256, np.float32), "scale"),
         numpy_helper.from_array(np.array(zero_point, dtype), "zp")],
    )
    path = tmp_path / f"quantize_{dtype}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), str(path))
    return path


@pytest.mark.parametrize(("dtype", "zero_point"), [("uint8", 128), ("int16", -7), ("int8", 3)])
@pytest.mark.parametrize("dequantize", [False, True], ids=["quantized_output", "float_output"])
def test_quantize_linear_keeps_its_type_and_range(tmp_path, dtype, zero_point, dequantize):
    # Inputs in [-1, 1) over a 1/256 scale span [-256, 256) + zp: beyond int8 on both sides.
    bundle = compile(_quantize_model(tmp_path, dtype, zero_point, dequantize), "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    if not dequantize:
        assert f"{dtype}_t" in (bundle.out_dir / f"{bundle.plan.model}.h").read_text()


def test_quantize_kernel_clamps_to_its_output_type():
    from tvm import te

    x = te.placeholder((4,), "float32", name="x")
    assert quantize_int8(x, scale=1.0, zero_point=0).dtype == "int8"
    assert quantize_int8(x, scale=1.0, zero_point=0, dtype="uint8").dtype == "uint8"
