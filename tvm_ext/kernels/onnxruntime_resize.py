"""TE definition of ONNX's float bilinear Resize (NCHW, height and width) as onnxruntime's CPU provider computes it
(``UpsampleBilinear``), bit for bit.

onnxruntime's setup, per output row y (and alike per output column x), in float32: the source coordinate
``get_original_coordinate(float(y), scale, ...)`` of the coordinate transformation mode (``y`` itself when the
axis's scale is 1), clamped to [0, in - 1]; the taps ``y1 = int(in_y)``, ``y2 = min(y1 + 1, in - 1)``; the
weights ``dy1 = |in_y - y1|`` (of y2) and ``dy2 = |in_y - y2|`` (of y1), both 0.5 where y1 == y2. Each output is
then ``dx2 * dy2 * X11 + dx1 * dy2 * X21 + dx2 * dy1 * X12 + dx1 * dy1 * X22`` evaluated left to right in float32
(each product of weights rounded, then each term, then each sum): interpolating along x and then y, as TVM's
resize2d does, rounds otherwise in the last place. `bilinear_taps` computes the setup here, once, in float32;
the kernel reads it as constant tables (two int32 and two float32 of each axis's output length).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import te

# onnxruntime's coordinate transformation modes of a linear Resize that this kernel computes (tf_crop_and_resize
# extrapolates, and half_pixel_symmetric is refused before: both stay with TVM's converter).
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")


@dataclass(frozen=True)
class AxisTaps:
    """One axis's setup: per output index, the lower and upper source indices (int32) and their weights
    (float32): ``near_weight`` multiplies the lower tap (onnxruntime's dx2 / dy2), ``far_weight`` the upper."""

    lower: np.ndarray
    upper: np.ndarray
    near_weight: np.ndarray
    far_weight: np.ndarray


def _source_coordinate(index: np.float32, scale: np.float32, out_size: int, in_size: int, mode: str) -> np.float32:
    """onnxruntime's get_original_coordinate of output ``index`` (float32 arithmetic, its order)."""
    f32 = np.float32
    if mode == "asymmetric":
        return index / scale
    if mode == "pytorch_half_pixel":
        return (index + f32(0.5)) / scale - f32(0.5) if out_size > 1 else f32(0.0)
    if mode == "align_corners":
        return f32(0.0) if out_size == 1 else index * f32(in_size - 1) / f32(out_size - 1)
    if mode == "half_pixel":
        return (index + f32(0.5)) / scale - f32(0.5)
    raise ValueError(f"coordinate_transformation_mode {mode} is not computed by this kernel")


def bilinear_taps(in_size: int, out_size: int, scale: float, mode: str) -> AxisTaps:
    """One axis's taps and weights as onnxruntime's SetupUpsampleBilinear computes them; ``scale`` is the float32
    scale onnxruntime uses (the model's, or output / input size)."""
    f32 = np.float32
    lower, upper, near, far = [], [], [], []
    for index in range(out_size):
        coordinate = f32(index) if f32(scale) == f32(1) else _source_coordinate(f32(index), f32(scale), out_size,
                                                                                in_size, mode)
        coordinate = max(f32(0.0), min(coordinate, f32(in_size - 1)))
        low = min(int(coordinate), in_size - 1)
        high = min(low + 1, in_size - 1)
        far_weight, near_weight = abs(coordinate - f32(low)), abs(coordinate - f32(high))
        if low == high:
            far_weight = near_weight = f32(0.5)
        lower.append(low)
        upper.append(high)
        near.append(near_weight)
        far.append(far_weight)
    return AxisTaps(np.array(lower, np.int32), np.array(upper, np.int32), np.array(near, np.float32),
                    np.array(far, np.float32))


def bilinear_nchw(data: te.Tensor, row_lower: te.Tensor, row_upper: te.Tensor, row_near: te.Tensor,
                  row_far: te.Tensor, column_lower: te.Tensor, column_upper: te.Tensor, column_near: te.Tensor,
                  column_far: te.Tensor) -> te.Tensor:
    """float32 NCHW ``data`` resized to (len(row_lower), len(column_lower)) from its axes' `bilinear_taps`
    tables, in onnxruntime's order of operations."""
    batches, channels = (int(d) for d in data.shape[:2])
    out_height, out_width = int(row_lower.shape[0]), int(column_lower.shape[0])

    def value(n, c, y, x):
        top, bottom, left, right = row_lower[y], row_upper[y], column_lower[x], column_upper[x]
        total = column_near[x] * row_near[y] * data[n, c, top, left]
        total = total + column_far[x] * row_near[y] * data[n, c, top, right]
        total = total + column_near[x] * row_far[y] * data[n, c, bottom, left]
        return total + column_far[x] * row_far[y] * data[n, c, bottom, right]

    return te.compute((batches, channels, out_height, out_width), value, name="onnxruntime_bilinear")
