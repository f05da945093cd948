"""The int8 lowerings one by one: Before/Expected modules (TVM's style), the records a match returns,
and the registration table against the model check's int8 operator list."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tvm
from tvm import relax, topi
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ext.frontend.onnx_ops.qlinear_ops import QLINEAR_CONV, QLINEAR_GLOBAL_AVERAGE_POOL, QLINEAR_MATMUL
from tvm_ext.frontend.tflite_ops.lstm import CELL_CLIP_ATTR, LSTM, TIME_MAJOR_ATTR
from tvm_ext.frontend.tflite_ops.svdf import SVDF_OUTPUT, SVDF_STATE_UPDATE
from tvm_ext.kernels import (
    Rounding,
    add_int8,
    conv2d_int8,
    dequantize_int8,
    fully_connected_int8,
    max_pool2d_integer,
    quantize_int8,
)
from tvm_ext.kernels.fixed_point import shifts_right_only
from tvm_ext.kernels.lstm import LstmQuantization, lstm_int8, lstm_params, signed_sigmoid_table
from tvm_ext.kernels.onnx_qlinear import qlinear_conv2d, qlinear_matmul
from tvm_ext.kernels.onnxruntime_pool import global_average_multiplier, qlinear_global_average_pool
from tvm_ext.kernels.quant_params import ActivationRange, add_params, conv_multipliers, fully_connected_multiplier
from tvm_ext.kernels.svdf import (svdf_feature_multiplier, svdf_output, svdf_output_rows, svdf_state_update,
                                  svdf_time_multiplier)
from tvm_ext.kernels.transpose_conv import conv2d_transpose_int8
from tvm_ext.layers import STATE_OPERAND_ATTR, STATE_OPERANDS_ATTR
from tvm_ext.model_check.operator_support import TFLITE_INT8_OPS
from tvm_ext.transform import LowerQuantizedToInteger, UnsupportedOperatorError
from tvm_ext.transform.int8 import (LOWERINGS, conv, fully_connected, lowered_operators, lstm, onnx_qlinear,
                                    softmax, svdf, transpose_conv)
from tvm_ext.transform.int8.graph import Graph
from tvm_ext.transform.int8.lowering import FixedCall, KernelCall, LoweringContext, Mismatch
from tvm_ext.transform.int8.mac import Conv2DGeometry, MacKernel, fits_small_accumulator

from int8_expected import expected_module, kernel


def _expected(build, kinds: list[str]) -> tvm.IRModule:
    return expected_module(build, build.params, kinds)


def test_the_table_lowers_exactly_the_operators_the_model_check_accepts_for_int8():
    assert lowered_operators() == TFLITE_INT8_OPS
    claimed = [operator for lowering in LOWERINGS for operator in lowering.operators]
    assert len(claimed) == len(set(claimed)), "an operator registered by two lowerings"


# ------------------------------------------------------------------------------ Before / Expected


def test_max_pool_folds_the_following_clip_between_the_float_edges():
    """QUANTIZE, MAX_POOL_2D (+ int8 clip folded into its clamp), RESHAPE and DEQUANTIZE, one kernel each."""
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


def test_add_takes_its_float_relu_and_the_following_clip_as_its_clamp():
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


def _quantize_binding(build, shape, dtype: str = "int8") -> tuple[relax.Call, LoweringContext]:
    """The quantize ending main's one operator, and a context in which main's input (of `dtype`) is lowered."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, dtype))
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
    # TFLite's MAC count, which the kernel's guarded gather hides from the loops' count: 4x4x2 inputs x 3x3 taps x 4
    assert record.guarded_macs == 4 * 4 * 2 * 3 * 3 * 4



# SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM: the frontend's opaque float steps between dequantize and quantize
STATE_SCALE, STATE_ZP = np.float32(0.00390625), -3
FEATURE_SCALE, TIME_SCALE = np.float32(0.0117), np.float32(0.00021)
_OPAQUE = 8  # TVM's OpPatternKind kOpaque


def _quantize_to(bb, x, scale, zero_point, dtype: str) -> relax.Var:
    return bb.emit(relax.op.quantize(x, _const(scale, "float32"), _const(zero_point, "int32"), axis=0,
                                     out_dtype=dtype))


def test_svdf_state_update_matches_as_one_stateful_kernel_with_the_input_zero_point_folded():
    """SVDF's first step (input [1, 5], 4 filters, memory 3, int16 state): the kernel takes the lowered input, the
    state's reset value, the feature weights and -input_zero_point * each filter's weight sum; its memory is the
    state's width over the filters; its PrimFunc marks operand 1 as the state and is opaque."""
    rng = np.random.default_rng(13)
    feature = rng.integers(-127, 128, (4, 5)).astype(np.int8)  # [filters, input]
    initial = np.full((1, 12), STATE_ZP, np.int16)  # [batch, memory * filters], TFLM's reset value

    def build(bb, x):
        step = bb.emit(relax.call_dps_packed(SVDF_STATE_UPDATE, [
            _dq(bb, x, IN_SCALE, IN_ZP), _dq(bb, relax.const(feature), FEATURE_SCALE, 0),
            _dq(bb, relax.const(initial), STATE_SCALE, STATE_ZP)], relax.TensorType([1, 12], "float32")))
        return _quantize_to(bb, step, STATE_SCALE, STATE_ZP, "int16")

    quantize, ctx = _quantize_binding(build, (1, 5))
    matched = svdf.LOWERING.match(quantize, ctx)
    assert isinstance(matched, FixedCall)
    call = matched.call
    assert (call.kind, call.kernel) == ("SVDF", svdf_state_update)
    data, reset, weights, offsets = call.args
    assert data.same_as(next(iter(ctx.lowered.values())))
    np.testing.assert_array_equal(reset.value.numpy(), initial)
    np.testing.assert_array_equal(weights.value.numpy(), feature)
    np.testing.assert_array_equal(offsets.value.numpy(), -IN_ZP * feature.astype(np.int32).sum(axis=1))
    multiplier, shift = svdf_feature_multiplier(IN_SCALE, FEATURE_SCALE, STATE_SCALE, Rounding.DOUBLE)
    assert call.kwargs == {"memory": 3, "state_zero_point": STATE_ZP, "multiplier": multiplier, "shift": shift,
                           "rounding": Rounding.DOUBLE}
    assert call.func_attrs == {STATE_OPERAND_ATTR: 1, "op_pattern": _OPAQUE}


@pytest.mark.parametrize("inputs", [svdf.FEATURE_INPUTS_MAX, svdf.FEATURE_INPUTS_MAX + 1])
def test_svdf_state_update_is_refused_where_its_int32_feature_sums_could_overflow(inputs: int):
    """An SVDF's feature sums start at the folded offsets (up to 2^14 * I) and add raw int8 products (up to 2^14 * I):
    exact in int32 below 2^16 inputs. 65,535 inputs (every weight -128) lower; 65,536 are refused, naming why."""
    feature = np.full((4, inputs), -128, np.int8)
    initial = np.full((1, 12), STATE_ZP, np.int16)

    def build(bb, x):
        step = bb.emit(relax.call_dps_packed(SVDF_STATE_UPDATE, [
            _dq(bb, x, IN_SCALE, IN_ZP), _dq(bb, relax.const(feature), FEATURE_SCALE, 0),
            _dq(bb, relax.const(initial), STATE_SCALE, STATE_ZP)], relax.TensorType([1, 12], "float32")))
        return _quantize_to(bb, step, STATE_SCALE, STATE_ZP, "int16")

    quantize, ctx = _quantize_binding(build, (1, inputs))
    matched = svdf.LOWERING.match(quantize, ctx)
    if inputs <= svdf.FEATURE_INPUTS_MAX:
        assert isinstance(matched, FixedCall)
    else:
        assert matched == Mismatch("SVDF of 65,536 inputs (at most 65,535: its int32 feature sums could overflow)")


def _svdf_output_binding(time: np.ndarray, bias: np.ndarray) -> tuple[relax.Call, LoweringContext]:
    """SVDF's second step over an int16 state [1, 12] into 2 units (time weights [filters, memory]), quantized: the
    quantize binding and its lowering context."""

    def build(bb, state):
        step = bb.emit(relax.call_dps_packed(SVDF_OUTPUT, [
            _dq(bb, state, STATE_SCALE, STATE_ZP), _dq(bb, relax.const(time), TIME_SCALE, 0),
            _dq(bb, relax.const(bias), STATE_SCALE * TIME_SCALE, 0)], relax.TensorType([1, 2], "float32")))
        return _q(bb, step, OUT_SCALE, OUT_ZP)

    return _quantize_binding(build, (1, 12), "int16")


@pytest.mark.parametrize("fits", [True, False], ids=["zero_point_folded", "bias_too_large_to_fold"])
def test_svdf_output_matches_with_its_rank_and_the_state_zero_point_folded_into_the_bias_where_it_fits(fits: bool):
    """SVDF's second step (int16 state [1, 12], 4 filters of memory 3, 2 units: rank 2): the state zero point is
    folded into the bias (bias[u] - zp * the sum of unit u's time weights) and the kernel then subtracts none;
    where a folded entry would not fit int32 the bias stays as it is and the kernel subtracts the zero point."""
    rng = np.random.default_rng(17)
    time = rng.integers(1, 32768, (4, 3)).astype(np.int16)  # [filters, memory], positive: unit sums > 0
    bias = np.array([2**31 - 1 if not fits else 1234, -5678], np.int32)

    quantize, ctx = _svdf_output_binding(time, bias)
    matched = svdf.LOWERING.match(quantize, ctx)
    assert isinstance(matched, FixedCall)
    call = matched.call
    assert (call.kind, call.kernel) == ("SVDF", svdf_output)
    state, weights, bias_arg = call.args
    assert state.same_as(next(iter(ctx.lowered.values())))
    np.testing.assert_array_equal(weights.value.numpy(), time)
    unit_sums = time.astype(np.int64).reshape(2, 6).sum(axis=1)
    expected_bias = bias.astype(np.int64) - STATE_ZP * unit_sums if fits else bias
    np.testing.assert_array_equal(bias_arg.value.numpy(), expected_bias)
    multiplier, shift = svdf_time_multiplier(STATE_SCALE, TIME_SCALE, OUT_SCALE, Rounding.DOUBLE)
    reach = np.abs(time.astype(np.int64)).reshape(2, 6).sum(axis=1) * (32767 - STATE_ZP)
    assert call.kwargs == {"rank": 2, "state_zero_point": 0 if fits else STATE_ZP, "multiplier": multiplier,
                           "shift": shift, "output_zero_point": OUT_ZP, "rounding": Rounding.DOUBLE,
                           "right_shift_only": shifts_right_only(multiplier, shift),
                           "small_accumulator": fits_small_accumulator(reach, np.asarray(expected_bias))}
    assert call.func_attrs == {}


@pytest.mark.parametrize("state_types, unit_rows", [(("int8", "int16"), True), (("int8",), False)],
                         ids=["unit_rows", "int8_state_only"])
def test_svdf_output_is_written_unit_after_unit_for_the_state_types_the_backend_names(state_types: tuple[str, ...],
                                                                                      unit_rows: bool):
    """Where the backend names the state's type (``svdf_unit_rows``), SVDF's second step (int16 state [1, 12], 4
    filters of memory 3, rank 2) is ``svdf_output_rows`` over each unit's two filters' time weights in one row of 6,
    the same stage keywords but the rank, an opaque kernel; another state type keeps ``svdf_output``."""
    rng = np.random.default_rng(18)
    time = rng.integers(-300, 300, (4, 3)).astype(np.int16)
    bias = np.array([1234, -5678], np.int32)

    quantize, ctx = _svdf_output_binding(time, bias)
    ctx = dataclasses.replace(ctx, svdf_unit_rows=state_types)
    call = svdf.LOWERING.match(quantize, ctx).call
    assert call.kernel is (svdf_output_rows if unit_rows else svdf_output)
    if unit_rows:
        np.testing.assert_array_equal(call.args[1].value.numpy(), time.reshape(2, 6))
        assert "rank" not in call.kwargs and call.kwargs["state_zero_point"] == 0
        assert call.func_attrs == {"op_pattern": _OPAQUE}
    else:
        assert call.kwargs["rank"] == 2 and call.func_attrs == {}


@pytest.mark.parametrize("max_macs, unit_rows", [(None, True), (12, True), (11, False)],
                         ids=["any_size", "at_the_bound", "over_it"])
def test_svdf_output_takes_the_unit_rows_up_to_the_backends_time_product_macs(max_macs, unit_rows: bool):
    """The backend's bound on the unit rows (``svdf_unit_rows_max_macs``): SVDF's second step of 4 filters of memory
    3, batch 1 (12 time-product MACs a call) takes them at a bound of 12 or none, not at 11."""
    time = np.random.default_rng(19).integers(-300, 300, (4, 3)).astype(np.int16)
    quantize, ctx = _svdf_output_binding(time, np.array([1234, -5678], np.int32))
    ctx = dataclasses.replace(ctx, svdf_unit_rows=("int16",), svdf_unit_rows_max_macs=max_macs)
    assert svdf.LOWERING.match(quantize, ctx).call.kernel is (svdf_output_rows if unit_rows else svdf_output)


def test_lstm_matches_as_one_kernel_with_gate_offsets_folded_and_tflites_gate_order():
    """UNIDIRECTIONAL_SEQUENCE_LSTM (batch-major [1, 2, 3] input, 2 units, int8 hidden and int16 cell state): the
    kernel takes the lowered input, both reset values, each kind of weight stacked gate by gate in TFLite's
    order (input, forget, cell, output), per-unit offsets (the bias minus input_zero_point times the gate's
    centred input weights' sum; minus hidden_zero_point times the recurrent ones') and TFLite's sigmoid table;
    TFLM's parameters from every gate's own scales; the states are marked as operands 1 and 2, the kernel opaque."""
    rng = np.random.default_rng(19)
    hidden_scale, hidden_zp, cell_scale = np.float32(0.0071), 9, np.float32(2.0 ** -11)
    input_scales = np.float32([0.011, 0.012, 0.013, 0.014])
    recurrent_scales = np.float32([0.021, 0.022, 0.023, 0.024])
    weight_zps = (0, 2, 0, -1)
    input_weights = [rng.integers(-127, 128, (2, 3)).astype(np.int8) for _ in range(4)]  # [units, input]
    recurrent_weights = [rng.integers(-127, 128, (2, 2)).astype(np.int8) for _ in range(4)]  # [units, units]
    biases = [rng.integers(-3000, 3000, 2).astype(np.int32) for _ in range(4)]
    hidden = np.full((1, 2), hidden_zp, np.int8)
    cell = np.zeros((1, 2), np.int16)
    callee = relax.ExternFunc(LSTM).with_attrs({TIME_MAJOR_ATTR: False, CELL_CLIP_ATTR: 8.0})

    def build(bb, x):
        operands = [_dq(bb, x, IN_SCALE, IN_ZP), _dq(bb, relax.const(hidden), hidden_scale, hidden_zp),
                    _dq(bb, relax.const(cell), cell_scale, 0)]
        operands += [_dq(bb, relax.const(w), scale, zp)
                     for w, scale, zp in zip(input_weights, input_scales, weight_zps)]
        operands += [_dq(bb, relax.const(w), scale, zp)
                     for w, scale, zp in zip(recurrent_weights, recurrent_scales, weight_zps)]
        operands += [relax.const(b) for b in biases]
        step = bb.emit(relax.call_dps_packed(callee, operands, relax.TensorType([1, 2, 2], "float32")))
        return _q(bb, step, hidden_scale, hidden_zp)

    quantize, ctx = _quantize_binding(build, (1, 2, 3))
    matched = lstm.LOWERING.match(quantize, ctx)
    assert isinstance(matched, FixedCall)
    call = matched.call
    assert (call.kind, call.kernel) == ("UNIDIRECTIONAL_SEQUENCE_LSTM", lstm_int8)
    data, hidden_arg, cell_arg, stacked_input, stacked_recurrent, input_offsets, recurrent_offsets, table = call.args
    assert data.same_as(next(iter(ctx.lowered.values())))
    for arg, expected in [(hidden_arg, hidden), (cell_arg, cell), (stacked_input, np.stack(input_weights)),
                          (stacked_recurrent, np.stack(recurrent_weights)), (table, signed_sigmoid_table())]:
        np.testing.assert_array_equal(arg.value.numpy(), expected)
    zps = np.array(weight_zps, np.int64).reshape(4, 1, 1)
    np.testing.assert_array_equal(input_offsets.value.numpy(), np.stack(biases).astype(np.int64)
                                  - IN_ZP * (np.stack(input_weights).astype(np.int64) - zps).sum(axis=2))
    np.testing.assert_array_equal(recurrent_offsets.value.numpy(),
                                  -hidden_zp * (np.stack(recurrent_weights).astype(np.int64) - zps).sum(axis=2))
    quant = LstmQuantization(float(IN_SCALE), IN_ZP, tuple(map(float, input_scales)), weight_zps,
                             tuple(map(float, recurrent_scales)), weight_zps, float(hidden_scale), hidden_zp,
                             float(cell_scale))
    assert call.kwargs["params"] == lstm_params(quant, cell_clip=8.0, time_major=False, rounding=Rounding.DOUBLE)
    assert call.kwargs["products"].input_zero_point_folded and call.kwargs["products"].hidden_zero_point_folded
    assert call.func_attrs == {STATE_OPERANDS_ATTR: (1, 2), "op_pattern": _OPAQUE}

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
    per column when b is quantized per column; a's and y's constant zero points are the kernel's immediates (their
    values), b's stays a tensor operand."""
    b_scales = np.array([0.02, 0.031, 0.017], np.float32)
    weight, bias = _scalar(np.arange(-6, 6).reshape(4, 3), "int8"), _scalar([5, -7, 11], "int32")
    a_zero, b_zero, y_zero = _scalar(3, "int8"), _scalar(0, "int8"), _scalar(-4, "int8")
    call = _marker_call(QLINEAR_MATMUL, (2, 4), [2, 3], [None, _scalar(0.05, "float32"), a_zero, weight,
                                                         _scalar(b_scales, "float32"), b_zero,
                                                         _scalar(0.08, "float32"), y_zero, bias])
    assert (call.kind, call.kernel, call.args[1]) == ("QLinearMatMul", qlinear_matmul, weight)
    assert set(call.kwargs) == {"a_zero_point", "b_zero_point", "y_zero_point", "bias", "multiplier", "dtype"}
    assert (call.kwargs["a_zero_point"], call.kwargs["y_zero_point"], call.kwargs["dtype"]) == (3, -4, "int8")
    assert (call.kwargs["b_zero_point"], call.kwargs["bias"]) == (b_zero, bias)
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


def test_a_model_output_no_lowering_completes_is_an_unsupported_operator():
    """A float output that is not the DEQUANTIZE of a lowered tensor names its operator (it escaped the
    pass as an internal error before the lowerings returned records)."""
    @I.ir_module
    class FloatOutputBefore:
        @R.function
        def main(x: R.Tensor((1, 8), "int8")):
            with R.dataflow():
                gv = R.sigmoid(R.dequantize(x, R.const(0.05, "float32"), R.const(3, "int32"), axis=0))
                R.output(gv)
            return gv

    with pytest.raises(UnsupportedOperatorError, match=r"^tiny\.tflite: operator relax\.sigmoid at layer gv "):
        LowerQuantizedToInteger(model_name="tiny.tflite")(FloatOutputBefore)


def test_an_operator_with_an_int8_kernel_only_is_refused_on_int16_activations():
    """HARD_SWISH's kernel is a table of the 256 int8 inputs (TFLite Micro has no int16 HARD_SWISH): on 16x8
    activations (the quantizer's int16 candidate, a user's Relax module) it is refused, not lowered. (RELU and
    RSQRT were this case once: RELU's kernel clamped to int8, and every output above 127 LSB came out wrong; both
    have an int16 form now.)"""
    @I.ir_module
    class Int16HardSwishBefore:
        @R.function
        def main(x: R.Tensor((1, 8), "int16")):
            with R.dataflow():
                data = R.dequantize(x, R.const(0.001, "float32"), R.const(0, "int32"), axis=-1)
                relu6 = R.clip(R.add(data, R.const(3.0, "float32")), R.prim_value(0.0), R.prim_value(6.0))
                swish = R.divide(R.multiply(data, relu6), R.const(6.0, "float32"))
                gv = R.quantize(swish, R.const(0.001, "float32"), R.const(0, "int32"), axis=-1, out_dtype="int16")
                R.output(gv)
            return gv

    with pytest.raises(UnsupportedOperatorError,
                       match=r"^tiny: operator HARD_SWISH of int16 activations \(16x8\) at "):
        LowerQuantizedToInteger(model_name="tiny")(Int16HardSwishBefore)
