"""ONNX's QLinearConv and QLinearMatMul and onnxruntime's QLinear operators (com.microsoft: QGemm, QLinearAdd,
QLinearMul, QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool, QLinearSoftmax, QLinearLeakyRelu; no
converter in TVM 0.27) as markers the int8 pass lowers.

Each node becomes one ``call_dps_packed`` of a marker symbol whose argument tuple is the node's inputs in
ONNX order (QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B])
followed by its geometry as data where it has one: QLinearConv's strides, pads (top, left, bottom, right) and
dilations as ShapeExprs and the group count as a PrimValue; QLinearAveragePool's kernel, strides and pads as
ShapeExprs and count_include_pad as a PrimValue; QLinearLeakyRelu's alpha as a float32 PrimValue. QLinearSoftmax's
marker reduces the last axis. QGemm becomes
the QLinearMatMul marker with its int32 C as a ninth operand (its constant B transposed here when transB is set).
``tvm_ext.transform.int8.onnx_qlinear`` replaces each marker by its kernel (``tvm_ext.kernels.onnx_qlinear``,
``onnxruntime_elementwise``, ``onnxruntime_pool``, ``onnxruntime_softmax``: onnxruntime's arithmetic); no marker
reaches code generation. QLinearConcat needs none: onnxruntime requantizes each input as DequantizeLinear then
QuantizeLinear would, so it becomes those and a Concat.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tvm import relax, tirx
from tvm.ir.expr import Constant

QLINEAR_CONV = "tvm_ext.onnx_qlinear_conv"
# QLinearConv's marker over x permuted to NHWC, the same operands (tvm_ext.transform.qlinear_channels_last).
QLINEAR_CONV_CHANNELS_LAST = "tvm_ext.onnx_qlinear_conv_channels_last"
QLINEAR_MATMUL = "tvm_ext.onnx_qlinear_matmul"
QLINEAR_ADD = "tvm_ext.onnx_qlinear_add"
QLINEAR_MUL = "tvm_ext.onnx_qlinear_mul"
QLINEAR_AVERAGE_POOL = "tvm_ext.onnx_qlinear_average_pool"
QLINEAR_GLOBAL_AVERAGE_POOL = "tvm_ext.onnx_qlinear_global_average_pool"
QLINEAR_SOFTMAX = "tvm_ext.onnx_qlinear_softmax"
QLINEAR_LEAKY_RELU = "tvm_ext.onnx_qlinear_leaky_relu"
MARKERS = (QLINEAR_CONV, QLINEAR_CONV_CHANNELS_LAST, QLINEAR_MATMUL, QLINEAR_ADD, QLINEAR_MUL, QLINEAR_AVERAGE_POOL,
           QLINEAR_GLOBAL_AVERAGE_POOL, QLINEAR_SOFTMAX, QLINEAR_LEAKY_RELU)
CONV_OPERANDS = 9  # x .. y_zero_point, then B (or no B)


def static_shape(value: relax.Expr) -> list[int]:
    """A tensor's static shape (every dimension known)."""
    return [int(d) for d in value.ty.shape.values]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def conv_pads(attrs: dict[str, Any], in_hw: Sequence[int], kernel_hw: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> list[int]:
    """ONNX Conv padding as the begins then the ends of the spatial axes ((top, left, bottom, right) in 2-D) from
    ``pads`` or ``auto_pad`` (SAME_UPPER puts the odd element at the end, SAME_LOWER at the start)."""
    auto_pad = _text(attrs.get("auto_pad", "NOTSET"))
    if auto_pad == "NOTSET":
        return [int(p) for p in attrs.get("pads", [0] * (2 * len(in_hw)))]
    if auto_pad == "VALID":
        return [0] * (2 * len(in_hw))
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad {auto_pad} is not an ONNX padding mode")
    begin, end = [], []
    for size, kernel, stride, dilation in zip(in_hw, kernel_hw, strides, dilations):
        total = max((math.ceil(size / stride) - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin + end


def conv_geometry(in_sizes: Sequence[int], kernel_sizes: Sequence[int],
                  attrs: dict[str, Any]) -> tuple[list[int], list[int], list[int]]:
    """An ONNX convolution's (or pool's) 2-D (strides, pads (top, left, bottom, right), dilations) from its
    input's and kernel's spatial sizes; a 1-D one's (over N,C,L) as the 2-D one over N,C,1,L: height 1, stride
    and dilation 1 and no padding along it. Raises ValueError for other than 1 or 2 spatial axes."""
    spatial = len(in_sizes)
    if spatial not in (1, 2):
        raise ValueError(f"a convolution or pool with {spatial} spatial axes is not converted (1-D and 2-D only)")
    strides = [int(s) for s in attrs.get("strides", [1] * spatial)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * spatial)]
    pads = conv_pads(attrs, in_sizes, kernel_sizes, strides, dilations)
    if spatial == 1:
        return [1, *strides], [0, pads[0], 0, pads[1]], [1, *dilations]
    return strides, pads, dilations


def as_2d(bb: relax.BlockBuilder, value: relax.Expr) -> relax.Expr:
    """A 1-D convolution's N,C,L operand (or O,I,K kernel) as N,C,1,L (a constant stays a constant); a 2-D one's
    as it is."""
    shape = static_shape(value)
    if len(shape) != 3:
        return value
    lifted = [shape[0], shape[1], 1, shape[2]]
    if isinstance(value, Constant):
        return relax.const(value.value.numpy().reshape(lifted))
    return bb.normalize(relax.op.reshape(value, lifted))


def qlinear_conv(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX QLinearConv node as its marker, a 1-D one (N,C,L) as the 2-D marker over N,C,1,L reshaped back;
    raises ValueError for the forms it does not convert (3-D convolutions)."""
    x, w, y_zero_point = inputs[0], inputs[3], inputs[7]
    x_shape, w_shape = static_shape(x), static_shape(w)
    strides, pads, dilations = conv_geometry(x_shape[2:], w_shape[2:], attrs)
    x, w = as_2d(bb, x), as_2d(bb, w)
    in_hw, kernel_hw = static_shape(x)[2:], static_shape(w)[2:]
    group = int(attrs.get("group", 1))
    out_hw = [(in_hw[i] + pads[i] + pads[2 + i] - (kernel_hw[i] - 1) * dilations[i] - 1) // strides[i] + 1
              for i in range(2)]
    operands = [value for value in [x, *inputs[1:3], w, *inputs[4:CONV_OPERANDS]] if value is not None]
    geometry = [relax.ShapeExpr(strides), relax.ShapeExpr(pads), relax.ShapeExpr(dilations), relax.prim_value(group)]
    y = relax.call_dps_packed(QLINEAR_CONV, relax.Tuple([*operands, *geometry]),
                              relax.TensorType([x_shape[0], w_shape[0], *out_hw], y_zero_point.ty.dtype))
    return as_1d(bb, y, len(x_shape))


def qlinear_matmul(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """An ONNX QLinearMatMul node as its marker; raises ValueError for 1-D operands (not converted)."""
    a_shape, b_shape = static_shape(inputs[0]), static_shape(inputs[3])
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("QLinearMatMul with a 1-D operand is not converted")
    batch = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    return relax.call_dps_packed(QLINEAR_MATMUL, relax.Tuple(list(inputs[:8])),
                                 relax.TensorType([*batch, a_shape[-2], b_shape[-1]], inputs[7].ty.dtype))


def qgemm(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """onnxruntime's QGemm (com.microsoft) with a quantized output, as the QLinearMatMul marker with its bias;
    raises ValueError for the forms it does not convert (transA, alpha other than 1, a float output, a B or C
    that is no constant, a C that is not one value per column)."""
    if int(attrs.get("transA", 0)) or float(attrs.get("alpha", 1.0)) != 1.0:
        raise ValueError("QGemm with transA or alpha other than 1 is not converted")
    if len(inputs) < 9 or inputs[8] is None:
        raise ValueError("QGemm with a float output (no y_scale and y_zero_point) is not converted")
    b, bias = inputs[3], inputs[6]
    if not isinstance(b, Constant) or (bias is not None and not isinstance(bias, Constant)):
        raise ValueError("QGemm whose B or C is not a constant is not converted")
    weights = b.value.numpy()
    if int(attrs.get("transB", 0)):
        weights = np.ascontiguousarray(weights.T)
    operands = [*inputs[:3], relax.const(weights), *inputs[4:6], inputs[7], inputs[8]]
    if bias is not None:
        values = bias.value.numpy()
        if values.size != weights.shape[1]:
            raise ValueError("QGemm whose C is not one value per column of B is not converted")
        operands.append(relax.const(values.reshape(-1)))
    return relax.call_dps_packed(QLINEAR_MATMUL, relax.Tuple(operands),
                                 relax.TensorType([static_shape(inputs[0])[0], weights.shape[1]], inputs[8].ty.dtype))


def _binary(marker: str) -> Callable[[relax.BlockBuilder, Sequence[relax.Expr | None], dict[str, Any]], relax.Expr]:
    def convert(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
        """QLinearAdd or QLinearMul (com.microsoft) as its marker: inputs a, a_scale, a_zero_point, b, b_scale,
        b_zero_point, c_scale, c_zero_point (every zero point given)."""
        if len(inputs) < 8 or any(value is None for value in inputs[:8]):
            raise ValueError("a QLinear binary operator without every zero point is not converted")
        shape = list(np.broadcast_shapes(tuple(static_shape(inputs[0])), tuple(static_shape(inputs[3]))))
        return relax.call_dps_packed(marker, relax.Tuple(list(inputs[:8])),
                                     relax.TensorType(shape, inputs[7].ty.dtype))

    return convert


def _not_channels_last(attrs: dict[str, Any], op: str) -> None:
    if int(attrs.get("channels_last", 0)):
        raise ValueError(f"{op} with channels_last is not converted (onnxruntime's own layout rewrite)")


def pool_output_size(size: int, kernel: int, stride: int, pad_head: int, pad_tail: int, ceil_mode: bool) -> int:
    """ONNX's (and onnxruntime's) pooled size: with ceil_mode the last window must start inside the input or its
    head padding."""
    numerator = size + pad_head + pad_tail - kernel
    if not ceil_mode:
        return numerator // stride + 1
    out = -(-numerator // stride) + 1
    return out - 1 if (out - 1) * stride >= size + pad_head else out


def as_1d(bb: relax.BlockBuilder, y: relax.Expr, rank: int) -> relax.Expr:
    """A 2-D marker's N,C,1,L result as the N,C,L of a 1-D node (``rank`` 3); a 2-D node's as it is."""
    if rank == 4:
        return y
    shape = static_shape(bb.normalize(y))
    return relax.op.reshape(y, [shape[0], shape[1], shape[3]])


def qlinear_average_pool(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None],
                         attrs: dict[str, Any]) -> relax.Expr:
    """QLinearAveragePool (com.microsoft) as its marker, a 1-D one as the 2-D marker over N,C,1,L reshaped back;
    raises ValueError for what it does not convert (3-D, channels_last, dilations)."""
    _not_channels_last(attrs, "QLinearAveragePool")
    x_shape = static_shape(inputs[0])
    kernel = [int(k) for k in attrs.get("kernel_shape", [])]
    if len(kernel) != len(x_shape) - 2 or any(int(d) != 1 for d in attrs.get("dilations", [1] * len(kernel))):
        raise ValueError("QLinearAveragePool with dilations or a kernel_shape of other rank is not converted")
    strides, pads, _ = conv_geometry(x_shape[2:], kernel, attrs)
    x = as_2d(bb, inputs[0])
    kernel, in_hw = [1] * (4 - len(x_shape)) + kernel, static_shape(x)[2:]
    ceil_mode = bool(int(attrs.get("ceil_mode", 0)))
    out_hw = [pool_output_size(in_hw[i], kernel[i], strides[i], pads[i], pads[2 + i], ceil_mode) for i in range(2)]
    geometry = [relax.ShapeExpr(kernel), relax.ShapeExpr(strides), relax.ShapeExpr(pads),
                relax.prim_value(int(attrs.get("count_include_pad", 0)))]
    y = relax.call_dps_packed(QLINEAR_AVERAGE_POOL, relax.Tuple([x, *inputs[1:5], *geometry]),
                              relax.TensorType([*x_shape[:2], *out_hw], inputs[4].ty.dtype))
    return as_1d(bb, y, len(x_shape))


def qlinear_global_average_pool(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None],
                                attrs: dict[str, Any]) -> relax.Expr:
    """QLinearGlobalAveragePool (com.microsoft) of an NCHW tensor as its marker, of an N,C,L one as the marker
    over N,C,1,L reshaped back."""
    _not_channels_last(attrs, "QLinearGlobalAveragePool")
    x_shape = static_shape(inputs[0])
    if len(x_shape) not in (3, 4):
        raise ValueError("QLinearGlobalAveragePool other than 1-D or 2-D is not converted")
    y = relax.call_dps_packed(QLINEAR_GLOBAL_AVERAGE_POOL, relax.Tuple([as_2d(bb, inputs[0]), *inputs[1:5]]),
                              relax.TensorType([*x_shape[:2], 1, 1], inputs[4].ty.dtype))
    return as_1d(bb, y, len(x_shape))


def qlinear_softmax(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """QLinearSoftmax (com.microsoft: x, x_scale, x_zero_point, y_scale, y_zero_point; attributes axis, opset) as
    its marker, which reduces the last axis: another axis is moved last and back (as onnxruntime transposes it
    from opset 13 on), or, before opset 13, the axes from it on are flattened into one."""
    if inputs[4] is None:
        raise ValueError("QLinearSoftmax without y_zero_point is not converted")
    x, x_shape = inputs[0], static_shape(inputs[0])
    rank = len(x_shape)
    opset = int(attrs.get("opset", 13))
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1)) % max(rank, 1)

    def marker(value: relax.Expr, shape: list[int]) -> relax.Expr:
        return relax.call_dps_packed(QLINEAR_SOFTMAX, relax.Tuple([value, *inputs[1:5]]),
                                     relax.TensorType(shape, inputs[4].ty.dtype))

    if axis == rank - 1 or rank == 0:
        return marker(x, x_shape)
    if opset < 13:
        flat = [int(np.prod(x_shape[:axis])), int(np.prod(x_shape[axis:]))]
        return relax.op.reshape(bb.normalize(marker(bb.normalize(relax.op.reshape(x, flat)), flat)), x_shape)
    order = list(range(rank))
    order[axis], order[-1] = order[-1], order[axis]
    moved = bb.normalize(marker(bb.normalize(relax.op.permute_dims(x, order)), [x_shape[i] for i in order]))
    return relax.op.permute_dims(moved, order)


def qlinear_leaky_relu(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None],
                       attrs: dict[str, Any]) -> relax.Expr:
    """QLinearLeakyRelu (com.microsoft: x, x_scale, x_zero_point, y_scale, y_zero_point; attribute alpha, 0.01 by
    default) of int8 data as its marker, alpha (float32) a PrimValue after the operands; raises ValueError for what
    it does not convert (uint8 data, an omitted zero point)."""
    if len(inputs) < 5 or any(value is None for value in inputs[:5]) or str(inputs[0].ty.dtype) != "int8" \
            or str(inputs[4].ty.dtype) != "int8":
        raise ValueError("QLinearLeakyRelu other than int8 with every zero point given is not converted")
    alpha = relax.prim_value(tirx.FloatImm("float32", float(np.float32(attrs.get("alpha", 0.01)))))
    return relax.call_dps_packed(QLINEAR_LEAKY_RELU, relax.Tuple([*inputs[:5], alpha]),
                                 relax.TensorType(static_shape(inputs[0]), "int8"))


def qlinear_concat(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Expr:
    """QLinearConcat (com.microsoft: y_scale, y_zero_point, then (x, x_scale, x_zero_point) per input) as each
    input requantized (dequantized, then quantized to the output's parameters) and concatenated."""
    y_scale, y_zero_point = inputs[0], inputs[1]
    out_dtype = str(y_zero_point.ty.dtype)
    pieces = []
    for x, x_scale, x_zero_point in zip(inputs[2::3], inputs[3::3], inputs[4::3]):
        if _same_constants((x_scale, x_zero_point), (y_scale, y_zero_point)) and str(x.ty.dtype) == out_dtype:
            pieces.append(x)  # onnxruntime copies such an input
            continue
        value = bb.normalize(relax.op.dequantize(x, x_scale, x_zero_point, axis=0))
        pieces.append(bb.normalize(relax.op.quantize(value, y_scale, y_zero_point, axis=0, out_dtype=out_dtype)))
    return relax.op.concat(pieces, axis=int(attrs.get("axis", 0)))


def _same_constants(first: Sequence[relax.Expr], second: Sequence[relax.Expr]) -> bool:
    """Whether two (scale, zero point) pairs are constants of the same values."""
    if not all(isinstance(value, Constant) for value in (*first, *second)):
        return False
    return all(np.array_equal(a.value.numpy().reshape(-1), b.value.numpy().reshape(-1)) for a, b in zip(first, second))


CONVERTERS: dict[str, Callable[[relax.BlockBuilder, Sequence[relax.Expr | None], dict[str, Any]], relax.Expr]] = {
    "QLinearConv": qlinear_conv,
    "QLinearMatMul": qlinear_matmul,
    "QGemm": qgemm,
    "QLinearAdd": _binary(QLINEAR_ADD),
    "QLinearMul": _binary(QLINEAR_MUL),
    "QLinearAveragePool": qlinear_average_pool,
    "QLinearGlobalAveragePool": qlinear_global_average_pool,
    "QLinearConcat": qlinear_concat,
    "QLinearSoftmax": qlinear_softmax,
    "QLinearLeakyRelu": qlinear_leaky_relu,
}
