"""A QDQ Add, Mul or Sub (DequantizeLinear, DequantizeLinear -> Add -> QuantizeLinear) rounds as onnxruntime
rounds it, bit for bit on every pair of int8 or uint8 inputs.

Before, the int8 pass lowered the group as TFLite's ADD and MUL (fixed-point multipliers, ties away from zero):
onnxruntime fuses it into its QLinearAdd (x86-64: two fused multiply-adds of the scale ratios, rounded half to
even) or QLinearMul, or, when the types differ, computes ONNX's dequantize, float add, quantize. The results
differed by one in a few outputs per thousand (on ties, a quarter of them with the scales below), which a
self-test on one random input did not see; in a MobileNetV2 each such difference then spread to thousands of
outputs.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxruntime_match import mismatches
from tvm_ext.compile import compile

ONNX_TYPE = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def _qdq_binary(path, op: str, a: tuple, b: tuple, out: tuple) -> None:
    """Graph inputs a and b, each (shape, dtype, scale, zero point), dequantized, combined by ``op`` and quantized
    to ``out`` (dtype, scale, zero point)."""
    constants, inputs = [], []
    for name, (shape, dtype, scale, zero_point) in (("a", a), ("b", b)):
        inputs.append(helper.make_tensor_value_info(name, ONNX_TYPE[np.dtype(dtype)], shape))
        constants += [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale"),
                      numpy_helper.from_array(np.array(zero_point, dtype), f"{name}_zero_point")]
    out_dtype, out_scale, out_zero_point = out
    constants += [numpy_helper.from_array(np.array(out_scale, np.float32), "y_scale"),
                  numpy_helper.from_array(np.array(out_zero_point, out_dtype), "y_zero_point")]
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_scale", "a_zero_point"], ["a_float"], name="dq_a"),
             helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero_point"], ["b_float"], name="dq_b"),
             helper.make_node(op, ["a_float", "b_float"], ["sum"], name="combine"),
             helper.make_node("QuantizeLinear", ["sum", "y_scale", "y_zero_point"], ["y"], name="q_y")]
    shape = list(np.broadcast_shapes(a[0], b[0]))
    graph = helper.make_graph(nodes, "qdq_binary", inputs,
                              [helper.make_tensor_value_info("y", ONNX_TYPE[np.dtype(out_dtype)], shape)], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def _every_pair_first(a_dtype, b_dtype, a_shape, b_shape):
    """Draws whose first is every pair of values (a on rows, b on columns of a [256, 256] input), the others
    uniform over each type's range."""

    def draw(rng):
        if not hasattr(draw, "done"):
            draw.done = True
            a_values = np.arange(np.iinfo(a_dtype).min, np.iinfo(a_dtype).max + 1)
            b_values = np.arange(np.iinfo(b_dtype).min, np.iinfo(b_dtype).max + 1)
            return {"a": np.repeat(a_values, 256).reshape(a_shape).astype(a_dtype),
                    "b": np.tile(b_values, 256).reshape(b_shape).astype(b_dtype)}
        return {name: rng.integers(np.iinfo(t).min, np.iinfo(t).max + 1, s).astype(t)
                for name, t, s in (("a", a_dtype, a_shape), ("b", b_dtype, b_shape))}

    return draw


# op, a, b (shape, dtype, scale, zero point), output (dtype, scale, zero point)
CASES = {
    # Scale ratios 1/2 and 1/4: a quarter of the sums are ties, where half to even and half away from zero differ.
    "add_int8_ties": ("Add", ((256, 256), np.int8, 0.02, 3), ((256, 256), np.int8, 0.01, -5), (np.int8, 0.04, 1)),
    # Scale ratios no power of two reaches: near-ties, where fused and separately rounded multiply-adds differ.
    "add_uint8_near_ties": ("Add", ((256, 256), np.uint8, 0.0213, 131), ((256, 256), np.uint8, 0.0171, 120),
                            (np.uint8, 0.0388, 125)),
    "mul_int8": ("Mul", ((256, 256), np.int8, 0.031, -7), ((256, 256), np.int8, 0.027, 2), (np.int8, 0.9, -3)),
    # Types that differ: onnxruntime fuses nothing and computes ONNX's dequantize, float add, quantize.
    "add_mixed_types": ("Add", ((256, 256), np.int8, 0.0213, 3), ((256, 256), np.uint8, 0.0171, 120),
                        (np.int8, 0.0388, -2)),
    # An operator onnxruntime never fuses: ONNX's dequantize, float subtract, quantize.
    "sub_int8": ("Sub", ((256, 256), np.int8, 0.0213, 3), ((256, 256), np.int8, 0.0171, -5), (np.int8, 0.0388, -2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_qdq_binary_group_equals_onnxruntime_on_every_pair_of_inputs(tmp_path, case):
    op, a, b, out = CASES[case]
    path = tmp_path / f"{case}.onnx"
    _qdq_binary(path, op, a, b, out)
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 8, _every_pair_first(a[1], b[1], a[0], b[0])) == []


@pytest.mark.parametrize(("a_shape", "b_shape"), [((1, 8, 16, 16), (1, 8, 1, 1)), ((1,), (4, 64)), ((4, 1, 64), (4, 5, 1))])
def test_broadcast_qdq_add_equals_onnxruntime(tmp_path, a_shape, b_shape):
    # onnxruntime's broadcast loop repeats one operand's value across the other's innermost run: it then takes the
    # repeated operand's product into the constant part first, which rounds differently.
    path = tmp_path / "broadcast_add.onnx"
    _qdq_binary(path, "Add", (a_shape, np.uint8, 0.0213, 131), (b_shape, np.uint8, 0.0171, 120), (np.uint8, 0.0388, 125))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 200) == []


def _int8_quantization(constants: list, name: str, scale: float, zero_point: int) -> list[str]:
    """The names of a QuantizeLinear/DequantizeLinear's scale and int8 zero point, `name`_scale and
    `name`_zero_point, whose per-tensor initializers (`scale`, `zero_point`) it appends to `constants`."""
    constants.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale"),
                      numpy_helper.from_array(np.array(zero_point, np.int8), f"{name}_zero_point")])
    return [f"{name}_scale", f"{name}_zero_point"]


def _qdq_mul_add_hard_swish(path) -> None:
    """x, w (int8) -> QDQ Mul -> QDQ Add of x -> QDQ HardSwish -> y: the residual tail of a squeeze-excite block
    (PyTorch's ``hardswish(x + y * gate)``) as onnxruntime's quantize_static writes it; one kernel, whose
    hard-swish reads the Add's rounded value twice."""
    constants = []
    quantization = functools.partial(_int8_quantization, constants)

    node = helper.make_node
    nodes = [node("DequantizeLinear", ["x", *quantization("x", 0.05, 3)], ["x_float"]),
             node("DequantizeLinear", ["w", *quantization("w", 0.04, -2)], ["w_float"]),
             node("Mul", ["x_float", "w_float"], ["product"]),
             node("QuantizeLinear", ["product", *quantization("p", 0.03, -5)], ["p"]),
             node("DequantizeLinear", ["p", "p_scale", "p_zero_point"], ["p_float"]),
             node("Add", ["x_float", "p_float"], ["sum"]),
             node("QuantizeLinear", ["sum", *quantization("s", 0.06, 1)], ["s"]),
             node("DequantizeLinear", ["s", "s_scale", "s_zero_point"], ["s_float"]),
             node("HardSwish", ["s_float"], ["swish"]),
             node("QuantizeLinear", ["swish", *quantization("y", 0.04, -100)], ["y"])]
    shape = [1, 4, 4, 4]
    graph = helper.make_graph(nodes, "qdq_mul_add_hard_swish",
                              [helper.make_tensor_value_info(n, TensorProto.INT8, shape) for n in ("x", "w")],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, shape)], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_qdq_mul_add_hard_swish_compiles_and_equals_onnxruntime(tmp_path):
    # Before, the compile failed (an internal error): the hard-swish's two copies of the rounded sum kept the same
    # let variables, a pass rewrote one copy only, and the stream order's analysis refused the second binding.
    path = tmp_path / "mul_add_hard_swish.onnx"
    _qdq_mul_add_hard_swish(path)
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 8) == []


def _qdq_add_scalar_constant(path) -> None:
    """x (float) -> QDQ -> Add of a rank-0 constant 1.0 through QuantizeLinear -> DequantizeLinear -> QDQ -> y:
    how onnxruntime's quantize_static writes the scalars of PyTorch's erf GELU (0.5 * x * (1 + erf(x / sqrt 2)))
    in a TorchScript export."""
    constants = []
    quantization = functools.partial(_int8_quantization, constants)

    node = helper.make_node
    nodes = [node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1.0, np.float32))),
             node("QuantizeLinear", ["one", *quantization("one", 0.0078, 0)], ["one_q"]),
             node("DequantizeLinear", ["one_q", "one_scale", "one_zero_point"], ["one_float"]),
             node("QuantizeLinear", ["x", *quantization("x", 0.05, 3)], ["x_q"]),
             node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_float"]),
             node("Add", ["x_float", "one_float"], ["sum"]),
             node("QuantizeLinear", ["sum", *quantization("y", 0.06, -2)], ["y_q"]),
             node("DequantizeLinear", ["y_q", "y_scale", "y_zero_point"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_add_scalar_constant",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_qdq_add_of_a_scalar_constant_compiles_and_equals_onnxruntime(tmp_path):
    # Before, the compile failed (an internal error, "integer modulo by zero"): the QuantizeLinear of a rank-0
    # tensor took its axis modulo the rank, and its kernel read the scale along an axis the scalar has not.
    path = tmp_path / "add_scalar_constant.onnx"
    _qdq_add_scalar_constant(path)
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert mismatches(bundle, path, 8) == []
