"""TE definitions of onnxruntime's QLinearGlobalAveragePool and QLinearAveragePool (com.microsoft, NCHW), as its
CPU provider computes them:

- QLinearGlobalAveragePool (MLAS): the integer sum of each channel's H * W values less x_zero_point * H * W,
  requantized as QLinearConv's accumulators are (float32(sum) * multiplier, clamped, rounded half to even,
  plus y_zero_point) with multiplier = x_scale / (y_scale * float32(H * W)).
- QLinearAveragePool: each input dequantized in float32 (float32(x - x_zero_point) * x_scale), the window
  summed in float32 row by row from 0 (the window clipped to the input; padding adds nothing), divided by its
  element count (the clipped window's, or the kernel's with count_include_pad), then
  saturate(round_half_even(average / y_scale + float32(y_zero_point))): the zero point is added before
  rounding, unlike QuantizeLinear. A pool whose kernel covers the whole unpadded input is the global one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tvm import te, tirx

from .onnx_qlinear import saturate_half_to_even


def global_average_multiplier(x_scale: float, y_scale: float, elements: int) -> float:
    """QLinearGlobalAveragePool's float32 multiplier x_scale / (y_scale * float32(elements))."""
    return float(np.float32(np.float32(x_scale) / np.float32(np.float32(y_scale) * np.float32(elements))))


def qlinear_global_average_pool(x: te.Tensor, *, x_zero_point: int, multiplier: float, y_zero_point: int,
                                dtype: str) -> te.Tensor:
    """QLinearGlobalAveragePool of an NCHW ``x`` (int8 or uint8) -> [N, C, 1, 1] in ``dtype``."""
    n, channels, height, width = (int(d) for d in x.shape)
    ry = te.reduce_axis((0, height), name="ry")
    rx = te.reduce_axis((0, width), name="rx")
    total = te.compute((n, channels), lambda b, c: te.sum(x[b, c, ry, rx].astype("int32"), axis=[ry, rx]),
                       name="sum")
    bias = tirx.const(-x_zero_point * height * width, "int32")
    scale = tirx.const(multiplier, "float32")
    return te.compute((n, channels, 1, 1), lambda b, c, i, j: saturate_half_to_even(
        (total[b, c] + bias).astype("float32") * scale, tirx.const(y_zero_point, "int32"), dtype),
        name="qlinear_global_average_pool")


def qlinear_average_pool(x: te.Tensor, *, x_scale: float, x_zero_point: int, y_scale: float, y_zero_point: int,
                         kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                         output_hw: Sequence[int], count_include_pad: bool, dtype: str) -> te.Tensor:
    """QLinearAveragePool, 2-D, of an NCHW ``x`` (int8 or uint8) -> [N, C, *output_hw] in ``dtype``; ``pads``
    is (top, left, bottom, right)."""
    n, channels, height, width = (int(d) for d in x.shape)
    ry = te.reduce_axis((0, kernel[0]), name="ry")
    rx = te.reduce_axis((0, kernel[1]), name="rx")
    zero = tirx.const(0.0, "float32")

    def window(o, axis):
        """The window's clipped start and end on ``axis`` (0: rows, 1: columns) for output position ``o``."""
        start = o * strides[axis] - pads[axis]
        size = (height, width)[axis]
        return tirx.max(start, 0), tirx.min(start + kernel[axis], size)

    def dequantized(b, c, iy, ix):
        inside = tirx.all(iy >= 0, iy < height, ix >= 0, ix < width)
        value = (x[b, c, iy, ix].astype("int32") - tirx.const(x_zero_point, "int32")).astype("float32")
        return tirx.if_then_else(inside, value * tirx.const(x_scale, "float32"), zero)

    total = te.compute((n, channels, *output_hw), lambda b, c, oy, ox: te.sum(dequantized(
        b, c, oy * strides[0] - pads[0] + ry, ox * strides[1] - pads[1] + rx), axis=[ry, rx]), name="sum")

    def output(b, c, oy, ox):
        if count_include_pad:
            count = tirx.const(float(kernel[0] * kernel[1]), "float32")
        else:
            (y0, y1), (x0, x1) = window(oy, 0), window(ox, 1)
            count = ((y1 - y0) * (x1 - x0)).astype("float32")
        average = total[b, c, oy, ox] / count
        value = average / tirx.const(y_scale, "float32") + tirx.const(float(y_zero_point), "float32")
        return saturate_half_to_even(value, tirx.const(0, "int32"), dtype)

    return te.compute((n, channels, *output_hw), output, name="qlinear_average_pool")
