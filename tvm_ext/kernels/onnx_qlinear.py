"""TE definitions of ONNX's QLinearConv and QLinearMatMul, with ONNX's requantization computed the way
onnxruntime computes it.

ONNX defines y = saturate(round(acc * (x_scale * w_scale / y_scale)) + y_zero_point) with float scales and
rounding half to even; onnxruntime (MLAS) computes it in float32: the multiplier as (x_scale * w_scale) /
y_scale, each step rounded to float32; float32(acc) * multiplier; clamped to [qmin - zp, qmax - zp] in
float32; rounded half to even; plus the zero point. The kernels do exactly these IEEE float32 operations,
in that order, so the result equals onnxruntime's bit for bit for every int32 accumulator, including the
ones above 2^24 that float32 cannot hold exactly (both round them the same way), and including ties.
A fixed-point multiplier (TFLite's MultiplyByQuantizedMultiplier) would not: its 31-bit multiplier and
its rounding differ from float32's in tie and near-tie cases. On a core without an FPU the C compiler's
soft-float routines are IEEE-exact too, only slower: there the lowering asks for the bundle's integer helper of
the same bits instead (``integer_requantization``: packager/templates/fixed_point_requantize_float32.h.in;
on rv32imc 128 to 195 instructions per output fewer than soft float). Rounding half to even is computed from `floor`
(exact for every finite float, independent of the rounding mode); in a bundle a clamped value rounds with the
bundle's helper of small values instead (packager/templates/round_half_even_small.h.in): where the FPU has no
rounding instruction (cortex-m4f, soft float) one addition of 1.5 * 2^23 in the default rounding mode (round to
nearest, ties to even: the mode the float products and quotients before it already need to match onnxruntime),
exact for magnitudes up to 2^22; where it has one (cortex-m55) the same floors.

The accumulator is int32: sum((x - x_zero_point) * (w - w_zero_point)) (+ bias), padding counting as
the zero point (a padded tap contributes nothing). Scales and zero points are tensors (graph inputs or
constants): per-tensor (shape [] or [1]) or, for the weights, per output channel (QLinearConv: [M];
QLinearMatMul: per column of B, [N]). When the three scales are constants, the compiler computes the
multiplier per channel once, with the same float32 operations, and the kernel reads it; otherwise the
kernel computes it for each output element.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Optional, Union

import numpy as np
from tvm import te, tirx

from packager.fixed_point_c import (REQUANTIZE_FLOAT32, REQUANTIZE_FLOAT32_OP, ROUND_HALF_EVEN_SMALL,
                                   ROUND_HALF_EVEN_SMALL_OP, SATURATE_HALF_EVEN, SATURATE_HALF_EVEN_OP)

from .fixed_point import register_helper_op


def _bound_once(name: str, value: tirx.PrimExpr, body: Callable[[tirx.PrimExpr], tirx.PrimExpr]) -> tirx.PrimExpr:
    """``body(v)`` with ``v`` bound to the float32 ``value`` by a TIR Let (a C local variable named ``name``):
    computed once however often ``body`` reads it.
    Without it, each read copies ``value``'s expression, and the copies multiply where such expressions nest
    (a QDQ hard-swish's float epilogue read its convolution's requantized value some 60 times per output)."""
    bound = tirx.Var(name, "float32")
    return tirx.Let(bound, value, body(bound))


def round_half_to_even(value: tirx.PrimExpr) -> tirx.PrimExpr:
    """``value`` (float32) rounded to the nearest integer, ties to the even one, as float32: exact for every
    finite float (``value - floor(value)`` is exact). ``value`` and its floor are each computed once."""
    half = tirx.const(0.5, "float32")
    one = tirx.const(1.0, "float32")

    def rounded(unrounded: tirx.PrimExpr, below: tirx.PrimExpr) -> tirx.PrimExpr:
        fraction = unrounded - below
        below_is_odd = below - tirx.const(2.0, "float32") * tirx.floor(below * half) == one
        up = tirx.any(fraction > half, tirx.all(fraction == half, below_is_odd))
        return tirx.Select(up, below + one, below)

    return _bound_once("unrounded", value, lambda unrounded: _bound_once(
        "rounded_down", tirx.floor(unrounded), lambda below: rounded(unrounded, below)))


def _expand_round_half_even_small(call: tirx.PrimExpr) -> tirx.PrimExpr:
    """The bundle helper's value as ``round_half_to_even``'s floors (where no bundle helper is)."""
    return round_half_to_even(call.args[0]).astype("int32")


register_helper_op(ROUND_HALF_EVEN_SMALL_OP, ROUND_HALF_EVEN_SMALL, _expand_round_half_even_small)

ROUND_HALF_EVEN_SMALL_MAX = 1 << 22
"""The largest magnitude the bundle's rounding helper of small values takes (round_half_even_small.h.in's
contract: value + 1.5 * 2^23 must stay within [2^23, 2^24))."""


def _clamped_half_to_even(value: tirx.PrimExpr, zero_point: tirx.PrimExpr, low: tirx.PrimExpr,
                          high: tirx.PrimExpr) -> tirx.PrimExpr:
    """round_half_even(clamp(value, low - zero_point, high - zero_point)) + zero_point, int32 (float32 ``value``,
    int32 ``zero_point``, ``low`` and ``high``): clamped in float32 first (so no cast overflows; rounding is monotone
    and keeps integers, so clamping first equals clamping after), then rounded by the bundle's helper of small
    values (``ROUND_HALF_EVEN_SMALL_OP``)."""
    clamped = tirx.max(tirx.min(value, (high - zero_point).astype("float32")), (low - zero_point).astype("float32"))
    return tirx.call_intrin("int32", ROUND_HALF_EVEN_SMALL_OP, clamped) + zero_point


def _expand_saturate_half_even(call: tirx.PrimExpr) -> tirx.PrimExpr:
    """The bundle helper's value as the clamp and the rounding it replaces (where no bundle helper is)."""
    return _clamped_half_to_even(*call.args)


register_helper_op(SATURATE_HALF_EVEN_OP, SATURATE_HALF_EVEN, _expand_saturate_half_even)


def saturate_half_to_even(value: tirx.PrimExpr, zero_point: tirx.PrimExpr, dtype: str) -> tirx.PrimExpr:
    """ONNX's saturate(round(value) + zero_point) in ``dtype`` (float32 ``value``, int32 ``zero_point``): one call
    of the bundle's helper (packager/templates/saturate_half_even.h.in: where the core has an FPU and the DSP's
    saturations, a VCVTR in the default rounding mode, a saturating addition of the zero point and an SSAT; elsewhere
    ``_clamped_half_to_even``'s float clamp and rounding of small values), or outside a bundle that clamp and
    rounding (``_expand_saturate_half_even``). The clamp keeps every rounded magnitude within [min - zero_point,
    max - zero_point], at most ``dtype``'s span from 0 for a zero point in ``dtype``'s range, and the rounding of
    small values takes at most 2^22 (beyond it the result is wrong, not only inexact), so ``dtype`` may span no more
    than 2^22."""
    info = np.iinfo(dtype)
    assert int(info.max) - int(info.min) <= ROUND_HALF_EVEN_SMALL_MAX, f"{dtype}: clamp bounds past the helper's 2^22"
    low, high = (tirx.const(int(bound), "int32") for bound in (info.min, info.max))
    return tirx.call_intrin("int32", SATURATE_HALF_EVEN_OP, value, zero_point, low, high).astype(dtype)


def sums_taps_unrolled(group_channels: int, pads: Sequence[int], kernel_hw: Sequence[int],
                       unrolled_taps: int) -> bool:
    """Whether ``qlinear_conv2d`` sums a convolution's window as one expression of its taps: one of one input channel
    per group (``group_channels`` 1: a depthwise one, or a convolution of a one-channel input) of no padding (the padded copy before it: ``tvm_ext.transform.qlinear_depthwise_padded``)
    and at most ``unrolled_taps`` taps (the backend's ``KernelSchedules.qlinear_unrolled_taps``). Each output's taps
    are then loads at constant offsets and multiply-accumulates, where a reduction's loops over the window's rows and
    columns cost a compare and a branch per tap and address arithmetic per row. Its kernel has no reduction, so it
    counts no MACs of its own (``tvm_ext.plan.macs``): its lowering declares them."""
    return group_channels == 1 and not any(pads) and int(np.prod(kernel_hw)) <= unrolled_taps


ZeroPoint = Union[te.Tensor, int]
"""A per-tensor zero point: a tensor (a graph input or a constant), or a constant's value, which the C then holds as
an immediate (its clamp bounds folded)."""


def _scalar(tensor: ZeroPoint) -> tirx.PrimExpr:
    """The one element of a per-tensor scale or zero point (shape [] or [1]); a zero point's value as int32."""
    if isinstance(tensor, int):
        return tirx.const(tensor, "int32")
    return tensor(*([0] * len(tensor.shape)))


def _per_channel(tensor: te.Tensor, channel: tirx.PrimExpr) -> tirx.PrimExpr:
    """Element ``channel`` of a per-channel tensor, or the one element of a per-tensor one."""
    return tensor[channel] if int(np.prod([int(d) for d in tensor.shape])) > 1 else _scalar(tensor)


def _multiplier(channel: tirx.PrimExpr, multiplier: Optional[te.Tensor], input_scale: Optional[te.Tensor],
                weight_scale: Optional[te.Tensor], output_scale: Optional[te.Tensor]) -> tirx.PrimExpr:
    """The float32 requantization multiplier of output channel ``channel``: read from ``multiplier`` ([1] or
    [channels]; the compiler computed it from constant scales with the same float32 operations), else
    computed from the three scale tensors (graph inputs) as (input_scale * weight_scale) / output_scale."""
    if multiplier is not None:
        return _per_channel(multiplier, channel)
    return _scalar(input_scale) * _per_channel(weight_scale, channel) / _scalar(output_scale)


def _expand_requantize_float32(call: tirx.PrimExpr) -> tirx.PrimExpr:
    """The integer helper's value as the float operations it replaces (its arithmetic where no bundle helper is)."""
    acc, multiplier, low, high = call.args
    unrounded = acc.astype("float32") * multiplier
    clamped = tirx.max(tirx.min(unrounded, high.astype("float32")), low.astype("float32"))
    return round_half_to_even(clamped).astype("int32")


register_helper_op(REQUANTIZE_FLOAT32_OP, REQUANTIZE_FLOAT32, _expand_requantize_float32)


def _requantized(accumulator: tirx.PrimExpr, multiplier: tirx.PrimExpr, output_zero_point: ZeroPoint,
                 dtype: str, integer_requantization: bool = False) -> tirx.PrimExpr:
    """onnxruntime's float32 requantization of one int32 accumulator (see the module docstring); with
    `integer_requantization` (cores without a floating-point unit) the bundle's integer helper of the same bits
    (`packager.fixed_point_c.REQUANTIZE_FLOAT32`)."""
    zero_point = _scalar(output_zero_point).astype("int32")
    if not integer_requantization:
        return saturate_half_to_even(accumulator.astype("float32") * multiplier, zero_point, dtype)
    info = np.iinfo(dtype)
    low, high = (tirx.const(int(bound), "int32") - zero_point for bound in (info.min, info.max))
    requantized = tirx.call_intrin("int32", REQUANTIZE_FLOAT32_OP, accumulator, multiplier, low, high)
    return (requantized + zero_point).astype(dtype)


def qlinear_conv2d(
    x: te.Tensor, w: te.Tensor, *, x_zero_point: ZeroPoint, w_zero_point: te.Tensor, y_zero_point: ZeroPoint,
    strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int], group: int,
    bias: Optional[te.Tensor] = None, multiplier: Optional[te.Tensor] = None, x_scale: Optional[te.Tensor] = None,
    w_scale: Optional[te.Tensor] = None, y_scale: Optional[te.Tensor] = None, integer_requantization: bool = False,
    zero_point_in_bias: bool = False, dtype: Optional[str] = None, channels_last: bool = False,
    units: Optional[int] = None, unrolled_taps: int = 0,
) -> te.Tensor:
    """QLinearConv, 2-D: x NCHW (int8 or uint8), w [M, C/group, kH, kW], bias int32 [M] -> NCHW in
    y_zero_point's type. ``pads`` is ONNX's (top, left, bottom, right) in elements. The requantization
    multiplier: ``multiplier``, or the three scales (see ``_multiplier``); ``integer_requantization``: in integers
    (``_requantized``). With ``zero_point_in_bias`` (weights of zero point 0, and ``bias`` holds the QLinearConv's
    bias minus x's zero point times each channel's weight sum: the lowering's ``folded_conv_bias``) the sums
    multiply the raw inputs, the padding's as x's zero point: the same int32 sums.

    Sums over several input channels per group are computed pixel by pixel with the output channels innermost (an
    [N, H, W, M] accumulator the output stage reads back into NCHW), so that the schedule's channel tiles
    (``tvm_ext.schedule.kernel_schedule``) hold several channels' sums while each input tap is loaded once and the
    core's MAC helpers take them (the DSP's dual_mac, RV32's mac_s8x4, at the NCHW channel stride). A depthwise
    one's (one input channel per group) stay in NCHW order: its tiles would share no load and only copy the loop
    body per border region (tv_shufflenet_s16_80_int8: cortex-m4f 228 K instructions fewer for 6.4 KB more code,
    rv32imc 215 K for 11 KB, over the price of code, backends.code_price).

    With ``channels_last`` (one group only) x is NHWC [N, H, W, C] and w OHWI [M, kH, kW, C], and the sums run over
    a window row's taps then channels, innermost: each window row is one contiguous run of kW * C inputs and
    weights (``tvm_ext.transform.qlinear_channels_last``), which the MAC helpers take a word at a time.

    With ``units`` (one group) the output has that many channels, fewer than the weight's: the weight rows past them
    are zeros that pad the channels to whole tiles of the backend's MAC helper (``LoweringContext.dense_unit_tile``);
    their sums are computed and never read.

    A depthwise one of no padding and at most ``unrolled_taps`` taps sums its window as one expression of its taps
    (``sums_taps_unrolled``), without a reduction."""
    if channels_last:
        n, height, width, channels = (int(d) for d in x.shape)
        out_channels, kernel_h, kernel_w, group_channels = (int(d) for d in w.shape)
        if group != 1:
            raise ValueError("a channels-last QLinearConv has one group")
    else:
        n, channels, height, width = (int(d) for d in x.shape)
        out_channels, group_channels, kernel_h, kernel_w = (int(d) for d in w.shape)
    out_h = (height + pads[0] + pads[2] - (kernel_h - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (width + pads[1] + pads[3] - (kernel_w - 1) * dilations[1] - 1) // strides[1] + 1
    outputs_per_group = out_channels // group
    x_zp = _scalar(x_zero_point).astype("int32")
    rc = te.reduce_axis((0, group_channels), name="rc")
    ry = te.reduce_axis((0, kernel_h), name="ry")
    rx = te.reduce_axis((0, kernel_w), name="rx")

    unrolled = sums_taps_unrolled(group_channels, pads, (kernel_h, kernel_w), unrolled_taps)

    def centered_x(b, channel, iy, ix):
        inside = tirx.all(iy >= 0, iy < height, ix >= 0, ix < width)
        value = (x[b, iy, ix, channel] if channels_last else x[b, channel, iy, ix]).astype("int32")
        if unrolled:  # unpadded: every tap inside (no test whose zero point the kernel would read for nothing)
            return value if zero_point_in_bias else value - x_zp
        if zero_point_in_bias:
            return tirx.if_then_else(inside, value, x_zp)
        return tirx.if_then_else(inside, value - x_zp, tirx.const(0, "int32"))

    def product(b, oy, ox, o, c, y, x_):
        """Output (b, o, oy, ox)'s product of its group's input channel c at window tap (y, x_)."""
        tap = centered_x(b, (o // outputs_per_group) * group_channels + c,
                         oy * strides[0] - pads[0] + y * dilations[0], ox * strides[1] - pads[1] + x_ * dilations[1])
        weight = (w[o, y, x_, c] if channels_last else w[o, c, y, x_]).astype("int32")
        if not zero_point_in_bias:
            weight = weight - _per_channel(w_zero_point, o).astype("int32")
        return tap * weight

    def accumulate(b, oy, ox, o):
        return te.sum(product(b, oy, ox, o, rc, ry, rx), axis=[ry, rx, rc] if channels_last else [rc, ry, rx])

    if group_channels > 1:  # channels innermost: [N, H, W, M]
        accumulator = te.compute((n, out_h, out_w, out_channels), accumulate, name="accumulator")
        summed = lambda b, o, oy, ox: accumulator[b, oy, ox, o]  # noqa: E731
    elif unrolled:  # a depthwise one's window as one sum
        accumulator = te.compute((n, out_channels, out_h, out_w), lambda b, o, oy, ox: functools.reduce(
            operator.add, (product(b, oy, ox, o, 0, y, x_) for y in range(kernel_h) for x_ in range(kernel_w))),
            name="accumulator")
        summed = lambda b, o, oy, ox: accumulator[b, o, oy, ox]  # noqa: E731
    else:  # a depthwise one: NCHW
        accumulator = te.compute((n, out_channels, out_h, out_w), lambda b, o, oy, ox: accumulate(b, oy, ox, o),
                                 name="accumulator")
        summed = lambda b, o, oy, ox: accumulator[b, o, oy, ox]  # noqa: E731
    dtype = dtype or str(y_zero_point.dtype)

    def output(b, o, oy, ox):
        total = summed(b, o, oy, ox) + (bias[o] if bias is not None else tirx.const(0, "int32"))
        return _requantized(total, _multiplier(o, multiplier, x_scale, w_scale, y_scale), y_zero_point, dtype,
                            integer_requantization)

    return te.compute((n, out_channels if units is None else units, out_h, out_w), output, name="qlinear_conv")


def qlinear_matmul(
    a: te.Tensor, b: te.Tensor, *, a_zero_point: ZeroPoint, b_zero_point: te.Tensor, y_zero_point: ZeroPoint,
    multiplier: Optional[te.Tensor] = None, a_scale: Optional[te.Tensor] = None,
    b_scale: Optional[te.Tensor] = None, y_scale: Optional[te.Tensor] = None, bias: Optional[te.Tensor] = None,
    integer_requantization: bool = False, dtype: Optional[str] = None,
) -> te.Tensor:
    """QLinearMatMul: a [..., M, K] times b [..., K, N] (int8 or uint8, batch axes broadcast as numpy does)
    -> [..., M, N] in y_zero_point's type; b's scale and zero point per tensor or per column [N]; the
    requantization multiplier and ``integer_requantization`` as in ``qlinear_conv2d``. With ``bias`` (int32 [N],
    com.microsoft QGemm's C) it is added to each accumulator of its column before the requantization. Zero points
    and ``dtype`` as in ``qlinear_conv2d``."""
    a_shape, b_shape = [int(d) for d in a.shape], [int(d) for d in b.shape]
    batch = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    rows, depth, columns = a_shape[-2], a_shape[-1], b_shape[-1]
    a_zp = _scalar(a_zero_point).astype("int32")
    k = te.reduce_axis((0, depth), name="k")

    def batch_index(shape: list[int], index: Sequence[tirx.PrimExpr]) -> list[tirx.PrimExpr]:
        """The batch indices of an operand of batch shape ``shape[:-2]`` (broadcast axes read element 0)."""
        own = shape[:-2]
        tail = list(index)[len(index) - len(own):] if own else []
        return [0 if size == 1 else i for size, i in zip(own, tail)]

    def accumulate(*index):
        *outer, i, j = index
        left = a[(*batch_index(a_shape, outer), i, k)].astype("int32") - a_zp
        right = b[(*batch_index(b_shape, outer), k, j)].astype("int32") - _per_channel(b_zero_point, j).astype("int32")
        return te.sum(left * right, axis=[k])

    shape = (*batch, rows, columns)
    accumulator = te.compute(shape, accumulate, name="accumulator")
    dtype = dtype or str(y_zero_point.dtype)
    def biased(*index):
        return accumulator(*index) + (bias[index[-1]] if bias is not None else tirx.const(0, "int32"))

    return te.compute(shape, lambda *index: _requantized(
        biased(*index), _multiplier(index[-1], multiplier, a_scale, b_scale, y_scale), y_zero_point, dtype,
        integer_requantization), name="qlinear_matmul")


def _along(tensor: Union[te.Tensor, int, float], index: Sequence[tirx.PrimExpr], axis: int) -> tirx.PrimExpr:
    """The element of a per-tensor (one element) or per-axis ([C] along ``axis``) tensor for ``index`` (empty
    for a scalar's, whose quantization is per tensor); a value (a per-tensor constant's) as an immediate: a zero
    point's int32, a scale's float32."""
    if isinstance(tensor, int):
        return tirx.const(tensor, "int32")
    if isinstance(tensor, float):
        return tirx.const(tensor, "float32")
    return _per_channel(tensor, index[axis]) if index else _scalar(tensor)


def quantize_linear(data: te.Tensor, scale: Union[te.Tensor, float], zero_point: ZeroPoint, *, axis: int,
                    dtype: Optional[str] = None) -> te.Tensor:
    """ONNX QuantizeLinear, per tensor or per axis, as onnxruntime computes it: saturate(round(x / scale) +
    zero_point) in zero_point's type (``dtype`` where it is a value), the float32 quotient rounded half to even.
    ``scale`` and ``zero_point`` are tensors (constants or graph inputs), or a per-tensor constant's values (the
    C's immediates: the float32 scale exactly, tvm_ext.codegen.exact_float_constants)."""
    dtype = dtype or str(zero_point.dtype)
    return te.compute(data.shape, lambda *i: saturate_half_to_even(
        data(*i) / _along(scale, i, axis), _along(zero_point, i, axis).astype("int32"), dtype), name="quantize_linear")


def dequantize_linear(data: te.Tensor, scale: te.Tensor, zero_point: te.Tensor, *, axis: int) -> te.Tensor:
    """ONNX DequantizeLinear, per tensor or per axis, as onnxruntime computes it: float32(q - zero_point) *
    scale in float32 (tensors as in ``quantize_linear``)."""
    return te.compute(data.shape, lambda *i: (data(*i).astype("int32") - _along(zero_point, i, axis).astype("int32"))
                      .astype("float32") * _along(scale, i, axis), name="dequantize_linear")
