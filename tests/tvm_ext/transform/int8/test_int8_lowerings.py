"""The int8 lowerings one by one: Before/Expected modules (TVM's style), the records a match returns,
and the registration table against the model check's int8 operator list."""

from __future__ import annotations

import numpy as np
import pytest

import tvm
from tvm import relax, topi
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ext.frontend.onnx_ops.qlinear_ops import QLINEAR_CONV, QLINEAR_GLOBAL_AVERAGE_POOL, QLINEAR_MATMUL
from tvm_ext.kernels import (
    Rounding,
    add_int8,
    conv2d_int8,
    dequantize_int8,
    fully_connected_int8,
    max_pool2d_integer,
    quantize_int8,
)
from tvm_ext.kernels.onnx_qlinear import qlinear_conv2d, qlinear_matmul
from tvm_ext.kernels.onnxruntime_pool import global_average_multiplier, qlinear_global_average_pool
from tvm_ext.kernels.quant_params import ActivationRange, add_params, conv_multipliers, fully_connected_multiplier
from tvm_ext.kernels.transpose_conv import conv2d_transpose_int8
from tvm_ext.model_check.operator_support import TFLITE_INT8_OPS
from tvm_ext.transform import LowerQuantizedToInteger, UnsupportedOperatorError
from tvm_ext.transform.int8 import (LOWERINGS, conv, fully_connected, lowered_operators, onnx_qlinear, softmax,
                                    transpose_conv)
from tvm_ext.transform.int8.graph import Graph
from tvm_ext.transform.int8.lowering import FixedCall, KernelCall, LoweringContext, Mismatch
from tvm_ext.transform.int8.mac import Conv2DGeometry, MacKernel

from int8_expected import expected_module, kernel


def _expected(build, kinds: list[str]) -> tvm.IRModule:
    return expected_module(build, build.params, kinds)


def test_the_table_lowers_exactly_the_operators_the_model_check_accepts_for_int8():
    assert lowered_operators() == TFLITE_INT8_OPS
    claimed = [operator for lowering in LOWERINGS for operator in lowering.operators]
    assert len(claimed) == len(set(claimed)), "an operator registered by two lowerings"


# ------------------------------------------------------------------------------ Before / Expected
@I.ir_module
class PoolBefore:
    @R.function
    def main(x: R.Tensor((1, 7, 6, 3), "float32")):
        with R.dataflow():
            q = R.quantize(x, R.const(0.5, "float32"), R.const(-3, "int32"), axis=0, out_dtype="int8")
            pooled = R.nn.max_pool2d(q, pool_size=(2, 3), strides=(2, 2), padding=(0, 1, 1, 1), layout="NHWC")
            clipped = R.clip(pooled, -128, 60)
            flat = R.reshape(clipped, (1, 36))
            gv = R.dequantize(flat, R.const(0.5, "float32"), R.const(-3, "int32"), axis=0)
            R.output(gv)
        return gv


def test_max_pool_folds_the_following_clip_between_the_float_edges():
    """QUANTIZE, MAX_POOL_2D (+ int8 clip folded into its clamp), RESHAPE and DEQUANTIZE, one kernel each."""

    def build(bb, x):
        quantized = kernel(bb, "QUANTIZE", 0, quantize_int8, x, scale=0.5, zero_point=-3)
        pooled = kernel(bb, "MAX_POOL_2D", 1, max_pool2d_integer, quantized, activation=ActivationRange(-128, 60),
                         pool=[2, 3], strides=[2, 2], padding=[0, 1, 1, 1])
        flat = kernel(bb, "RESHAPE", 2, topi.reshape, pooled, [1, 36])
        return kernel(bb, "DEQUANTIZE", 3, dequantize_int8, flat, scale=0.5, zero_point=-3)

    build.params = [relax.Var("x", relax.TensorType((1, 7, 6, 3), "float32"))]
    expected = _expected(build, ["QUANTIZE", "MAX_POOL_2D", "RESHAPE", "DEQUANTIZE"])
    tvm.ir.assert_structural_equal(LowerQuantizedToInteger()(PoolBefore), expected)


A_SCALE, A_ZP = np.float32(0.05), 3
B_SCALE, B_ZP = np.float32(0.02), -7
ADD_SCALE, ADD_ZP = np.float32(0.06), -20


@I.ir_module
class AddBefore:
    @R.function
    def main(a: R.Tensor((1, 4), "int8"), b: R.Tensor((1, 4), "int8")):
        with R.dataflow():
            fa = R.dequantize(a, R.const(0.05, "float32"), R.const(3, "int32"), axis=0)
            fb = R.dequantize(b, R.const(0.02, "float32"), R.const(-7, "int32"), axis=0)
            total = R.nn.relu(R.add(fa, fb))
            q = R.quantize(total, R.const(0.06, "float32"), R.const(-20, "int32"), axis=0, out_dtype="int8")
            gv = R.clip(q, -100, 90)
            R.output(gv)
        return gv


def test_add_takes_its_float_relu_and_the_following_clip_as_its_clamp():
    relu = ActivationRange().with_float_clip(0.0, float("inf"), ADD_SCALE, ADD_ZP)
    assert relu == ActivationRange(ADD_ZP, 127)

    def build(bb, a, b):
        return kernel(bb, "ADD", 0, add_int8, a, b, lhs_zero_point=A_ZP, rhs_zero_point=B_ZP, output_zero_point=ADD_ZP,
                       params=add_params(A_SCALE, B_SCALE, ADD_SCALE, Rounding.DOUBLE),
                       activation=ActivationRange(ADD_ZP, 90), rounding=Rounding.DOUBLE)

    build.params = [relax.Var("a", relax.TensorType((1, 4), "int8")), relax.Var("b", relax.TensorType((1, 4), "int8"))]
    tvm.ir.assert_structural_equal(LowerQuantizedToInteger()(AddBefore), _expected(build, ["ADD"]))


# ------------------------------------------------------------------------------ matched records
IN_SCALE, IN_ZP = np.float32(0.0244801), -128
OUT_SCALE, OUT_ZP = np.float32(0.0133251), 5


def _const(value, dtype: str) -> relax.Expr:
    return relax.const(np.asarray(value, dtype))


def _dq(bb, x, scale, zp, axis=0) -> relax.Var:
    return bb.emit(relax.op.dequantize(x, _const(scale, "float32"), _const(zp, "int32"), axis=axis))


def _q(bb, x, scale, zp) -> relax.Var:
    return bb.emit(relax.op.quantize(x, _const(scale, "float32"), _const(zp, "int32"), axis=0, out_dtype="int8"))


def _quantize_binding(build, shape) -> tuple[relax.Call, LoweringContext]:
    """The quantize ending main's one operator, and a context in which main's input is lowered."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            output = bb.emit_output(build(bb, x))
        bb.emit_func_output(output)
    main = bb.get()["main"]
    graph = Graph(main)
    return graph.value_of(main.body.body), LoweringContext(graph, {x: x}, Rounding.DOUBLE)


def test_convolution_matches_as_a_record_of_its_kernel_parameters():
    """A per-channel CONV_2D with bias and fused RELU6: the record carries geometry, requantization and
    clamp; a bias that fits int16 is stored as int16."""
    rng = np.random.default_rng(5)
    weight = rng.integers(-128, 128, (3, 3, 2, 4)).astype(np.int8)  # HWIO
    filter_scales = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    bias = np.array([100, -2000, 30000, 7], np.int32)

    def build(bb, x):
        data = _dq(bb, x, IN_SCALE, IN_ZP)
        w = _dq(bb, relax.const(weight), filter_scales, np.zeros(4, np.int32), axis=3)
        conv_out = bb.emit(relax.op.nn.conv2d(data, w, strides=(2, 1), padding=(1, 0, 1, 2), dilation=(1, 1),
                                              data_layout="NHWC", kernel_layout="HWIO"))
        biased = bb.emit(relax.op.add(conv_out, _dq(bb, relax.const(bias), IN_SCALE * filter_scales,
                                                    np.zeros(4, np.int32), axis=0)))
        return _q(bb, bb.emit(relax.op.clip(biased, 0.0, 6.0)), OUT_SCALE, OUT_ZP)

    quantize, ctx = _quantize_binding(build, (1, 8, 8, 2))
    record = conv.LOWERING.match(quantize, ctx)
    assert isinstance(record, MacKernel)
    assert (record.kind, record.kernel, record.input_zero_point, record.output_zero_point) == \
        ("CONV_2D", conv2d_int8, IN_ZP, OUT_ZP)
    assert record.geometry == Conv2DGeometry(strides=(2, 1), padding=(1, 0, 1, 2), dilation=(1, 1))
    assert record.activation == ActivationRange().with_float_clip(0.0, 6.0, OUT_SCALE, OUT_ZP)
    np.testing.assert_array_equal(record.weight, weight)
    assert record.bias.value.numpy().dtype == np.int16
    np.testing.assert_array_equal(record.bias.value.numpy(), bias)
    multipliers, shifts = conv_multipliers(IN_SCALE, filter_scales, OUT_SCALE, Rounding.DOUBLE)
    np.testing.assert_array_equal(record.multipliers, multipliers)
    np.testing.assert_array_equal(record.shifts, shifts)


@pytest.mark.parametrize("per_channel", [False, True])
def test_fully_connected_matches_as_a_record_of_its_kernel_parameters(per_channel: bool):
    """FULLY_CONNECTED as the frontend writes it (TFLite's [O, I] weight transposed by permute_dims, a bias,
    a fused RELU): the record reads the weight back as [O, I], one multiplier per tensor (TFLite's
    fully-connected rounding of the double product of scales) or per output channel, and folds the input's
    zero point into the bias (every output sums every input)."""
    rng = np.random.default_rng(7)
    weight = rng.integers(-127, 128, (3, 5)).astype(np.int8)  # [O, I], as TFLite stores it
    filter_scales = np.array([0.011, 0.027, 0.019] if per_channel else [0.013], np.float32)
    bias = np.array([90, -1500, 20000], np.int32)

    def build(bb, x):
        data = _dq(bb, x, IN_SCALE, IN_ZP)
        zero_points = np.zeros(filter_scales.size, np.int32)
        transposed = bb.emit(relax.op.permute_dims(relax.const(weight), [1, 0]))  # [I, O]
        w = _dq(bb, transposed, filter_scales, zero_points, axis=1)
        biased = bb.emit(relax.op.add(bb.emit(relax.op.matmul(data, w)),
                                      _dq(bb, relax.const(bias), IN_SCALE * filter_scales, zero_points, axis=0)))
        return _q(bb, bb.emit(relax.op.nn.relu(biased)), OUT_SCALE, OUT_ZP)

    quantize, ctx = _quantize_binding(build, (2, 5))
    record = fully_connected.LOWERING.match(quantize, ctx)
    assert isinstance(record, MacKernel)
    assert (record.kind, record.kernel, record.input_zero_point, record.output_zero_point, record.channel_axis,
            record.folds_zero_point, record.geometry) == \
        ("FULLY_CONNECTED", fully_connected_int8, IN_ZP, OUT_ZP, 0, True, None)
    assert record.activation == ActivationRange().with_float_clip(0.0, float("inf"), OUT_SCALE, OUT_ZP)
    np.testing.assert_array_equal(record.weight, weight)
    np.testing.assert_array_equal(record.bias.value.numpy(), bias)
    if per_channel:
        multipliers, shifts = conv_multipliers(IN_SCALE, filter_scales, OUT_SCALE, Rounding.DOUBLE)
    else:
        multiplier, shift = fully_connected_multiplier(IN_SCALE, filter_scales[0], OUT_SCALE, Rounding.DOUBLE)
        multipliers, shifts = np.array([multiplier]), np.array([shift])
    np.testing.assert_array_equal(record.multipliers, multipliers)
    np.testing.assert_array_equal(record.shifts, shifts)


def test_transpose_conv_matches_as_a_record_of_its_kernel_parameters():
    """TRANSPOSE_CONV as TVM's converter writes it (TFLite's OHWI kernel as IOHW, dequantized per output
    channel on axis 1, SAME as explicit padding, output padding): the record reads the weight back as OHWI,
    makes the output padding negative bottom/right padding and does not fold the zero point (border outputs
    sum fewer taps)."""
    rng = np.random.default_rng(11)
    weight_ohwi = rng.integers(-127, 128, (4, 3, 3, 2)).astype(np.int8)
    filter_scales = np.array([0.01, 0.02, 0.015, 0.03], np.float32)

    def build(bb, x):
        w = _dq(bb, relax.const(np.ascontiguousarray(weight_ohwi.transpose(3, 0, 1, 2))), filter_scales,
                np.zeros(4, np.int32), axis=1)  # IOHW
        up = bb.emit(relax.op.nn.conv2d_transpose(_dq(bb, x, IN_SCALE, IN_ZP), w, strides=(2, 2),
                                                  padding=(1, 1, 1, 1), output_padding=(1, 1),
                                                  data_layout="NHWC", kernel_layout="IOHW"))
        return _q(bb, up, OUT_SCALE, OUT_ZP)

    quantize, ctx = _quantize_binding(build, (1, 4, 4, 2))
    record = transpose_conv.LOWERING.match(quantize, ctx)
    assert isinstance(record, MacKernel)
    assert (record.kind, record.kernel, record.input_zero_point, record.output_zero_point, record.channel_axis,
            record.folds_zero_point, record.bias) == \
        ("TRANSPOSE_CONV", conv2d_transpose_int8, IN_ZP, OUT_ZP, 0, False, None)
    assert record.geometry == Conv2DGeometry(strides=(2, 2), padding=(1, 1, 0, 0), dilation=(1, 1))
    np.testing.assert_array_equal(record.weight, weight_ohwi)
    multipliers, shifts = conv_multipliers(IN_SCALE, filter_scales, OUT_SCALE, Rounding.DOUBLE)
    np.testing.assert_array_equal(record.multipliers, multipliers)
    np.testing.assert_array_equal(record.shifts, shifts)


def _marker_call(marker: str, shape: tuple, out_shape: list, operands) -> KernelCall:
    """The kernel call onnx_qlinear matches for `marker` over an int8 input of `shape` (the first operand,
    given as None) and the constant `operands` after it."""
    def build(bb, x):
        fields = [x if value is None else value for value in operands]
        return bb.emit(relax.call_dps_packed(marker, relax.Tuple(fields), relax.TensorType(out_shape, "int8")))

    call, ctx = _quantize_binding(build, shape)
    matched = onnx_qlinear.LOWERING.match(call, ctx)
    assert isinstance(matched, FixedCall)
    return matched.call


def _scalar(value, dtype: str) -> relax.Constant:
    return relax.const(np.asarray(value, dtype))


def test_qgemm_matches_as_qlinear_matmul_with_one_float32_multiplier_per_column():
    """QGemm as the frontend writes it (the QLinearMatMul marker with its bias): the kernel reads
    (a_scale * b_scale) / y_scale as one constant, computed in float32 step by step as onnxruntime does,
    per column when b is quantized per column; the zero points stay tensor operands."""
    b_scales = np.array([0.02, 0.031, 0.017], np.float32)
    weight, bias = _scalar(np.arange(-6, 6).reshape(4, 3), "int8"), _scalar([5, -7, 11], "int32")
    a_zero, b_zero, y_zero = _scalar(3, "int8"), _scalar(0, "int8"), _scalar(-4, "int8")
    call = _marker_call(QLINEAR_MATMUL, (2, 4), [2, 3], [None, _scalar(0.05, "float32"), a_zero, weight,
                                                         _scalar(b_scales, "float32"), b_zero,
                                                         _scalar(0.08, "float32"), y_zero, bias])
    assert (call.kind, call.kernel, call.args[1]) == ("QLinearMatMul", qlinear_matmul, weight)
    assert set(call.kwargs) == {"a_zero_point", "b_zero_point", "y_zero_point", "bias", "multiplier"}
    assert (call.kwargs["a_zero_point"], call.kwargs["bias"]) == (a_zero, bias)
    expected = (np.float32(0.05) * b_scales) / np.float32(0.08)
    np.testing.assert_array_equal(call.kwargs["multiplier"].value.numpy(), expected)


def test_qlinear_conv_matches_with_its_geometry():
    """QLinearConv: strides, pads (ONNX's begin..end order), dilations and group from the marker's geometry."""
    weight = _scalar(np.ones((4, 2, 3, 3)), "int8")  # OIHW
    geometry = [relax.ShapeExpr([2, 1]), relax.ShapeExpr([1, 0, 1, 2]), relax.ShapeExpr([1, 1]),
                relax.prim_value(1)]
    call = _marker_call(QLINEAR_CONV, (1, 2, 8, 8), [1, 4, 4, 8],
                        [None, _scalar(0.05, "float32"), _scalar(1, "int8"), weight, _scalar(0.02, "float32"),
                         _scalar(0, "int8"), _scalar(0.1, "float32"), _scalar(2, "int8"), *geometry])
    assert (call.kind, call.kernel, call.args[1]) == ("QLinearConv", qlinear_conv2d, weight)
    assert {key: call.kwargs[key] for key in ("strides", "pads", "dilations", "group")} == \
        {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 1], "group": 1}
    np.testing.assert_array_equal(call.kwargs["multiplier"].value.numpy(),
                                  (np.float32(0.05) * np.float32(0.02)) / np.float32(0.1))


def test_qlinear_global_average_pool_matches_with_onnxruntimes_float32_multiplier():
    call = _marker_call(QLINEAR_GLOBAL_AVERAGE_POOL, (1, 3, 4, 5), [1, 3, 1, 1],
                        [None, _scalar(0.05, "float32"), _scalar(-3, "int8"), _scalar(0.07, "float32"),
                         _scalar(9, "int8")])
    assert (call.kind, call.kernel) == ("QLinearGlobalAveragePool", qlinear_global_average_pool)
    assert call.kwargs == {"x_zero_point": -3, "multiplier": global_average_multiplier(0.05, 0.07, 20),
                           "y_zero_point": 9, "dtype": "int8"}


@pytest.mark.parametrize("scale, zero_point, lowered", [
    (softmax.SOFTMAX_OUTPUT_SCALE, softmax.SOFTMAX_OUTPUT_ZERO_POINT, True),
    (np.float32(1 / 128), softmax.SOFTMAX_OUTPUT_ZERO_POINT, False),
    (softmax.SOFTMAX_OUTPUT_SCALE, 0, False),
])
def test_softmax_matches_only_tflites_output_quantization(scale, zero_point, lowered):
    def build(bb, x):
        return _q(bb, bb.emit(relax.op.nn.softmax(_dq(bb, x, IN_SCALE, IN_ZP), axis=-1)), scale, zero_point)

    quantize, ctx = _quantize_binding(build, (1, 10))
    record = softmax.LOWERING.match(quantize, ctx)
    if lowered:
        assert isinstance(record, FixedCall) and record.call.kind == "SOFTMAX"
    else:
        assert record == Mismatch("relax.nn.softmax")


@I.ir_module
class FloatOutputBefore:
    @R.function
    def main(x: R.Tensor((1, 8), "int8")):
        with R.dataflow():
            gv = R.sigmoid(R.dequantize(x, R.const(0.05, "float32"), R.const(3, "int32"), axis=0))
            R.output(gv)
        return gv


def test_a_model_output_no_lowering_completes_is_an_unsupported_operator():
    """A float output that is not the DEQUANTIZE of a lowered tensor names its operator (it escaped the
    pass as an internal error before the lowerings returned records)."""
    with pytest.raises(UnsupportedOperatorError, match=r"^tiny\.tflite: operator relax\.sigmoid at layer gv "):
        LowerQuantizedToInteger(model_name="tiny.tflite")(FloatOutputBefore)


@I.ir_module
class Int16RsqrtBefore:
    @R.function
    def main(x: R.Tensor((1, 8), "int16")):
        with R.dataflow():
            inverse = R.rsqrt(R.dequantize(x, R.const(0.001, "float32"), R.const(0, "int32"), axis=-1))
            gv = R.quantize(inverse, R.const(0.001, "float32"), R.const(0, "int32"), axis=-1, out_dtype="int16")
            R.output(gv)
        return gv


def test_an_operator_with_an_int8_kernel_only_is_refused_on_int16_activations():
    """RSQRT's kernel is a table of the 256 int8 inputs (TFLite Micro has no int16 RSQRT): on 16x8 activations (the
    quantizer's int16 candidate, a user's Relax module) it is refused, not lowered. (RELU was this case once: its
    kernel clamped to int8, and every output above 127 LSB came out wrong; it has an int16 form now.)"""
    with pytest.raises(UnsupportedOperatorError, match=r"^tiny: operator RSQRT of int16 activations \(16x8\) at "):
        LowerQuantizedToInteger(model_name="tiny")(Int16RsqrtBefore)
