"""TE definitions of TFLite's integer AVERAGE_POOL_2D and MAX_POOL_2D (NHWC, same in/out quantization): int8,
or int16 (16x8), the output of the input's type.

Window taps outside the input are skipped (not counted in the average), as in the reference kernels.
``padding`` is (top, left, bottom, right).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from tvm import te, tirx

from .fixed_point import clamp_to_type
from .quant_params import ActivationRange


def _window(data: te.Tensor, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int]):
    n, h, w, c = (int(d) for d in data.shape)
    out_h = (h + padding[0] + padding[2] - pool[0]) // strides[0] + 1
    out_w = (w + padding[1] + padding[3] - pool[1]) // strides[1] + 1
    ry, rx = te.reduce_axis((0, pool[0]), "ry"), te.reduce_axis((0, pool[1]), "rx")

    def position(y, x):
        iy, ix = y * strides[0] + ry - padding[0], x * strides[1] + rx - padding[1]
        return iy, ix, tirx.all(iy >= 0, iy < h, ix >= 0, ix < w)

    return (n, out_h, out_w, c), ry, rx, position


def average_pool2d_integer(
    data: te.Tensor, *, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int], activation: ActivationRange
) -> te.Tensor:
    """Sum of the window's valid taps divided by their count, rounded half away from zero, clamped."""
    shape, ry, rx, position = _window(data, pool, strides, padding)
    dtype = str(data.dtype)

    def tap_sum(b, y, x, c):
        iy, ix, inside = position(y, x)
        return te.sum(tirx.if_then_else(inside, data[b, iy, ix, c].astype("int32"), 0), axis=[ry, rx])

    total = te.compute(shape, tap_sum, name="window_sum")
    _, h, w, _ = (int(d) for d in data.shape)

    def valid_taps(origin, size, extent):
        return tirx.min(size, extent - origin) - tirx.max(0, -origin)

    def average(b, y, x, c):
        s = total[b, y, x, c]
        n = valid_taps(y * strides[0] - padding[0], pool[0], h) * valid_taps(x * strides[1] - padding[1], pool[1], w)
        half = tirx.truncdiv(n, 2)
        return clamp_to_type(tirx.Select(s > 0, tirx.truncdiv(s + half, n), tirx.truncdiv(s - half, n)),
                             activation.low, activation.high, dtype)

    return te.compute(shape, average, name=f"average_pool2d_{data.dtype}")


def max_pool2d_integer(
    data: te.Tensor, *, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int], activation: ActivationRange
) -> te.Tensor:
    """Maximum over the window's valid taps, clamped to the activation range."""
    shape, ry, rx, position = _window(data, pool, strides, padding)
    dtype = str(data.dtype)

    def window_max(b, y, x, c):
        iy, ix, inside = position(y, x)
        lowest = tirx.const(int(np.iinfo(dtype).min), dtype)
        return te.max(tirx.if_then_else(inside, data[b, iy, ix, c], lowest), axis=[ry, rx])

    peak = te.compute(shape, window_max, name="window_max")
    return te.compute(shape, lambda *i: clamp_to_type(peak(*i), activation.low, activation.high, dtype),
                      name=f"max_pool2d_{data.dtype}")
