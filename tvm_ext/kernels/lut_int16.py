"""TFLite's int16 lookup tables (``LUTPopulate<int16_t>`` and ``LUTLookup`` in
tensorflow/lite/kernels/internal/common.h), the way TFLite Micro builds them in Prepare() and reads them.

A table has 513 int16 entries: the function sampled at 512 equal steps over the input range plus its end
point, each sample biased by half the error of linear interpolation at the step's midpoint. A lookup indexes
with the high 9 bits of an int16 value and interpolates with the low 7. Every value is computed in float32,
as TFLite does (``FloatT = float``): numpy float32 operations are IEEE's, rounding is ``std::round`` (ties away
from zero), and the functions given are float32 ones (``exp_float32``: exp rounded to the nearest float32).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from tvm import tirx
from tvm.ir.expr import Expr as PrimExpr

LUT_INT16_SIZE = 513
_STEPS = LUT_INT16_SIZE - 1
_INT16_MIN, _INT16_MAX = -32768, 32767
FloatFunction = Callable[[np.float32], np.float32]


def exp_float32(value: np.float32) -> np.float32:
    """``std::exp(float)``: the exponential rounded to the nearest float32 (libm's expf agrees on every
    sample of TFLite's softmax table)."""
    return np.float32(np.exp(np.float64(value)))


def _round(value: np.float32) -> np.float32:
    """``std::round`` of a float32 (ties away from zero; exact in float64)."""
    return np.float32(np.copysign(np.floor(abs(np.float64(value)) + 0.5), value))


def _saturated(value: np.float32) -> int:
    return int(min(max(value, np.float32(_INT16_MIN)), np.float32(_INT16_MAX)))


def populate_lut_int16(transform: FloatFunction, input_scale: float, input_zero_point: int, output_scale: float,
                       output_zero_point: int) -> np.ndarray:
    """The int16 table of ``transform`` from the input quantization (scale, zero point) to the output one
    (``LUTPopulateInt16<float>``): LUT_INT16_SIZE int16 values."""
    f32 = np.float32
    input_scale, output_scale = f32(input_scale), f32(output_scale)
    input_min, input_max = (input_scale * f32(bound - input_zero_point) for bound in (_INT16_MIN, _INT16_MAX))
    output_min, output_max = (output_scale * f32(bound - output_zero_point) for bound in (_INT16_MIN, _INT16_MAX))
    step = (input_max - input_min) / f32(_STEPS)
    half_step = step / f32(2)
    scaling = f32(_INT16_MAX - _INT16_MIN + 1) / (output_max - output_min)
    table = []
    for i in range(_STEPS):
        value = transform(input_min + f32(i) * step)
        midpoint = transform(input_min + f32(i) * step + half_step)
        following = transform(input_min + f32(i + 1) * step)
        sample = _round(value * scaling)
        interpolated = _round((following * scaling + _round(value * scaling)) / f32(2))
        bias = _round((interpolated - _round(midpoint * scaling)) / f32(2))
        table.append(_saturated(sample - bias))
    table.append(_saturated(_round(transform(input_max) * scaling)))
    return np.array(table, np.int16)


def lut_lookup(table, value: PrimExpr) -> PrimExpr:
    """``LUTLookup(int16 value, table)`` as an int32 expression: ``table`` a TE tensor or buffer of
    LUT_INT16_SIZE int16 values, ``value`` an int16 expression, or an int32 one within int16 (read twice: pass a
    load)."""
    value = value.astype("int32")
    index = (value >> 7) + 256
    base = table[index].astype("int32")
    slope = table[index + 1].astype("int32") - base
    delta = (slope * (value & 0x7F) + 64) >> 7
    return tirx.Cast("int32", tirx.Cast("int16", base + delta))
