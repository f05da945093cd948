"""TRANSPOSE_CONV: ``q(add(conv2d_transpose(dq(x), dq(W)), dq(b)))`` -> one integer transpose conv kernel.

TVM's converter transposes TFLite's OHWI kernel to IOHW (dequantized per output channel on axis 1) and turns
SAME/VALID into explicit padding; the kernel reads the weight back in TFLite's OHWI order.
"""

from __future__ import annotations

from typing import Union

import numpy as np

from tvm import relax

from ...kernels.quant_params import conv_multipliers
from ...kernels.transpose_conv import conv2d_transpose_int8
from .lowering import Lowering, LoweringContext, Mismatch
from .mac import Conv2DGeometry, MacKernel, MacPattern
from .patterns import ends_float_operator, float_operator_mismatch

_PATTERN = MacPattern("relax.nn.conv2d_transpose")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[MacKernel, Mismatch]:
    """NHWC conv2d_transpose with an IOHW kernel, groups 1 and no dilation."""
    operands = _PATTERN.read(quantize, ctx)
    if operands is None or operands.weight.permuted or operands.weight.reshaped:
        return float_operator_mismatch(quantize, ctx)
    conv, attrs = operands.core, operands.core.attrs
    plain = (attrs.data_layout == "NHWC" and attrs.out_layout == "NHWC" and attrs.kernel_layout == "IOHW"
             and int(attrs.groups) == 1 and all(int(v) == 1 for v in attrs.dilation))
    if not plain:
        return float_operator_mismatch(quantize, ctx)
    weight_ohwi = np.ascontiguousarray(operands.weight.values.transpose(1, 2, 3, 0))
    data, out = operands.data, operands.out
    multipliers, shifts = conv_multipliers(data.quant.scale, operands.weight.scales, out.quant.scale, ctx.rounding)
    # Output padding (rows past the last input's reach) is the kernel's bottom/right padding made negative.
    top, left, bottom, right = (int(v) for v in attrs.padding)
    extra_h, extra_w = (int(v) for v in attrs.output_padding)
    geometry = Conv2DGeometry(tuple(int(v) for v in attrs.strides), (top, left, bottom - extra_h, right - extra_w),
                              tuple(int(v) for v in attrs.dilation))
    # TFLite's count: every input element times every tap of every output channel (the scatter's products)
    macs = int(np.prod([int(d) for d in data.tensor.ty.shape])) * weight_ohwi.size // weight_ohwi.shape[3]
    return MacKernel("TRANSPOSE_CONV", conv, conv2d_transpose_int8, data.tensor, data.quant.zero_point,
                     weight_ohwi, operands.bias, multipliers, shifts, out.quant.zero_point, out.activation,
                     ctx.rounding, geometry, channel_axis=0, guarded_macs=macs)


LOWERING = Lowering(frozenset({"TRANSPOSE_CONV"}), ends_float_operator, match)
