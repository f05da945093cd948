"""Before/Expected tests (TVM's style) of the int8 lowerings: a QDQ module as the TFLite frontend imports the
operator (or the marker the ONNX frontend writes for onnxruntime's QLinear operators) (Before),
`LowerQuantizedToInteger`, and structural equality with the module of the kernel call the lowering stands for
(Expected), written from TFLite Micro's kernel parameters (onnxruntime's for QLinear). A change to what a
lowering emits (kernel, operands, zero points, multipliers, table, attributes) fails here. The MAC lowerings,
whose weights and biases the pass re-lays out as new constants, are tested by the records they match
(test_int8_lowerings.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import tvm
from tvm import relax, topi

from tvm_ext.frontend.onnx_ops.qlinear_ops import QLINEAR_ADD, QLINEAR_MUL
from tvm_ext.frontend.tflite_ops.l2_normalization import L2_NORMALIZATION
from tvm_ext.kernels import (Rounding, dequantize_int8, maximum_int8, minimum_int8, mul_int8, quantize_int8,
                             relu6_int8, relu_int8, squared_difference_int8, sub_int8)
from tvm_ext.kernels.activation import abs_integer
from tvm_ext.kernels.arg_max import arg_max_int8
from tvm_ext.kernels.batch_matmul import batch_matmul_int8
from tvm_ext.kernels.edges import requantize_integer
from tvm_ext.kernels.elementwise import div_int8
from tvm_ext.kernels.int8_tables import hard_swish_table, leaky_relu_table, logistic_table, rsqrt_table, tanh_table
from tvm_ext.kernels.l2_normalization import l2_normalization_int8
from tvm_ext.kernels.lookup import lookup_int8
from tvm_ext.kernels.onnxruntime_elementwise import (qlinear_add, qlinear_add_parameters, qlinear_mul,
                                                     qlinear_mul_ratio, vector_is_second)
from tvm_ext.kernels.prelu import PreluParams, prelu_int8
from tvm_ext.kernels.quant_params import (ActivationRange, abs_multiplier, add_params, div_multiplier,
                                          float_to_quantized, fully_connected_multiplier, hard_swish_params,
                                          leaky_relu_params, logistic_params, mul_params, quantize_multiplier,
                                          rescale_multiplier, rsqrt_multiplier, squared_difference_params)
from tvm_ext.kernels.reduce import max_or_min_int8, mean_or_sum_int8
from tvm_ext.kernels.reduce_params import mean_params, sum_params
from tvm_ext.kernels.copy_runs import concatenate_runs, resize_nearest_neighbor_int8
from tvm_ext.kernels.resize import resize_bilinear_int8
from tvm_ext.kernels.softmax_int16 import softmax_int16, softmax_int16_multiplier
from tvm_ext.layers import ELEMENTWISE_LOOKUP_ATTR
from tvm_ext.transform import LowerQuantizedToInteger
from tvm_ext.transform.int8.div import reciprocal_constants
from tvm_ext.transform.int8.softmax_int16 import OUTPUT_SCALE as SOFTMAX_INT16_SCALE
from tvm_ext.transform.int8.softmax_int16 import lut_constants as softmax_int16_tables
from tvm_ext.transform.int8.tables import table_constant

from int8_expected import expected_module, kernel, main_module

SHAPE = (1, 2, 3, 4)
ROUNDING = Rounding.DOUBLE  # the pass's default, TFLite's
A_SCALE, A_ZP = np.float32(0.05), 3
B_SCALE, B_ZP = np.float32(0.02), -7
OUT_SCALE, OUT_ZP = np.float32(0.06), -20
LOOKUP = {ELEMENTWISE_LOOKUP_ATTR: True}


def _const(value, dtype: str) -> relax.Constant:
    return relax.const(np.asarray(value, dtype))


def _dq(bb: relax.BlockBuilder, x: relax.Expr, scale, zero_point) -> relax.Var:
    return bb.emit(relax.op.dequantize(x, _const(scale, "float32"), _const(zero_point, "int32"), axis=0))


def _q(bb: relax.BlockBuilder, x: relax.Expr, scale, zero_point) -> relax.Var:
    return bb.emit(relax.op.quantize(x, _const(scale, "float32"), _const(zero_point, "int32"), axis=0,
                                     out_dtype="int8"))


def _inputs(count: int, dtype: str = "int8") -> list[relax.Var]:
    return [relax.Var(name, relax.TensorType(SHAPE, dtype)) for name in "ab"[:count]]


@dataclass(frozen=True)
class Case:
    """One operator `kind` of `inputs` inputs of `dtype`: `before(bb, *inputs)` emits its QDQ form,
    `expected(bb, *inputs)` the kernel calls the pass emits for it."""

    kind: str
    inputs: int
    before: Callable[..., relax.Expr]
    expected: Callable[..., relax.Expr]
    kinds: tuple[str, ...] = ()  # the operators of the expected calls, in order, when more than `kind`
    dtype: str = "int8"  # of the inputs

def _unary(kind: str, op: Callable[[relax.Expr], relax.Expr], expected: Callable[..., relax.Expr],
           out: tuple = (OUT_SCALE, OUT_ZP)) -> Case:
    return Case(kind, 1, lambda bb, a: _q(bb, bb.emit(op(_dq(bb, a, A_SCALE, A_ZP))), *out), expected)


def _binary(kind: str, op: Callable[[relax.Expr, relax.Expr], relax.Expr], expected: Callable[..., relax.Expr]
            ) -> Case:
    def before(bb, a, b):
        return _q(bb, bb.emit(op(_dq(bb, a, A_SCALE, A_ZP), _dq(bb, b, B_SCALE, B_ZP))), OUT_SCALE, OUT_ZP)

    return Case(kind, 2, before, expected)


def _lookup(kind: str, table: relax.Constant) -> Callable[..., relax.Expr]:
    return lambda bb, a: kernel(bb, kind, 0, lookup_int8, a, table, func_attrs=LOOKUP)


def _binary_kernel(kind: str, te_kernel, params) -> Callable[..., relax.Expr]:
    return lambda bb, a, b: kernel(bb, kind, 0, te_kernel, a, b, lhs_zero_point=A_ZP, rhs_zero_point=B_ZP,
                                   output_zero_point=OUT_ZP, params=params, activation=ActivationRange(),
                                   rounding=ROUNDING)


def _hard_swish(bb, a):
    x = _dq(bb, a, A_SCALE, A_ZP)
    relu6 = bb.emit(relax.op.clip(bb.emit(relax.op.add(x, _const(3.0, "float32"))), 0.0, 6.0))
    return _q(bb, bb.emit(relax.op.divide(bb.emit(relax.op.multiply(x, relu6)), _const(6.0, "float32"))),
              OUT_SCALE, OUT_ZP)


def _squared_difference(bb, a, b):
    difference = bb.emit(relax.op.subtract(_dq(bb, a, A_SCALE, A_ZP), _dq(bb, b, B_SCALE, B_ZP)))
    return _q(bb, bb.emit(relax.op.multiply(difference, difference)), OUT_SCALE, OUT_ZP)


def _int8_copy(kind: str, op: Callable[[relax.Expr], relax.Expr], te_kernel, *args, **params) -> Case:
    """An operator on the stored int8 values (no requantization), its result dequantized (the pass lowers a
    module that quantizes or dequantizes somewhere)."""
    def expected(bb, a):
        return kernel(bb, "DEQUANTIZE", 1, dequantize_int8, kernel(bb, kind, 0, te_kernel, a, *args, **params),
                      scale=A_SCALE, zero_point=A_ZP)

    return Case(kind, 1, lambda bb, a: _dq(bb, bb.emit(op(a)), A_SCALE, A_ZP), expected, (kind, "DEQUANTIZE"))


def _arg_max(kind: str, op, largest: bool) -> Case:
    """ARG_MAX / ARG_MIN of the model's quantized input (the frontend's argmax and cast)."""
    def before(bb, x):
        return bb.emit(relax.op.astype(bb.emit(op(_q(bb, x, A_SCALE, A_ZP), axis=3)), "int32"))

    def expected(bb, x):
        quantized = kernel(bb, "QUANTIZE", 0, quantize_int8, x, scale=A_SCALE, zero_point=A_ZP)
        return kernel(bb, kind, 1, arg_max_int8, quantized, axis=3, output_dtype="int32", largest=largest)

    return Case(kind, 1, before, expected, ("QUANTIZE", kind), "float32")


def _concatenation(bb, a, b):
    pieces = bb.emit(relax.Tuple([_dq(bb, a, A_SCALE, A_ZP), _dq(bb, b, A_SCALE, A_ZP)]))
    return _q(bb, bb.emit(relax.op.concat(pieces, axis=3)), A_SCALE, A_ZP)


def _split_piece(bb, a):
    pieces = bb.emit(relax.op.split(a, [1], axis=3))
    return _dq(bb, bb.emit(relax.TupleGetItem(pieces, 1)), A_SCALE, A_ZP)


def _pack(bb, a, b):
    return _dq(bb, bb.emit(relax.op.stack(bb.emit(relax.Tuple([a, b])), axis=1)), A_SCALE, A_ZP)


def _requantized(bb, a):
    return bb.emit(relax.op.quantize(_dq(bb, a, A_SCALE, A_ZP), _const(OUT_SCALE, "float32"),
                                     _const(OUT_ZP, "int32"), axis=0, out_dtype="int16"))


REDUCED_AXES = [1, 2]  # of SHAPE: 6 elements per output
# A nearest resize's source rows and columns: the same constant objects in Before and Expected, since the
# lowered module's constant_layers attribute is keyed by the constants themselves.
ROWS, COLUMNS = _const([0, 0, 1, 1], "int32"), _const([0, 1, 1, 2, 2, 2], "int32")


def _reduce(op, out: tuple) -> Callable[..., relax.Expr]:
    """MEAN / SUM / REDUCE_MAX / REDUCE_MIN over REDUCED_AXES, kept, quantized to `out`."""
    return lambda bb, a: _q(bb, bb.emit(op(_dq(bb, a, A_SCALE, A_ZP), axis=REDUCED_AXES, keepdims=True)), *out)


def _mean_or_sum(kind: str, op, params) -> Case:
    return Case(kind, 1, _reduce(op, (OUT_SCALE, OUT_ZP)), lambda bb, a: kernel(
        bb, kind, 0, mean_or_sum_int8, a, axes=REDUCED_AXES, keepdims=True, input_zero_point=A_ZP,
        output_zero_point=OUT_ZP, multiplier=params.multiplier, shift=params.shift, rounding=ROUNDING))


def _max_or_min(kind: str, op, maximum: bool) -> Case:
    """The extreme stored value: TFLite Micro requires the input's quantization for the output's."""
    return Case(kind, 1, _reduce(op, (A_SCALE, A_ZP)), lambda bb, a: kernel(
        bb, kind, 0, max_or_min_int8, a, axes=REDUCED_AXES, keepdims=True, maximum=maximum))


def _resize_bilinear(bb, a):
    resized = relax.op.image.resize2d(_dq(bb, a, A_SCALE, A_ZP), (4, 6), layout="NHWC", method="linear",
                                      coordinate_transformation_mode="half_pixel")
    return _q(bb, bb.emit(resized), A_SCALE, A_ZP)


def _resize_nearest(bb, a):
    rows = bb.emit(relax.op.take(_dq(bb, a, A_SCALE, A_ZP), ROWS, axis=1))
    return _q(bb, bb.emit(relax.op.take(rows, COLUMNS, axis=2)), A_SCALE, A_ZP)


def _batch_matmul(bb, a, b):
    """a [.., 3, 4] x b [.., 3, 4] with adj_y: the frontend's permute of b's last two axes."""
    rhs = bb.emit(relax.op.permute_dims(_dq(bb, b, B_SCALE, B_ZP), [0, 1, 3, 2]))
    return _q(bb, bb.emit(relax.op.matmul(_dq(bb, a, A_SCALE, A_ZP), rhs)), OUT_SCALE, OUT_ZP)


def _prelu(bb, a, b):
    x = _dq(bb, a, A_SCALE, A_ZP)
    negative = bb.emit(relax.op.multiply(x, _dq(bb, b, B_SCALE, B_ZP)))
    chosen = bb.emit(relax.op.where(bb.emit(relax.op.greater_equal(x, _const(0.0, "float32"))), x, negative))
    return _q(bb, chosen, OUT_SCALE, OUT_ZP)


def _softmax_16x8(bb, a):
    """16x8 SOFTMAX: an int16 input and output, zero points 0, the output scale TFLite Micro requires."""
    probabilities = bb.emit(relax.op.nn.softmax(_dq(bb, a, A_SCALE, 0), axis=-1))
    return bb.emit(relax.op.quantize(probabilities, _const(SOFTMAX_INT16_SCALE, "float32"), _const(0, "int32"),
                                     axis=0, out_dtype="int16"))


def _l2_normalization(bb, a):
    """The frontend's opaque float step, quantized as TFLite Micro writes it (1/128, zero point 0)."""
    step = bb.emit(relax.call_dps_packed(L2_NORMALIZATION, [_dq(bb, a, A_SCALE, A_ZP)],
                                         relax.TensorType(SHAPE, "float32")))
    return _q(bb, step, np.float32(1 / 128), 0)


def _qlinear(marker: str) -> Callable[..., relax.Expr]:
    """onnxruntime's QLinearAdd / QLinearMul as the ONNX frontend writes them: a marker of the node's inputs."""
    def before(bb, a, b):
        operands = [a, _const(A_SCALE, "float32"), _const(A_ZP, "int8"), b, _const(B_SCALE, "float32"),
                    _const(B_ZP, "int8"), _const(OUT_SCALE, "float32"), _const(OUT_ZP, "int8")]
        return bb.emit(relax.call_dps_packed(marker, relax.Tuple(operands), relax.TensorType(SHAPE, "int8")))

    return before


LOGISTIC_OUT, TANH_OUT = (np.float32(1 / 256), -128), (np.float32(1 / 128), 0)
ALPHA = np.float32(0.2)

CASES = [
    _unary("ABS", relax.op.abs, lambda bb, a: kernel(
        bb, "ABS", 0, abs_integer, a, input_zero_point=A_ZP, output_zero_point=OUT_ZP,
        multiplier=abs_multiplier(A_SCALE, OUT_SCALE, ROUNDING), rounding=ROUNDING)),
    _unary("RSQRT", relax.op.rsqrt, _lookup("RSQRT", table_constant(
        rsqrt_table, A_ZP, OUT_ZP, rsqrt_multiplier(A_SCALE, OUT_SCALE, ROUNDING), ROUNDING))),
    _unary("LEAKY_RELU", lambda x: relax.op.nn.leakyrelu(x, float(ALPHA)), _lookup("LEAKY_RELU", table_constant(
        leaky_relu_table, A_ZP, OUT_ZP, leaky_relu_params(A_SCALE, ALPHA, OUT_SCALE, ROUNDING), ROUNDING))),
    _unary("LOGISTIC", relax.op.sigmoid, _lookup("LOGISTIC", table_constant(
        logistic_table, logistic_params(A_SCALE, A_ZP), ROUNDING)), LOGISTIC_OUT),
    _unary("TANH", relax.op.tanh, _lookup("TANH", table_constant(
        tanh_table, logistic_params(A_SCALE, A_ZP), ROUNDING)), TANH_OUT),
    Case("HARD_SWISH", 1, _hard_swish, _lookup("HARD_SWISH", table_constant(
        hard_swish_table, A_ZP, OUT_ZP, hard_swish_params(A_SCALE, OUT_SCALE, ROUNDING)))),
    _binary("MAXIMUM", relax.op.maximum, lambda bb, a, b: kernel(bb, "MAXIMUM", 0, maximum_int8, a, b)),
    _binary("MINIMUM", relax.op.minimum, lambda bb, a, b: kernel(bb, "MINIMUM", 0, minimum_int8, a, b)),
    _binary("MUL", relax.op.multiply, _binary_kernel("MUL", mul_int8, mul_params(A_SCALE, B_SCALE, OUT_SCALE,
                                                                                  ROUNDING))),
    _binary("SUB", relax.op.subtract, _binary_kernel("SUB", sub_int8, add_params(A_SCALE, B_SCALE, OUT_SCALE,
                                                                                  ROUNDING))),
    Case("SQUARED_DIFFERENCE", 2, _squared_difference, lambda bb, a, b: kernel(
        bb, "SQUARED_DIFFERENCE", 0, squared_difference_int8, a, b, lhs_zero_point=A_ZP, rhs_zero_point=B_ZP,
        output_zero_point=OUT_ZP, params=squared_difference_params(A_SCALE, B_SCALE, OUT_SCALE, ROUNDING),
        rounding=ROUNDING)),
    _unary("RELU", relax.op.nn.relu, lambda bb, a: kernel(
        bb, "RELU", 0, relu_int8, a, input_zero_point=A_ZP, output_zero_point=OUT_ZP,
        multiplier=rescale_multiplier(A_SCALE, OUT_SCALE, ROUNDING),
        activation=ActivationRange().with_float_clip(0.0, float("inf"), OUT_SCALE, OUT_ZP), rounding=ROUNDING)),
    _unary("RELU6", lambda x: relax.op.clip(x, 0.0, 6.0), lambda bb, a: kernel(
        bb, "RELU6", 0, relu6_int8, a, bounds=ActivationRange(float_to_quantized(0.0, A_SCALE, A_ZP, "int8"),
                                                              float_to_quantized(6.0, A_SCALE, A_ZP, "int8")))),
    _binary("DIV", relax.op.divide, lambda bb, a, b: kernel(
        bb, "DIV", 0, div_int8, a, b, *reciprocal_constants(), lhs_zero_point=A_ZP,
        rhs_zero_point=B_ZP, output_zero_point=OUT_ZP, params=div_multiplier(A_SCALE, B_SCALE, OUT_SCALE, ROUNDING),
        activation=ActivationRange(), rounding=ROUNDING)),
    _arg_max("ARG_MAX", relax.op.argmax, largest=True),
    _arg_max("ARG_MIN", relax.op.argmin, largest=False),
    Case("CONCATENATION", 2, _concatenation, lambda bb, a, b: kernel(
        bb, "CONCATENATION", 0, concatenate_runs, [a, b], axis=3)),
    _int8_copy("TRANSPOSE", lambda x: relax.op.permute_dims(x, [0, 3, 1, 2]), topi.transpose, axes=[0, 3, 1, 2]),
    _int8_copy("PAD", lambda x: relax.op.nn.pad(x, (0, 0, 1, 2, 0, 1, 0, 0), pad_value=float(A_ZP)), topi.nn.pad,
               pad_before=[0, 1, 0, 0], pad_after=[0, 2, 1, 0], pad_value=A_ZP),
    _int8_copy("SQUEEZE", lambda x: relax.op.squeeze(x, [0]), topi.reshape, newshape=[2, 3, 4]),
    _int8_copy("EXPAND_DIMS", lambda x: relax.op.expand_dims(x, 1), topi.reshape, newshape=[1, 1, 2, 3, 4]),
    _int8_copy("SLICE", lambda x: relax.op.strided_slice(x, [1, 3], [0, 1], [2, 3]), topi.strided_slice,
               begin=[0, 1], end=[2, 3], strides=[1, 1], axes=[1, 3], assume_inbound=True),
    Case("SPLIT", 1, _split_piece, lambda bb, a: kernel(
        bb, "DEQUANTIZE", 1, dequantize_int8, kernel(bb, "SPLIT", 0, topi.strided_slice, a, begin=[1], end=[4],
                                                     strides=[1], axes=[3]), scale=A_SCALE, zero_point=A_ZP),
         ("SPLIT", "DEQUANTIZE")),
    Case("PACK", 2, _pack, lambda bb, a, b: kernel(
        bb, "DEQUANTIZE", 1, dequantize_int8, kernel(bb, "PACK", 0, topi.stack, [a, b], axis=1), scale=A_SCALE,
        zero_point=A_ZP), ("PACK", "DEQUANTIZE")),
    Case("QUANTIZE", 1, _requantized, lambda bb, a: kernel(
        bb, "QUANTIZE", 0, requantize_integer, a, input_zero_point=A_ZP,
        **dict(zip(("multiplier", "shift"), quantize_multiplier(float(A_SCALE) / float(OUT_SCALE), ROUNDING))),
        output_zero_point=OUT_ZP, out_dtype="int16", rounding=ROUNDING)),
    Case("RESHAPE", 1, lambda bb, a: _dq(bb, bb.emit(relax.op.reshape(a, (1, 24))), A_SCALE, A_ZP),
         lambda bb, a: kernel(bb, "DEQUANTIZE", 1, dequantize_int8, kernel(bb, "RESHAPE", 0, topi.reshape, a, [1, 24]),
                              scale=A_SCALE, zero_point=A_ZP), ("RESHAPE", "DEQUANTIZE")),
    _mean_or_sum("MEAN", relax.op.mean, mean_params(A_SCALE, OUT_SCALE, 6, ROUNDING)),
    _mean_or_sum("SUM", relax.op.sum, sum_params(A_SCALE, OUT_SCALE, ROUNDING)),
    _max_or_min("REDUCE_MAX", relax.op.max, maximum=True),
    _max_or_min("REDUCE_MIN", relax.op.min, maximum=False),
    Case("RESIZE_BILINEAR", 1, _resize_bilinear, lambda bb, a: kernel(
        bb, "RESIZE_BILINEAR", 0, resize_bilinear_int8, a, out_height=4, out_width=6, align_corners=False,
        half_pixel_centers=True, rounding=ROUNDING)),
    Case("RESIZE_NEAREST_NEIGHBOR", 1, _resize_nearest, lambda bb, a: kernel(
        bb, "RESIZE_NEAREST_NEIGHBOR", 0, resize_nearest_neighbor_int8, a, rows=ROWS, columns=COLUMNS)),
    Case("BATCH_MATMUL", 2, _batch_matmul, lambda bb, a, b: kernel(
        bb, "BATCH_MATMUL", 0, batch_matmul_int8, a, b, lhs_zero_point=A_ZP, rhs_zero_point=B_ZP, adj_x=False,
        adj_y=True, **dict(zip(("multiplier", "shift"), fully_connected_multiplier(A_SCALE, B_SCALE, OUT_SCALE,
                                                                                   ROUNDING))),
        output_zero_point=OUT_ZP, activation=ActivationRange(), rounding=ROUNDING)),
    Case("PRELU", 2, _prelu, lambda bb, a, b: kernel(
        bb, "PRELU", 0, prelu_int8, a, b, params=PreluParams(
            A_ZP, B_ZP, OUT_ZP, identity=rescale_multiplier(A_SCALE, OUT_SCALE, ROUNDING),
            alpha=mul_params(A_SCALE, B_SCALE, OUT_SCALE, ROUNDING).output), rounding=ROUNDING)),
    Case("SOFTMAX", 1, _softmax_16x8, lambda bb, a: kernel(
        bb, "SOFTMAX", 0, softmax_int16, a, *softmax_int16_tables(), rounding=ROUNDING,
        **dict(zip(("multiplier", "shift"), softmax_int16_multiplier(1.0, A_SCALE, ROUNDING)))), dtype="int16"),
    Case("L2_NORMALIZATION", 1, _l2_normalization, lambda bb, a: kernel(
        bb, "L2_NORMALIZATION", 0, l2_normalization_int8, a, input_zero_point=A_ZP, rounding=ROUNDING)),
    Case("QLinearAdd", 2, _qlinear(QLINEAR_ADD), lambda bb, a, b: kernel(
        bb, "QLinearAdd", 0, qlinear_add, a, b, dtype="int8", parameters=qlinear_add_parameters(
            (float(A_SCALE), A_ZP), (float(B_SCALE), B_ZP), (float(OUT_SCALE), OUT_ZP),
            vector_is_second(SHAPE, SHAPE)))),
    Case("QLinearMul", 2, _qlinear(QLINEAR_MUL), lambda bb, a, b: kernel(
        bb, "QLinearMul", 0, qlinear_mul, a, b, a_zero_point=A_ZP, b_zero_point=B_ZP, output_zero_point=OUT_ZP,
        ratio=qlinear_mul_ratio(float(A_SCALE), float(B_SCALE), float(OUT_SCALE)), dtype="int8")),
]


@pytest.mark.parametrize("case", CASES,
                         ids=[f"{case.kind}_16x8" if case.dtype == "int16" else case.kind for case in CASES])
def test_lowering_emits_the_kernel_call_of_tflite_micros_parameters(case: Case) -> None:
    before = main_module(case.before, _inputs(case.inputs, case.dtype))
    inputs = _inputs(case.inputs, case.dtype)
    expected = expected_module(case.expected, inputs, list(case.kinds or (case.kind,)))
    tvm.ir.assert_structural_equal(LowerQuantizedToInteger()(before), expected)
