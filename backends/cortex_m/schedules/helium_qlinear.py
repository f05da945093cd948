"""Helium's QLinearConv kernel: onnxruntime's QLinearConv of one NCHW int8 image (int8 weights of zero point 0,
constant scales) as calls of the vector helpers of `backends.cortex_m.helpers.templates.helium_qlinear.h.in`, the
kernel the int8 lowering writes for such a QLinearConv where the backend gives one
(`backends.backend.KernelSchedules.qlinear_conv`): a pointwise convolution (1x1, stride 1, unpadded, one group) one
call of `<prefix>_qlinear_pointwise_s8` per output channel (16 pixels per vector step), any other one call of
`<prefix>_qlinear_row_s8` per output channel and row (four pixels per vector, gathered stride apart, the padding's
lanes the input's zero point); both requantize as onnxruntime does, four lanes a step.

The generic kernel (`tvm_ext.kernels.onnx_qlinear.qlinear_conv2d`) sums four pixels at a time in scalar C, 6 to 17
instructions per MAC on a Cortex-M55; NCHW puts a channel's pixels side by side, so the helpers take them as the
lanes, each multiplied by the tap's one weight (VMLA by a scalar). Both compute onnxruntime's arithmetic bit for
bit: the int32 sum (the input's zero point folded into the bias at compile time, the padding read as the zero
point: the raw inputs' products then sum to the same int32), float32(sum) * multiplier, the clamp, ties to even
(the helpers' C unit test checks ties, sums past 2^24, windows, strides, dilations, padding and every tail).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tvm import te, tirx

from backends.cortex_m.helpers import HELIUM_QLINEAR_HELPERS
from backends.cortex_m.helpers.helium_c import qlinear_pointwise_helper_name, qlinear_row_helper_name
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

QLINEAR_POINTWISE_OP = "tvm_ext.qlinear_pointwise_s8"
# The call (out, x, w, channels, pixels, bias, multiplier, zero_point, low, high): out[p] for p < pixels,
# x[c * pixels + p] and w[c] for c < channels.
register_helper_call(QLINEAR_POINTWISE_OP, HELIUM_QLINEAR_HELPERS, qlinear_pointwise_helper_name, HelperAccess((
    PointerAccess(0, (Axis(Arg(4), 1),)),
    PointerAccess(1, (Axis(Arg(3), Arg(4)), Axis(Arg(4), 1))),
    PointerAccess(2, (Axis(Arg(3), 1),)),
)))
QLINEAR_ROW_OP = "tvm_ext.qlinear_row_s8"
# The call (out, x, w, channels, channel_stride, height, width, out_width, ...): out[ox] for ox < out_width and
# x[c * channel_stride + iy * width + ix] for c < channels, iy < height, ix < width (w: the kernel's constant
# weights, never in the arena).
register_helper_call(QLINEAR_ROW_OP, HELIUM_QLINEAR_HELPERS, qlinear_row_helper_name, HelperAccess((
    PointerAccess(0, (Axis(Arg(7), 1),)),
    PointerAccess(1, (Axis(Arg(3), Arg(4)), Axis(Arg(5), Arg(6)), Axis(Arg(6), 1))),
)))


def helium_qlinear_conv(x: te.Tensor, w: te.Tensor, bias: te.Tensor, multiplier: te.Tensor, *, x_zero_point: int,
                        output_zero_point: int, low: int, high: int, strides: Sequence[int], pads: Sequence[int],
                        dilations: Sequence[int], group: int) -> te.Tensor:
    """onnxruntime's QLinearConv of `x` (int8, NCHW, one image: [1, C, H, W]) by `w` (int8 [O, C / group, KH, KW],
    zero point 0) as a TE extern stage of helper calls (module docstring), each output channel o's sums started at
    `bias[o]` (int32 [O]: the QLinearConv's bias minus `x_zero_point` times the channel's weight sum), requantized
    by `multiplier[o]` (float32 [O], zero or normal: (x_scale * w_scale[o]) / y_scale in float32), clamped to
    [low, high] (int8 bounds) around `output_zero_point`; `pads` ONNX's (top, left, bottom, right)."""
    _, channels, height, width = (int(d) for d in x.shape)
    out_channels, group_channels, kernel_h, kernel_w = (int(d) for d in w.shape)
    out_h = (height + pads[0] + pads[2] - (kernel_h - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (width + pads[1] + pads[3] - (kernel_w - 1) * dilations[1] - 1) // strides[1] + 1
    outputs_per_group = out_channels // group
    pointwise = (kernel_h, kernel_w, group) == (1, 1, 1) and list(strides) == [1, 1] and not any(pads)
    window = group_channels * kernel_h * kernel_w

    def build(ins, outs):
        data, weight, biases, multipliers = ins
        index = str(outs[0].shape[0].ty.dtype)

        def const(value: int, dtype: str = index) -> tirx.PrimExpr:
            return tirx.const(value, dtype)


        o = tirx.Var("o", index)
        requantize = (tirx.BufferLoad(biases, [o]), tirx.BufferLoad(multipliers, [o]),
                      *(const(v, "int32") for v in (output_zero_point, low, high)))
        if pointwise:
            call = tirx.call_intrin("int32", QLINEAR_POINTWISE_OP, element_address(outs[0], o * const(height * width)),
                                    element_address(data, const(0)), element_address(weight, o * const(channels)),
                                    const(channels, "int32"), const(height * width, "int32"), *requantize)
            return tirx.For(o, const(0), const(out_channels), tirx.ForKind.SERIAL, tirx.Evaluate(call))
        oy = tirx.Var("oy", index)
        first_channel = tirx.floordiv(o, const(outputs_per_group)) * const(group_channels * height * width)
        top = tirx.Cast("int32", oy) * const(strides[0], "int32") - const(pads[0], "int32")
        call = tirx.call_intrin(
            "int32", QLINEAR_ROW_OP, element_address(outs[0], (o * const(out_h) + oy) * const(out_w)),
            element_address(data, first_channel), element_address(weight, o * const(window)),
            *(const(v, "int32") for v in (group_channels, height * width, height, width, out_w, kernel_h, kernel_w,
                                         strides[1], dilations[0], dilations[1])),
            top, const(-pads[1], "int32"), *requantize, const(x_zero_point, "int32"))
        rows = tirx.For(oy, const(0), const(out_h), tirx.ForKind.SERIAL, tirx.Evaluate(call))
        return tirx.For(o, const(0), const(out_channels), tirx.ForKind.SERIAL, rows)

    return extern_from_zero((1, out_channels, out_h, out_w), [x, w, bias, multiplier], build, "qlinear_conv_helium")


SHORTEST_ROW = 4
"""The narrowest output (pixels per row) a windowed QLinearConv takes the row helper for: one vector's lanes.
Measured on cortex-m55 (mobilenet_v2 0.35's 3x3 depthwise QLinearConvs): 4x4 outputs 5.8 instructions per MAC
(the generic kernel 12.7), 2x2 ones 11.7 (the generic kernel 9.2)."""


def fits_qlinear_conv(multiplier: np.ndarray, pointwise: bool, out_width: int) -> bool:
    """Whether a QLinearConv (`pointwise`: 1x1, stride 1, unpadded, one group; else windowed, of output rows of
    `out_width` pixels) takes the helpers: every channel's float32 `multiplier` in their contract (zero or normal:
    MVE's float lanes flush a denormal to zero; finite), and a windowed one's rows at least SHORTEST_ROW long."""
    values = np.abs(multiplier.astype(np.float32))
    normal = bool(np.all(np.isfinite(values)) and np.all((values == 0) | (values >= np.finfo(np.float32).tiny)))
    return normal and (pointwise or out_width >= SHORTEST_ROW)
