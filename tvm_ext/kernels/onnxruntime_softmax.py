"""TE definition of onnxruntime's QLinearSoftmax (com.microsoft) over the last axis, as its CPU provider
computes it (the float32 lookup table of contrib_ops/cpu/quantization/qlinear_softmax.cc):

- a table of 256 float32 values, T[k] = float32(exp((k - 255 + shift) * x_scale)) in double, with
  shift = max(0, log(float32(FLT_MAX / D)) - 5) / x_scale for a softmax over D elements (so that no sum of
  D of them overflows): the exponential of each difference k - 255 = x - max(x) of an input to its row's
  largest;
- per row, the float32 sum of the row's table values in order from 0, then each output
  int32(nearbyint(T * floor(1 / y_scale) / sum)) + y_zero_point, saturated above at the type's largest value
  (never below its smallest: the quotient is not negative). onnxruntime 1.32 saturates an int8 output so (an
  output of about 1 at y_scale 1/256, 128, is 127), where its older sources wrote the low byte.

x_zero_point plays no part: only differences of inputs are read.
"""

from __future__ import annotations

import math

import numpy as np
from tvm import te, tirx

from .onnx_qlinear import round_half_to_even

TABLE_SIZE = 256


def softmax_table(x_scale: float, elements: int) -> np.ndarray:
    """The float32 table for a softmax over ``elements`` inputs of scale ``x_scale``: entry k is the
    exponential of an input k - 255 steps below its row's largest, shifted up as onnxruntime shifts it."""
    largest = np.float32(np.finfo(np.float32).max) / np.float32(elements)  # float32, as C++'s float / size_t
    scale = float(np.float32(x_scale))
    shift = max(0.0, math.log(float(largest)) - 5.0) / scale
    return np.array([math.exp((k - 255.0 + shift) * scale) for k in range(TABLE_SIZE)], np.float64).astype(np.float32)


def output_multiplier(y_scale: float) -> float:
    """onnxruntime's float32 floor(1 / y_scale), the output's multiplier."""
    return float(np.floor(np.float32(1.0) / np.float32(y_scale)))


def qlinear_softmax(x: te.Tensor, table: te.Tensor, *, multiplier: float, y_zero_point: int,
                    dtype: str) -> te.Tensor:
    """QLinearSoftmax of ``x`` (int8 or uint8, any rank >= 1) over its last axis with ``table``
    (``softmax_table``) and ``multiplier`` (``output_multiplier``) -> ``x``'s shape in ``dtype``."""
    shape = [int(d) for d in x.shape]
    rows, last = shape[:-1], shape[-1]
    rk = te.reduce_axis((0, last), name="rk")
    largest = te.compute(rows, lambda *r: te.max(x[(*r, rk)].astype("int32"), axis=rk), name="row_max")

    def exponential(r, k):
        return table[x[(*r, k)].astype("int32") - largest[r] + (TABLE_SIZE - 1)]

    rs = te.reduce_axis((0, last), name="rs")
    total = te.compute(rows, lambda *r: te.sum(exponential(r, rs), axis=rs), name="row_sum")

    def output(*index):
        r = index[:-1]
        ratio = exponential(r, index[-1]) * tirx.const(multiplier, "float32") / total[r]
        quantized = round_half_to_even(ratio).astype("int32") + tirx.const(y_zero_point, "int32")
        return tirx.min(quantized, tirx.const(int(np.iinfo(dtype).max), "int32")).astype(dtype)

    return te.compute(shape, output, name="qlinear_softmax")
