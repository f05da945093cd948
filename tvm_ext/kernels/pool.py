"""TE definitions of TFLite's integer AVERAGE_POOL_2D and MAX_POOL_2D (NHWC, same in/out quantization): int8,
or int16 (16x8), the output of the input's type; and a global average pool summed band by band (`row_sums`,
`average_of_sums`: integer or float), for streamed bands.

Window taps outside the input are skipped (not counted in the average), as in the reference kernels.
``padding`` is (top, left, bottom, right).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from tvm import te, tirx

from .fixed_point import clamp_to_type
from .quant_params import ActivationRange


def _window(data: te.Tensor, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int],
            channels_first: bool = False):
    """The NHWC output shape (with ``channels_first``: of an NCHW ``data``, still (n, out_h, out_w, c)), the window's
    reduce axes, and ``position``."""
    if channels_first:
        n, c, h, w = (int(d) for d in data.shape)
    else:
        n, h, w, c = (int(d) for d in data.shape)
    out_h = (h + padding[0] + padding[2] - pool[0]) // strides[0] + 1
    out_w = (w + padding[1] + padding[3] - pool[1]) // strides[1] + 1
    ry, rx = te.reduce_axis((0, pool[0]), "ry"), te.reduce_axis((0, pool[1]), "rx")

    def position(y, x, dy=ry, dx=rx):
        """The input row and column of output (y, x)'s window tap (dy, dx) (default: the reduce axes), and
        whether it lies inside the input."""
        iy, ix = y * strides[0] + dy - padding[0], x * strides[1] + dx - padding[1]
        return iy, ix, tirx.all(iy >= 0, iy < h, ix >= 0, ix < w)

    return (n, out_h, out_w, c), ry, rx, position


UNROLLED_TAPS = 9
"""A pool window of at most this many taps is one expression of its taps (no accumulator in memory)."""


def average_pool2d_integer(
    data: te.Tensor, *, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int], activation: ActivationRange
) -> te.Tensor:
    """Sum of the window's valid taps divided by their count, rounded half away from zero, clamped. A window of
    at most UNROLLED_TAPS taps is written as the sum of its taps, one expression per output element (a reduction
    keeps its running sum in a buffer, stored and reloaded at every tap). An unpadded window's count is the
    constant int32 window size: computed from the output position, whose indices are int64 (Relax's), it makes
    TVM widen the sum and the quotient to int64, a call of the C library's 64-bit division on a 32-bit core."""
    shape, ry, rx, position = _window(data, pool, strides, padding)
    dtype = str(data.dtype)

    def tap(b, y, x, c, dy, dx):
        iy, ix, inside = position(y, x, dy, dx)
        return tirx.if_then_else(inside, data[b, iy, ix, c].astype("int32"), 0)

    def unrolled_sum(b, y, x, c):
        taps = [tap(b, y, x, c, dy, dx) for dy in range(pool[0]) for dx in range(pool[1])]
        total = taps[0]
        for term in taps[1:]:
            total = total + term
        return total

    def tap_sum(b, y, x, c):
        iy, ix, inside = position(y, x)
        return te.sum(tirx.if_then_else(inside, data[b, iy, ix, c].astype("int32"), 0), axis=[ry, rx])

    unrolled = pool[0] * pool[1] <= UNROLLED_TAPS
    total = None if unrolled else te.compute(shape, tap_sum, name="window_sum")
    _, h, w, _ = (int(d) for d in data.shape)

    def valid_taps(origin, size, extent):
        """How many of the `size` taps from `origin` lie in [0, `extent`): an int32 count of int32 ones, each under
        its position's test (from the int64 output index, a min and max of it made TVM widen the window's sum and
        the quotient to int64, a call of the C library's 64-bit division an output)."""
        count = tirx.const(0, "int32")
        for tap in range(size):
            count = count + tirx.if_then_else(tirx.all(origin + tap >= 0, origin + tap < extent),
                                              tirx.const(1, "int32"), tirx.const(0, "int32"))
        return count

    def average(b, y, x, c):
        s = unrolled_sum(b, y, x, c) if unrolled else total[b, y, x, c]
        n = tirx.const(pool[0] * pool[1], "int32") if not any(padding) else \
            valid_taps(y * strides[0] - padding[0], pool[0], h) * valid_taps(x * strides[1] - padding[1], pool[1], w)
        window_sum = tirx.Var("window_sum", "int32")
        return tirx.Let(window_sum, s, clamp_to_type(rounded_quotient(window_sum, n), activation.low, activation.high,
                                                     dtype))

    return te.compute(shape, average, name=f"average_pool2d_{data.dtype}")


def rounded_quotient(total, count):
    """`total` / `count` rounded half away from zero (TFLite's average pool; both int32, `count` > 0): the
    quotient of `total` plus half the count of its sign (`total >> 31` is 0 or -1, and (half ^ -1) + 1 = -half;
    a total of 0 gets +half, which still rounds to 0). Arithmetic, not a select of two quotients: TVM writes the
    select's test `total > 0` over a window's sum in int64 (the taps cast to int64 and added again beside the
    int32 sum, some 40 instructions per output of vww_96_int8's 3x3 average pool on cortex-m4f)."""
    half = tirx.truncdiv(count, 2)
    sign = tirx.shift_right(total, tirx.const(31, "int32"))
    return tirx.truncdiv(total + tirx.bitwise_xor(half, sign) - sign, count)


def row_sums(data: te.Tensor, *before: te.Tensor) -> te.Tensor:
    """A band of rows' part of a global average pool: [1, 1, 1, C], the sum over the rows and columns of the NHWC
    `data` [1, h, w, C], plus the sums of the bands before (`before`: one such tensor, or none for the first band).
    tvm_ext.transform.patch_prefix streams a global pool's input through it band by band. An integer `data` sums
    in int32; a float `data` sums in its own type, starting from the bands' sums before and adding the pixels row
    after row, column after column: the additions, in their order, of the whole pool's one sum over its input
    (TFLite's float AVERAGE_POOL_2D), so the last band's sums are the whole pool's to the bit."""
    _, h, w, channels = (int(d) for d in data.shape)
    if _is_float(data):
        return _float_row_sums(data, before[0] if before else None)
    ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
    band = te.compute((1, 1, 1, channels), lambda b, y, x, c: te.sum(data[b, ry, rx, c].astype("int32"),
                                                                     axis=[ry, rx]), name="band_sum")
    if not before:
        return band
    return te.compute((1, 1, 1, channels), lambda b, y, x, c: before[0][b, y, x, c] + band[b, y, x, c],
                      name="running_sum")


def average_of_sums(total: te.Tensor, *, count: int, dtype: str) -> te.Tensor:
    """The global average pool of `count` pixels from their sums `total` [1, 1, 1, C] (`row_sums` of the last
    band): each channel's sum divided by `count`; an int32 sum rounded half away from zero and saturated to
    `dtype`, as average_pool2d_integer computes it from the whole input, a float sum divided in its type (TFLite's
    float AVERAGE_POOL_2D: its one sum over the window divided by the count of its taps)."""
    shape = tuple(int(d) for d in total.shape)
    if _is_float(total):
        return te.compute(shape, lambda b, y, x, c: total[b, y, x, c] / tirx.const(float(count), str(total.dtype)),
                          name=f"average_of_sums_{dtype}")
    info = np.iinfo(dtype)
    return te.compute(shape,
                      lambda b, y, x, c: clamp_to_type(rounded_quotient(total[b, y, x, c], tirx.const(count, "int32")),
                                                       int(info.min), int(info.max), dtype),
                      name=f"average_of_sums_{dtype}")


def _float_row_sums(data: te.Tensor, before: te.Tensor | None) -> te.Tensor:
    """row_sums of a float `data`: one reduction from 0 over an extra first row, the sums before (`before`) and
    zeros (0 + before + 0 ... is before: a running float sum is never -0), then over `data`'s pixels row after row
    (TE's sum here takes no tensor as its start, nor a condition: its init is 0)."""
    _, h, w, channels = (int(d) for d in data.shape)
    if before is None:
        ry, rx = te.reduce_axis((0, h), "ry"), te.reduce_axis((0, w), "rx")
        return te.compute((1, 1, 1, channels), lambda b, y, x, c: te.sum(data[b, ry, rx, c], axis=[ry, rx]),
                          name="running_sum")
    ry, rx = te.reduce_axis((0, h + 1), "ry"), te.reduce_axis((0, w), "rx")
    zero = tirx.const(0.0, str(data.dtype))
    return te.compute((1, 1, 1, channels), lambda b, y, x, c: te.sum(
        tirx.Select(ry == 0, tirx.Select(rx == 0, before[b, y, x, c], zero), data[b, tirx.max(ry - 1, 0), rx, c]),
        axis=[ry, rx]), name="running_sum")


def _is_float(tensor: te.Tensor) -> bool:
    return str(tensor.dtype).startswith("float")


def max_pool2d_integer(
    data: te.Tensor, *, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int],
    activation: ActivationRange, channels_first: bool = False,
) -> te.Tensor:
    """Maximum over the window's valid taps, clamped to the activation range. The maximum starts at the range's
    low bound instead of the type's lowest value (max(low, taps) is the clamp from below, also of a window
    without valid taps); only a high bound below the type's highest value adds a stage. A window of at most
    UNROLLED_TAPS taps is written as the maximum of its taps, one expression per output element (a reduction
    keeps its running maximum in the output or a buffer, stored and reloaded at every tap). With
    ``channels_first`` ``data`` and the output are NCHW (an ONNX model's MaxPool), each channel's plane contiguous."""
    (n, out_h, out_w, c), ry, rx, position = _window(data, pool, strides, padding, channels_first)
    shape = (n, c, out_h, out_w) if channels_first else (n, out_h, out_w, c)
    dtype = str(data.dtype)
    low = tirx.const(activation.low, dtype)

    def at(b, y, x, c):
        return data[b, c, y, x] if channels_first else data[b, y, x, c]

    def nhwc(body):
        """``body`` (of b, y, x, c) as a function of the output's indices."""
        return (lambda b, c, y, x: body(b, y, x, c)) if channels_first else body

    def tap(b, y, x, c, dy, dx):
        iy, ix, inside = position(y, x, dy, dx)
        return tirx.if_then_else(inside, at(b, iy, ix, c), low)

    def unrolled_max(b, y, x, c):
        peak = low
        for dy in range(pool[0]):
            for dx in range(pool[1]):
                peak = tirx.max(peak, tap(b, y, x, c, dy, dx))
        return peak

    from_low = te.comm_reducer(lambda a, b: tirx.max(a, b), lambda t: tirx.const(activation.low, t),
                               name="max_from_low")

    def window_max(b, y, x, c):
        iy, ix, inside = position(y, x)
        return from_low(tirx.if_then_else(inside, at(b, iy, ix, c), low), axis=[ry, rx])

    body = nhwc(unrolled_max if pool[0] * pool[1] <= UNROLLED_TAPS else window_max)
    if activation.high >= int(np.iinfo(dtype).max):
        return te.compute(shape, body, name=f"max_pool2d_{dtype}")
    peak = te.compute(shape, body, name="window_max")
    high = tirx.const(activation.high, dtype)
    return te.compute(shape, lambda *i: tirx.min(peak(*i), high), name=f"max_pool2d_{dtype}")
