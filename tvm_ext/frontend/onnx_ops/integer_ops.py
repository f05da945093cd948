"""ONNX integer operators TVM 0.27's ONNX frontend has no converter for, converted here to Relax.

ConvInteger (opset 10): y = conv(int32(x) - x_zero_point, int32(w) - w_zero_point), int32, zero padding
after the zero points are subtracted (so a padded element counts as the zero point), 1-D (as 2-D over N,C,1,L)
or 2-D. Its result is plain integer Relax: the compiler's float path lowers it exactly (no quantize/dequantize
is involved).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tvm import relax

from tvm_ext.frontend.converter_table import keyed_by
from tvm_ext.frontend.onnx_ops.qlinear_ops import CONVERTERS as QLINEAR_CONVERTERS
from tvm_ext.frontend.onnx_ops.qlinear_ops import as_1d, as_2d, conv_geometry, static_shape
from tvm_ext.frontend.onnx_ops.recurrent import CONVERTERS as RECURRENT_CONVERTERS
from tvm_ext.model_check.operator_support import ONNX_OWN_CONVERTERS


def conv_integer(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX ConvInteger node in Relax, a 1-D one (N,C,L) as the 2-D convolution over N,C,1,L reshaped back;
    raises ValueError for the forms it does not convert (3-D)."""
    x, w = inputs[0], inputs[1]
    x_zero_point = inputs[2] if len(inputs) > 2 else None
    w_zero_point = inputs[3] if len(inputs) > 3 else None
    x_shape, w_shape = static_shape(x), static_shape(w)
    strides, pads, dilations = conv_geometry(x_shape[2:], w_shape[2:], attrs)
    data = _minus_zero_point(bb, as_2d(bb, x), x_zero_point, lambda zp: zp)
    # A per-output-channel w_zero_point [M] broadcasts over the kernel's [M, C/group, kH, kW].
    weight = _minus_zero_point(bb, as_2d(bb, w), w_zero_point, lambda zp: relax.op.reshape(zp, [-1, 1, 1, 1]))
    y = relax.op.nn.conv2d(data, weight, strides=strides, padding=pads, dilation=dilations,
                           groups=int(attrs.get("group", 1)), out_dtype="int32")
    return as_1d(bb, y, len(x_shape))


def _minus_zero_point(bb: relax.BlockBuilder, value: relax.Expr, zero_point: relax.Expr | None,
                      shape_per_channel: Callable[[relax.Expr], relax.Expr]) -> relax.Expr:
    """int32(value) - int32(zero_point), a 1-D zero point shaped by `shape_per_channel` to broadcast."""
    wide = relax.op.astype(value, "int32")
    if zero_point is None:
        return wide
    zp = bb.normalize(relax.op.astype(zero_point, "int32"))
    return relax.op.subtract(wide, shape_per_channel(zp) if len(zp.ty.shape.values) == 1 else zp)


# ONNX op_type -> converter(bb, inputs, attrs), for operators TVM 0.27 does not convert (or wrongly): keyed by the
# model check's list of them, the one place they are named.
Converter = Callable[[relax.BlockBuilder, Sequence[relax.Expr | None], dict[str, Any]], relax.Expr]
CONVERTERS: dict[str, Converter] = keyed_by(ONNX_OWN_CONVERTERS, {"ConvInteger": conv_integer, **QLINEAR_CONVERTERS,
                                                                     **RECURRENT_CONVERTERS},
                                            "the ONNX converters")
