"""ONNX QLinearConv and QLinearMatMul (no converter in TVM 0.27) as markers the int8 pass lowers.

Each node becomes one ``call_dps_packed`` of a marker symbol whose argument tuple is the node's inputs in
ONNX order (QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B])
followed, for QLinearConv, by its geometry as data: strides, pads (top, left, bottom, right) and dilations
as ShapeExprs and the group count as a PrimValue. ``tvm_ext.transform.int8.onnx_qlinear`` replaces the
marker by the kernel of ``tvm_ext.kernels.onnx_qlinear`` (onnxruntime's float32 requantization, rounding
half to even); no marker reaches code generation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tvm import relax

QLINEAR_CONV = "tvm_ext.onnx_qlinear_conv"
QLINEAR_MATMUL = "tvm_ext.onnx_qlinear_matmul"
MARKERS = (QLINEAR_CONV, QLINEAR_MATMUL)
CONV_OPERANDS = 9  # x .. y_zero_point, then B (or no B)


def _shape(value: relax.Expr) -> list[int]:
    return [int(d) for d in value.ty.shape.values]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def conv_pads(attrs: dict[str, Any], in_hw: Sequence[int], kernel_hw: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> list[int]:
    """ONNX Conv padding as (top, left, bottom, right) from ``pads`` or ``auto_pad`` (SAME_UPPER puts the odd
    element at the end, SAME_LOWER at the start)."""
    auto_pad = _text(attrs.get("auto_pad", "NOTSET"))
    if auto_pad == "NOTSET":
        return [int(p) for p in attrs.get("pads", [0] * 4)]
    if auto_pad == "VALID":
        return [0] * 4
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad {auto_pad} is not an ONNX padding mode")
    begin, end = [], []
    for size, kernel, stride, dilation in zip(in_hw, kernel_hw, strides, dilations):
        total = max((math.ceil(size / stride) - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin + end


def qlinear_conv(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX QLinearConv node as its marker; raises ValueError for the forms it does not convert
    (1-D and 3-D convolutions)."""
    x, w, y_zero_point = inputs[0], inputs[3], inputs[7]
    x_shape, w_shape = _shape(x), _shape(w)
    if len(x_shape) != 4:
        raise ValueError(f"QLinearConv with {len(x_shape) - 2} spatial axes is not converted (2-D only)")
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dilations = [int(d) for d in attrs.get("dilations", [1, 1])]
    group = int(attrs.get("group", 1))
    pads = conv_pads(attrs, x_shape[2:], w_shape[2:], strides, dilations)
    out_hw = [(x_shape[2 + i] + pads[i] + pads[2 + i] - (w_shape[2 + i] - 1) * dilations[i] - 1) // strides[i] + 1
              for i in range(2)]
    operands = [value for value in inputs[:CONV_OPERANDS] if value is not None]
    geometry = [relax.ShapeExpr(strides), relax.ShapeExpr(pads), relax.ShapeExpr(dilations), relax.prim_value(group)]
    return relax.call_dps_packed(QLINEAR_CONV, relax.Tuple([*operands, *geometry]),
                                 relax.TensorType([x_shape[0], w_shape[0], *out_hw], y_zero_point.ty.dtype))


def qlinear_matmul(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX QLinearMatMul node as its marker; raises ValueError for 1-D operands (not converted)."""
    a_shape, b_shape = _shape(inputs[0]), _shape(inputs[3])
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("QLinearMatMul with a 1-D operand is not converted")
    batch = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    return relax.call_dps_packed(QLINEAR_MATMUL, relax.Tuple(list(inputs[:8])),
                                 relax.TensorType([*batch, a_shape[-2], b_shape[-1]], inputs[7].ty.dtype))


CONVERTERS: dict[str, Callable[[relax.BlockBuilder, Sequence[relax.Expr | None], dict[str, Any]], relax.Expr]] = {
    "QLinearConv": qlinear_conv,
    "QLinearMatMul": qlinear_matmul,
}
