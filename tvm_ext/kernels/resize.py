"""TE definition of TFLite's int8 RESIZE_BILINEAR (``reference_ops::ResizeBilinearInteger``), NHWC.

The integer arithmetic of the reference, re-derived: source coordinates in 1/1024 steps (scale_10 rounded
to nearest), four taps weighted in 2^-20 units summed in int64, then divided by 2^20 with rounding half away
from zero (DOUBLE rounding builds) or half up (``>> 20``, TFLITE_SINGLE_ROUNDING builds). The output is the
raw interpolation of the input's int8 values: TFLite applies no requantization.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import te, tirx

from .fixed_point import Rounding

_ONE = 1 << 10  # one input pixel in the reference's fixed-point coordinates


def _scale_10(input_size: int, output_size: int, align_corners: bool) -> int:
    """The input step per output pixel in 1/1024 units, rounded to nearest as the reference does."""
    if align_corners and output_size > 1:
        return (_ONE * (input_size - 1) + (output_size - 1) // 2) // (output_size - 1)
    return (_ONE * input_size + output_size // 2) // output_size


@dataclass(frozen=True)
class _Taps:
    """Along one axis: the source coordinate (1/1024 units) and the lower/upper source indices, as TIR."""

    position: tirx.PrimExpr
    lower: tirx.PrimExpr
    upper: tirx.PrimExpr


def _taps(index, input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool) -> _Taps:
    scale = _scale_10(input_size, output_size, align_corners)
    position = index * scale + (scale // 2 - _ONE // 2 if half_pixel_centers else 0)
    lower = tirx.max(tirx.truncdiv(position, _ONE), 0)
    upper = tirx.min(tirx.truncdiv(position + _ONE - 1, _ONE), input_size - 1)
    return _Taps(position, lower, upper)


def resize_bilinear_int8(
    data: te.Tensor, *, out_height: int, out_width: int, align_corners: bool, half_pixel_centers: bool,
    rounding: Rounding,
) -> te.Tensor:
    """NHWC int8 ``data`` resized to (out_height, out_width) with the reference's integer bilinear rule."""
    batches, in_height, in_width, depth = (int(d) for d in data.shape)

    def value(b, y, x, c):
        ty = _taps(y, in_height, out_height, align_corners, half_pixel_centers)
        tx = _taps(x, in_width, out_width, align_corners, half_pixel_centers)
        y_far = tirx.Cast("int64", ty.position - _ONE * ty.lower)  # weight of the upper row, 1/1024 units
        x_far = tirx.Cast("int64", tx.position - _ONE * tx.lower)
        y_near, x_near = _ONE - y_far, _ONE - x_far

        def tap(row, column):
            return tirx.Cast("int64", data[b, row, column, c])

        total = (tap(ty.lower, tx.lower) * y_near * x_near + tap(ty.upper, tx.lower) * y_far * x_near
                 + tap(ty.lower, tx.upper) * y_near * x_far + tap(ty.upper, tx.upper) * y_far * x_far)
        if rounding is Rounding.SINGLE:
            interpolated = (total + (1 << 19)) >> 20
        else:
            half = tirx.Select(total > 0, tirx.const(1 << 19, "int64"), tirx.const(-(1 << 19), "int64"))
            interpolated = tirx.truncdiv(total + half, tirx.const(1 << 20, "int64"))
        return tirx.Cast("int8", interpolated)

    return te.compute((batches, out_height, out_width, depth), value, name="resize_bilinear_int8")

