"""Helium's pointwise QLinearConv kernel: onnxruntime's QLinearConv of a 1x1, stride-1, unpadded convolution of one
NCHW int8 image (int8 weights of zero point 0, constant scales) as one call of `<prefix>_qlinear_pointwise_s8` per
output channel (`backends.cortex_m.helpers.templates.helium_qlinear.h.in`: 16 pixels per vector step, onnxruntime's
float32 requantization four lanes a step), the kernel the int8 lowering writes for such a QLinearConv where the backend
gives one (`backends.backend.KernelSchedules.qlinear_pointwise`).

The generic kernel (`tvm_ext.kernels.onnx_qlinear.qlinear_conv2d`) sums four pixels at a time in scalar C, 6 to 8
instructions per MAC on a Cortex-M55; NCHW puts a channel's pixels side by side, so the helper takes them as the
lanes, each multiplied by the channel's one weight (VMLA by a scalar). Both compute onnxruntime's arithmetic bit for
bit: the int32 sum (the input's zero point folded into the bias at compile time: the raw inputs' products then sum
to the same int32), float32(sum) * multiplier, the clamp, ties to even (the helper's C unit test checks ties, sums
past 2^24 and every tail).
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from backends.cortex_m.helpers import HELIUM_QLINEAR_HELPERS
from backends.cortex_m.helpers.helium_c import qlinear_pointwise_helper_name
from tvm_ext.tir.extern_stage import extern_from_zero, row_major_indices
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

QLINEAR_POINTWISE_OP = "tvm_ext.qlinear_pointwise_s8"
# The call (out, x, w, channels, pixels, bias, multiplier, zero_point, low, high): out[p] for p < pixels,
# x[c * pixels + p] and w[c] for c < channels.
QLINEAR_POINTWISE_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(4), 1),)),
    PointerAccess(1, (Axis(Arg(3), Arg(4)), Axis(Arg(4), 1))),
    PointerAccess(2, (Axis(Arg(3), 1),)),
))
register_helper_call(QLINEAR_POINTWISE_OP, HELIUM_QLINEAR_HELPERS, qlinear_pointwise_helper_name,
                     QLINEAR_POINTWISE_ACCESS)


def helium_qlinear_pointwise(x: te.Tensor, w: te.Tensor, bias: te.Tensor, multiplier: te.Tensor, *,
                             output_zero_point: int, low: int, high: int) -> te.Tensor:
    """onnxruntime's QLinearConv of `x` (int8, NCHW, one image: [1, C, H, W]) by `w` (int8 [O, C, 1, 1], zero
    point 0) as a TE extern stage: per output channel o one helper call over the H * W pixels, its sums started at
    `bias[o]` (int32 [O]: the QLinearConv's bias minus the input's zero point times the channel's weight sum),
    requantized by `multiplier[o]` (float32 [O], normal: (x_scale * w_scale[o]) / y_scale in float32), clamped
    to [low, high] (int8 bounds) around `output_zero_point`."""
    _, channels, height, width = (int(d) for d in x.shape)
    out_channels = int(w.shape[0])
    pixels = height * width
    constants = tuple(tirx.const(int(value), "int32") for value in (output_zero_point, low, high))

    def build(ins, outs):
        data, weight, biases, multipliers = ins
        index = str(outs[0].shape[0].ty.dtype)

        def at(buffer: tirx.Buffer, offset) -> tirx.PrimExpr:
            """The address of `buffer`'s row-major element `offset`."""
            return tirx.address_of(tirx.BufferLoad(buffer, row_major_indices(buffer, offset)))

        o = tirx.Var("o", index)
        call = tirx.call_intrin(
            "int32", QLINEAR_POINTWISE_OP, at(outs[0], o * tirx.const(pixels, index)), at(data, tirx.const(0, index)),
            at(weight, o * tirx.const(channels, index)), tirx.const(channels, "int32"), tirx.const(pixels, "int32"),
            tirx.BufferLoad(biases, [o]), tirx.BufferLoad(multipliers, [o]), *constants)
        return tirx.For(o, tirx.const(0, index), tirx.const(out_channels, index), tirx.ForKind.SERIAL,
                        tirx.Evaluate(call))

    return extern_from_zero((1, out_channels, height, width), [x, w, bias, multiplier], build,
                            "qlinear_pointwise_helium")


def fits_qlinear_pointwise(multiplier: np.ndarray) -> bool:
    """Whether every channel's float32 multiplier is in the helper's contract: zero or normal (MVE's float lanes
    flush a denormal to zero), finite."""
    values = np.abs(multiplier.astype(np.float32))
    return bool(np.all(np.isfinite(values)) and np.all((values == 0) | (values >= np.finfo(np.float32).tiny)))
