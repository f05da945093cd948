"""The DSP cores' kernel of an int8 1x1 CONV_2D over one to four input channels: one call of
`<prefix>_pointwise_few_s8` (`backends.cortex_m.helpers.pointwise_few_c`) for every pixel and output channel, the
kernel the int8 lowering writes for such a convolution (`backends.backend.KernelSchedules.few_channel_conv`, before the
few-channel window helper of `window1_conv`, whose gathered windows do not pay on so few taps).

Why: a 1x1 window over three channels is three MACs an output, so the generic kernel's dual MAC call per channel tile
and its tile's requantization under a channel test cost some 35 instructions an output (cortex-m4f, the layer sweep's
1x1 3 -> 7 over 12x12: 11.9 instructions per MAC); the helper widens each pixel's inputs once and spends two SMLAD and
the requantization steps an output.

Chosen by shape (`pointwise_few_conv` gives None elsewhere): a 1x1 window stepping one pixel, unpadded, over at most
four input channels (`window1_conv.MAX_CHANNELS`), with the window helper's requantization and operands
(`window1_conv._fits`).
"""

from __future__ import annotations

from math import prod
from typing import Optional, Sequence

from tvm import te, tirx

from backends.cortex_m.helpers import POINTWISE_FEW_HELPERS
from backends.cortex_m.helpers.pointwise_few_c import pointwise_few_helper_name
from backends.cortex_m.schedules.window1_conv import _fits, _Stage, few_channel_conv
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

POINTWISE_FEW_OP = "tvm_ext.pointwise_few_s8"
# The call (out, x, w, bias, bias_bytes, multiplier, shift, zero_point, pixels, in_c, channels, w_stride):
# out[p * channels + c] and x[p * in_c + i] for p < pixels, c < channels, i < in_c; w[c * w_stride + i] for i < 4
# (wider than the truth past the last channel: a constant bound); bias, multiplier and shift[c].
POINTWISE_FEW_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(8), Arg(10)), Axis(Arg(10), 1))),
    PointerAccess(1, (Axis(Arg(8), Arg(9)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(10), Arg(11)), Axis(4, 1))),
    *(PointerAccess(pointer, (Axis(Arg(10), 1),)) for pointer in (3, 5, 6)),
))
register_helper_call(POINTWISE_FEW_OP, POINTWISE_FEW_HELPERS, pointwise_few_helper_name, POINTWISE_FEW_ACCESS)

WORD = 4
"""The input channels one word holds: the helper's most."""


def pointwise_few_conv(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
                       output: _Stage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                       multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
                       zero_point_in_bias: bool = False, weight_layout=None, paired_weights: bool = False,
                       kernel_size: Optional[Sequence[int]] = None, units: Optional[int] = None) -> Optional[te.Tensor]:
    """An int8 1x1 CONV_2D over one to four input channels (operands and keywords as `window1_conv.few_channel_conv`'s)
    as one call of the helper, or None where it does not fit (module docstring)."""
    if paired_weights or not _fits(data, bias, output, multiplier, shift, zero_point_in_bias):
        return None
    layout = getattr(weight_layout, "name", None)
    window = tuple(int(d) for d in weight.shape[1:3]) if layout == "OHWI" else \
        tuple(int(d) for d in kernel_size) if layout == "OHWI_PADDED" and kernel_size is not None else None
    _, in_h, in_w, in_c = (int(d) for d in data.shape)
    w_stride = prod(int(d) for d in weight.shape[1:])
    if window != (1, 1) or tuple(strides) != (1, 1) or any(padding) or in_c > WORD:
        return None
    channels = int(weight.shape[0]) if units is None else units
    sizes = (4 if str(bias.dtype) == "int32" else 2, None, None, output.zero_point, in_h * in_w, in_c, channels,
             w_stride)

    def build(ins, outs):
        zero = tirx.const(0, str(outs[0].shape[0].ty.dtype))
        x, w, b, m, s = (element_address(buffer, zero) for buffer in ins)
        args = [element_address(outs[0], zero), x, w, b, tirx.const(sizes[0], "int32"), m, s,
                *(tirx.const(size, "int32") for size in sizes[3:])]
        return tirx.Evaluate(tirx.call_intrin("int32", POINTWISE_FEW_OP, *args))

    return extern_from_zero((1, in_h, in_w, channels), [data, weight, bias, multiplier, shift], build,
                            "conv2d_int8_pointwise_few")


def few_channel_kernel(*args, **kwargs) -> Optional[te.Tensor]:
    """The DSP cores' kernel of a CONV_2D over few input channels (`KernelSchedules.few_channel_conv`): the pointwise
    helper's where it fits, else the window helper's (`window1_conv.few_channel_conv`), else None."""
    tensor = pointwise_few_conv(*args, **kwargs)
    return few_channel_conv(*args, **kwargs) if tensor is None else tensor
