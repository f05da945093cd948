"""ONNX integer operators TVM 0.27's ONNX frontend has no converter for, converted here to Relax.

ConvInteger (opset 10): y = conv(int32(x) - x_zero_point, int32(w) - w_zero_point), int32, zero padding
after the zero points are subtracted (so a padded element counts as the zero point), 2-D only. Its result
is plain integer Relax: the compiler's float path lowers it exactly (no quantize/dequantize is involved).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tvm import relax

from tvm_ext.frontend.converter_table import keyed_by
from tvm_ext.frontend.onnx_ops.qlinear_ops import CONVERTERS as QLINEAR_CONVERTERS
from tvm_ext.frontend.onnx_ops.recurrent import CONVERTERS as RECURRENT_CONVERTERS
from tvm_ext.model_check.operator_support import ONNX_OWN_CONVERTERS


def conv_integer(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX ConvInteger node in Relax; raises ValueError for the forms it does not convert (1-D, 3-D,
    auto_pad SAME_*)."""
    x, w = inputs[0], inputs[1]
    x_zero_point = inputs[2] if len(inputs) > 2 else None
    w_zero_point = inputs[3] if len(inputs) > 3 else None
    spatial = len(x.ty.shape.values) - 2
    if spatial != 2:
        raise ValueError(f"ConvInteger with {spatial} spatial axes is not converted (2-D only)")
    auto_pad = attrs.get("auto_pad", "NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad not in ("NOTSET", "VALID"):
        raise ValueError(f"ConvInteger with auto_pad {auto_pad} is not converted")
    pads = [0] * 4 if auto_pad == "VALID" else list(attrs.get("pads", [0] * 4))
    data = _minus_zero_point(bb, x, x_zero_point, lambda zp: zp)
    # A per-output-channel w_zero_point [M] broadcasts over the kernel's [M, C/group, kH, kW].
    weight = _minus_zero_point(bb, w, w_zero_point, lambda zp: relax.op.reshape(zp, [-1, 1, 1, 1]))
    return relax.op.nn.conv2d(
        data, weight, strides=list(attrs.get("strides", [1, 1])), padding=pads,
        dilation=list(attrs.get("dilations", [1, 1])), groups=int(attrs.get("group", 1)), out_dtype="int32",
    )


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
