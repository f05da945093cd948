"""ONNX's and onnxruntime's QLinear operators: our frontend's markers (``tvm_ext.frontend.onnx_ops.qlinear_ops``)
-> one kernel each, with onnxruntime's arithmetic: QLinearConv and QLinearMatMul (and QGemm, the QLinearMatMul
marker with a bias) of ``tvm_ext.kernels.onnx_qlinear``, QLinearAdd and QLinearMul of
``tvm_ext.kernels.onnxruntime_elementwise``, the two average pools of ``tvm_ext.kernels.onnxruntime_pool``,
QLinearSoftmax of ``tvm_ext.kernels.onnxruntime_softmax``, QLinearLeakyRelu a lookup in the table of
``tvm_ext.kernels.onnxruntime_lookup`` (fusable after the kernel computing its input, as TFLite's LEAKY_RELU).

The marker's tensor operands are the node's inputs: constants stay Relax constants, the others must be
tensors the pass has lowered (a model input, or an integer result of another kernel). The elementwise,
pooling and softmax operators need constant scales and zero points (the kernels' parameters are computed at
compile time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional, Union

import numpy as np

from tvm import relax, tirx
from tvm.ir.expr import Constant

from ...frontend.onnx_ops.qlinear_ops import (MARKERS, QLINEAR_ADD, QLINEAR_AVERAGE_POOL, QLINEAR_CONV,
                                              QLINEAR_CONV_CHANNELS_LAST, QLINEAR_GLOBAL_AVERAGE_POOL, QLINEAR_MATMUL,
                                              QLINEAR_LEAKY_RELU, QLINEAR_MUL, QLINEAR_SOFTMAX)
from ...kernels.onnx_qlinear import qlinear_conv2d, qlinear_matmul, sums_taps_unrolled
from ...kernels.onnxruntime_elementwise import (qlinear_add, qlinear_add_parameters, qlinear_mul, qlinear_mul_ratio,
                                                vector_is_second)
from ...kernels.onnxruntime_lookup import leaky_relu_table
from ...kernels.onnxruntime_pool import global_average_multiplier, qlinear_average_pool, qlinear_global_average_pool
from ...kernels.onnxruntime_softmax import output_multiplier, qlinear_softmax, softmax_table
from ...layers import DECLARED_MACS_ATTR, UNFUSED_ATTR
from .graph import describe, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .mac import padded_channels
from .tables import lookup_call


def marker_of(value: relax.Expr) -> str | None:
    """The marker symbol ``value`` calls (one of ``MARKERS``), else None."""
    if not is_call_to(value, "relax.call_dps_packed"):
        return None
    symbol = getattr(value.args[0], "global_symbol", None)
    return symbol if symbol in MARKERS else None


def tensor_operand(tensor: relax.Expr, ctx: LoweringContext) -> Union[relax.Expr, Mismatch]:
    """A kernel operand for ``tensor``: the constant it is, or its lowered tensor; a Mismatch naming what
    computes it otherwise (a float-path value)."""
    value = ctx.graph.value_of(tensor)
    if isinstance(value, Constant):
        return value
    if tensor in ctx.lowered:
        return ctx.lowered[tensor]
    return Mismatch(describe(value))


def _completes(value: relax.Expr, _ctx: LoweringContext) -> bool:
    return marker_of(value) is not None


def _scalar(operand: relax.Expr) -> Optional[float]:
    """The one value of a constant scale or zero point, else None."""
    if not isinstance(operand, Constant) or operand.value.numpy().size != 1:
        return None
    return operand.value.numpy().reshape(-1)[0].item()


def _quantization(operands: dict, *prefixes: str) -> Optional[list[tuple[float, int]]]:
    """(scale, zero point) of each named operand, all constants of one value; else None."""
    pairs = [(_scalar(operands[f"{p}_scale"]), _scalar(operands[f"{p}_zero_point"])) for p in prefixes]
    return None if any(None in pair for pair in pairs) else [(float(s), int(z)) for s, z in pairs]


def _out_dtype(operands: dict, prefix: str) -> str:
    return str(operands[f"{prefix}_zero_point"].ty.dtype)


def _mac(marker: str, call: relax.Call, operands: dict, geometry: list,
         ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
    """QLinearConv or QLinearMatMul (with QGemm's bias): the kernel reads the scales' multiplier when they are
    constants, else the three scales; a QLinearConv the backend's own kernel takes is that kernel's
    (`_own_conv_call`); a channels-last one's (an NHWC input, ``tvm_ext.transform.qlinear_channels_last``) reads
    its constant weights permuted to OHWI."""
    data_name, _, _, weight_name, *_ = _OPERANDS[marker]
    data, weight = operands.pop(data_name), operands.pop(weight_name)
    scale_names = [name for name in operands if name.endswith("_scale")]
    multiplier = _constant_multiplier(*(operands[name] for name in scale_names))
    if marker == QLINEAR_CONV and multiplier is not None:
        own = _own_conv_call(call, data, weight, operands, geometry, multiplier.value.numpy(), ctx)
        if own is not None:
            return own
    if multiplier is not None:
        operands = {name: value for name, value in operands.items() if name not in scale_names}
        operands["multiplier"] = multiplier
    if ctx.integer_requantization:
        operands["integer_requantization"] = True
    folded = _folded_operands(weight, operands) if marker != QLINEAR_MATMUL else None
    operands = _immediate_zero_points(operands)
    if marker == QLINEAR_MATMUL:
        return KernelCall("QLinearMatMul", call, qlinear_matmul, (data, weight), operands)
    strides, pads, dilations = ([int(v) for v in shape.values] for shape in geometry[:3])
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": int(geometry[3].value)}
    if marker == QLINEAR_CONV_CHANNELS_LAST:  # its constant weights OHWI, as its NHWC input
        weight = relax.const(np.ascontiguousarray(weight.value.numpy().transpose(0, 2, 3, 1)))
        attrs["channels_last"] = True
    if folded is not None:
        operands = {**operands, "bias": relax.const(folded), "zero_point_in_bias": True}
        padded = _whole_tiles(call, data, weight, attrs["group"], ctx)
        if padded is not None:
            weight, attrs["units"] = padded, int(weight.value.numpy().shape[0])
    attrs["unrolled_taps"] = ctx.qlinear_unrolled_taps
    return KernelCall("QLinearConv", call, qlinear_conv2d, (data, weight), {**operands, **attrs},
                      func_attrs=_unrolled_window_attrs(call, weight, attrs))


def _unrolled_window_attrs(call: relax.Call, weight: relax.Expr, attrs: dict) -> dict:
    """A depthwise QLinearConv whose kernel sums its window's taps as one expression
    (``tvm_ext.kernels.onnx_qlinear.sums_taps_unrolled``): its MACs declared (its kernel has no reduction to count
    them: ``tvm_ext.plan.macs``, DECLARED_MACS_ATTR) and the kernel kept unfused (UNFUSED_ATTR: fused, as an
    elementwise kernel, into the copy after it, its declared MACs would be lost with its PrimFunc). Else none."""
    shape = [int(d) for d in weight.ty.shape.values]
    if attrs.get("channels_last") or not sums_taps_unrolled(shape[1], attrs["pads"], shape[2:],
                                                            attrs["unrolled_taps"]):
        return {}
    outputs = int(np.prod([int(d) for d in call.ty_args[0].shape.values]))
    return {DECLARED_MACS_ATTR: tirx.IntImm("int64", outputs * int(np.prod(shape[1:]))), UNFUSED_ATTR: True}


def _whole_tiles(call: relax.Call, data: relax.Expr, weight: Constant, group: int,
                 ctx: LoweringContext) -> Optional[Constant]:
    """The constant weights [O, ...] of a QLinearConv of one group and several output pixels with zero rows up to
    whole tiles of the backend's MAC helper (``padded_channels``, ``LoweringContext.dense_unit_tile``), where O is
    not whole tiles already; else None. As TFLite's CONV_2D (``tvm_ext.transform.int8.conv``), the channel loop then
    runs the MAC helper's tiles instead of the scalar loop nest (the padded channels' sums computed and never
    read): cortex-m4f, yolo_small_64x80_int8's 3x3 convolutions of 21 to 99 channels."""
    values = weight.value.numpy()
    pixels = int(np.prod([int(d) for d in call.ty_args[0].shape.values[2:]]))
    padded = padded_channels(values, data, ctx.dense_unit_tile) if group == 1 and pixels > 1 else None
    if padded is None:
        return None
    return relax.const(np.concatenate([values, np.zeros((padded - values.shape[0], *values.shape[1:]), values.dtype)]))


def _immediate_zero_points(operands: dict) -> dict:
    """``operands`` with the data's and the output's zero points as their values where they are constants of one
    value (the kernel's immediates, ``tvm_ext.kernels.onnx_qlinear.ZeroPoint``) and the output type as ``dtype``."""
    immediate = {name: int(_scalar(operands[name])) for name in ("x_zero_point", "a_zero_point", "y_zero_point")
                 if name in operands and _scalar(operands[name]) is not None}
    return {**operands, **immediate, "dtype": _out_dtype(operands, "y")}


def _folded_operands(weight: relax.Expr, operands: dict) -> Optional[np.ndarray]:
    """The int32 bias with x's zero point folded in (``folded_conv_bias``) where the generic QLinearConv kernel
    can multiply raw inputs: constant weights of zero point 0, a constant per-tensor x zero point, a constant bias
    or none; else None."""
    x_zero_point, weight_zero_point, bias = (operands.get(name) for name in ("x_zero_point", "w_zero_point", "bias"))
    if (not isinstance(weight, Constant) or _scalar(x_zero_point) is None
            or not isinstance(weight_zero_point, Constant) or np.any(weight_zero_point.value.numpy() != 0)
            or (bias is not None and not isinstance(bias, Constant))):
        return None
    largest = 128 if str(x_zero_point.ty.dtype) == "int8" else 255
    return folded_conv_bias(weight.value.numpy(), None if bias is None else bias.value.numpy(),
                            int(_scalar(x_zero_point)), largest)


def folded_conv_bias(weights: np.ndarray, bias: Optional[np.ndarray], x_zero_point: int,
                     largest_input: int) -> Optional[np.ndarray]:
    """A QLinearConv's int32 bias minus ``x_zero_point`` times each output channel's weight sum (weights [O, ...] of
    zero point 0; ``bias`` [O] or None): with it the sums of raw inputs (the padding's read as the zero point) equal
    the QLinearConv's, where every partial sum stays within int32 (inputs of magnitude at most ``largest_input``:
    128 for int8, 255 for uint8); None where one may not."""
    rows = weights.reshape(weights.shape[0], -1).astype(np.int64)
    biases = np.zeros(weights.shape[0], np.int64) if bias is None else bias.astype(np.int64).reshape(-1)
    folded = biases - x_zero_point * rows.sum(axis=1)
    reach = np.abs(folded) + largest_input * np.abs(rows).sum(axis=1)  # every partial sum of raw products
    if int(reach.max(initial=0)) > np.iinfo(np.int32).max:
        return None
    return folded.astype(np.int32)


def _own_conv_call(call: relax.Call, data: relax.Expr, weight: relax.Expr, operands: dict, geometry: list,
                   multiplier: np.ndarray, ctx: LoweringContext) -> Optional[KernelCall]:
    """The backend's own kernel of a QLinearConv (``LoweringContext.qlinear_conv``), or None where it has none or
    the node is not one it takes: int8 data [1, C, H, W] and output, a constant int8 weight [O, C / group, KH, KW]
    of zero point 0, constant per-tensor zero points, float32 multipliers and a geometry the backend accepts, and
    sums that stay
    within int32 with the input's zero point folded into the bias (the kernel multiplies the raw int8 inputs, the
    padding's as the zero point)."""
    if ctx.qlinear_conv is None or ctx.qlinear_conv_fits is None:
        return None
    weights = weight.value.numpy() if isinstance(weight, Constant) else None
    zero_points = [_scalar(operands[name]) for name in ("x_zero_point", "y_zero_point")]
    weight_zero_point = operands["w_zero_point"]
    if (weights is None or weights.dtype != np.int8 or weights.ndim != 4 or str(data.ty.dtype) != "int8"
            or _out_dtype(operands, "y") != "int8" or None in zero_points
            or len(data.ty.shape.values) != 4 or int(data.ty.shape.values[0]) != 1
            or not isinstance(weight_zero_point, Constant) or np.any(weight_zero_point.value.numpy() != 0)):
        return None
    channels = weights.shape[0]
    multipliers = np.broadcast_to(multiplier.astype(np.float32).reshape(-1), (channels,)).copy()
    strides, pads, dilations = ([int(v) for v in shape.values] for shape in geometry[:3])
    group = int(geometry[3].value)
    out_hw = [int(d) for d in call.ty_args[0].shape.values[2:]]
    pointwise = weights.shape[2:] == (1, 1) and strides == [1, 1] and not any(pads) and group == 1
    if not ctx.qlinear_conv_fits(multipliers, pointwise, out_hw[1]):
        return None
    bias = operands.get("bias")
    if bias is not None and not isinstance(bias, Constant):
        return None
    folded = folded_conv_bias(weights, None if bias is None else bias.value.numpy(), int(zero_points[0]), 128)
    if folded is None:
        return None
    return KernelCall("QLinearConv", call, ctx.qlinear_conv, (
        data, relax.const(weights), relax.const(folded), relax.const(multipliers)),
        {"x_zero_point": int(zero_points[0]), "output_zero_point": int(zero_points[1]), "low": -128, "high": 127,
         "strides": strides, "pads": pads, "dilations": dilations, "group": group},
        func_attrs={DECLARED_MACS_ATTR: tirx.IntImm("int64", weights.size * out_hw[0] * out_hw[1])})


def _binary(marker: str, call: relax.Call, operands: dict, geometry: list,
            _ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
    quantization = _quantization(operands, "a", "b", "c")
    if quantization is None:
        return Mismatch("QLinearAdd or QLinearMul with scales or zero points that are not constants")
    (a_scale, a_zero), (b_scale, b_zero), (c_scale, c_zero) = quantization
    a, b, dtype = operands["a"], operands["b"], _out_dtype(operands, "c")
    if marker == QLINEAR_ADD:
        shapes = [[int(d) for d in t.ty.shape.values] for t in (a, b)]
        parameters = qlinear_add_parameters(quantization[0], quantization[1], quantization[2],
                                            vector_is_second(*shapes))
        return KernelCall("QLinearAdd", call, qlinear_add, (a, b), {"parameters": parameters, "dtype": dtype})
    return KernelCall("QLinearMul", call, qlinear_mul, (a, b), {
        "a_zero_point": a_zero, "b_zero_point": b_zero, "ratio": qlinear_mul_ratio(a_scale, b_scale, c_scale),
        "output_zero_point": c_zero, "dtype": dtype})


def _pool(marker: str, call: relax.Call, operands: dict, geometry: list,
          _ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
    quantization = _quantization(operands, "x", "y")
    if quantization is None:
        return Mismatch("a QLinear pool with scales or zero points that are not constants")
    (x_scale, x_zero), (y_scale, y_zero) = quantization
    x, dtype = operands["x"], _out_dtype(operands, "y")
    height, width = (int(d) for d in x.ty.shape.values[2:])
    if marker == QLINEAR_AVERAGE_POOL:
        kernel, strides, pads = ([int(v) for v in shape.values] for shape in geometry[:3])
        if kernel != [height, width] or any(pads):
            out_hw = [int(d) for d in call.ty_args[0].shape.values[2:]]
            return KernelCall("QLinearAveragePool", call, qlinear_average_pool, (x,), {
                "x_scale": x_scale, "x_zero_point": x_zero, "y_scale": y_scale, "y_zero_point": y_zero,
                "kernel": kernel, "strides": strides, "pads": pads, "output_hw": out_hw,
                "count_include_pad": bool(int(geometry[3].value)), "dtype": dtype})
        # onnxruntime pools a whole unpadded input as QLinearGlobalAveragePool does
    return KernelCall("QLinearGlobalAveragePool", call, qlinear_global_average_pool, (x,), {
        "x_zero_point": x_zero, "multiplier": global_average_multiplier(x_scale, y_scale, height * width),
        "y_zero_point": y_zero, "dtype": dtype})


def _softmax(marker: str, call: relax.Call, operands: dict, geometry: list,
             _ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
    quantization = _quantization(operands, "x", "y")
    if quantization is None:
        return Mismatch("a QLinearSoftmax with scales or zero points that are not constants")
    (x_scale, _), (y_scale, y_zero) = quantization
    x = operands["x"]
    table = relax.const(softmax_table(x_scale, int(x.ty.shape.values[-1])))
    return KernelCall("QLinearSoftmax", call, qlinear_softmax, (x, table), {
        "multiplier": output_multiplier(y_scale), "y_zero_point": y_zero, "dtype": _out_dtype(operands, "y")})


def _leaky_relu(marker: str, call: relax.Call, operands: dict, geometry: list,
                _ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
    """QLinearLeakyRelu (int8): one lookup per element in onnxruntime's table of its outputs."""
    quantization = _quantization(operands, "x", "y")
    if quantization is None:
        return Mismatch("a QLinearLeakyRelu with scales or zero points that are not constants")
    (x_scale, x_zero), (y_scale, y_zero) = quantization
    table = leaky_relu_table(x_scale, x_zero, y_scale, y_zero, float(geometry[0].value))
    return lookup_call("QLinearLeakyRelu", call, operands["x"], relax.const(table))


# Per marker: its tensor operands in ONNX order (the node's input names; a trailing optional one may be absent),
# how many geometry fields follow them, and the kernel call it becomes.
_OPERANDS = {
    QLINEAR_CONV: ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "bias"),
    QLINEAR_MATMUL: ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point",
                     "bias"),
    QLINEAR_ADD: ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "c_scale", "c_zero_point"),
    QLINEAR_AVERAGE_POOL: ("x", "x_scale", "x_zero_point", "y_scale", "y_zero_point"),
}
_OPERANDS[QLINEAR_CONV_CHANNELS_LAST] = _OPERANDS[QLINEAR_CONV]
_OPERANDS[QLINEAR_MUL] = _OPERANDS[QLINEAR_ADD]
_OPERANDS[QLINEAR_GLOBAL_AVERAGE_POOL] = _OPERANDS[QLINEAR_SOFTMAX] = _OPERANDS[QLINEAR_AVERAGE_POOL]
_OPERANDS[QLINEAR_LEAKY_RELU] = _OPERANDS[QLINEAR_AVERAGE_POOL]
_GEOMETRY_FIELDS = {QLINEAR_CONV: 4, QLINEAR_CONV_CHANNELS_LAST: 4, QLINEAR_AVERAGE_POOL: 4, QLINEAR_LEAKY_RELU: 1}
_KERNEL_CALLS: dict[str, Callable[[str, relax.Call, dict, list, LoweringContext], Union[KernelCall, Mismatch]]] = {
    QLINEAR_CONV: _mac, QLINEAR_CONV_CHANNELS_LAST: _mac, QLINEAR_MATMUL: _mac, QLINEAR_ADD: _binary,
    QLINEAR_MUL: _binary, QLINEAR_AVERAGE_POOL: _pool, QLINEAR_GLOBAL_AVERAGE_POOL: _pool, QLINEAR_SOFTMAX: _softmax,
    QLINEAR_LEAKY_RELU: _leaky_relu,
}


def _match(call: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    marker = marker_of(call)
    fields = list(call.args[1].fields)
    geometry_fields = _GEOMETRY_FIELDS.get(marker, 0)
    if geometry_fields:
        fields, geometry = fields[:-geometry_fields], fields[-geometry_fields:]
    else:
        geometry = []
    operands = dict(zip(_OPERANDS[marker], (tensor_operand(f, ctx) for f in fields)))
    mismatch = next((o for o in operands.values() if isinstance(o, Mismatch)), None)
    if mismatch is not None:
        return mismatch
    kernel_call = _KERNEL_CALLS[marker](marker, call, operands, geometry, ctx)
    return kernel_call if isinstance(kernel_call, Mismatch) else FixedCall(kernel_call)


def _constant_multiplier(input_scale: relax.Expr, weight_scale: relax.Expr,
                         output_scale: relax.Expr) -> Optional[relax.Constant]:
    """(input_scale * weight_scale) / output_scale per channel when all three are constants, computed in
    numpy's float32 (IEEE single, each step rounded: what the kernel would compute in C), else None."""
    if not all(isinstance(s, Constant) for s in (input_scale, weight_scale, output_scale)):
        return None
    first, weights, last = (s.value.numpy().astype(np.float32).reshape(-1) for s in
                            (input_scale, weight_scale, output_scale))
    return relax.const((first * weights) / last)


# No TFLite operator: ``operators`` lists those the model check accepts in int8 TFLite models.
LOWERING = Lowering(frozenset(), _completes, _match)
