"""TE definitions of TFLite's QUANTIZE (float32 -> int8 or int16) and DEQUANTIZE (back to float32) at a model's
edges, and of the integer QUANTIZE (a requantization, e.g. the int16 input and int32 output of TFLM's
keyword_scrambled models). ONNX's QuantizeLinear and DequantizeLinear have their own kernels
(``onnx_qlinear``: onnxruntime's rounding).

The pass emits the float ones only where a model's own input or output is float. Rules of TFLite's
reference kernels: q = clamp(round(x / scale) + zp), rounding half away from zero on the float32 quotient;
x = float32(double(scale) * (q - zp)).
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from .fixed_point import Rounding, clamp_to_type, largest_centered, multiply_by_constant_quantized_multiplier


def quantize_int8(data: te.Tensor, *, scale: float, zero_point: int, dtype: str = "int8") -> te.Tensor:
    """float32 -> `dtype` (int8 by default; int16 for a 16x8 model's input) with TFLite's AffineQuantize
    rule, clamped to `dtype`'s range."""
    info = np.iinfo(dtype)

    def value(*i):
        quotient = data(*i) / tirx.const(scale, "float32")
        rounded = tirx.Select(quotient >= 0, tirx.floor(quotient + 0.5), tirx.ceil(quotient - 0.5))
        return clamp_to_type(tirx.Cast("int32", rounded) + zero_point, int(info.min), int(info.max), dtype)

    return te.compute(data.shape, value, name="quantize_int8")


def dequantize_int8(data: te.Tensor, *, scale: float, zero_point: int) -> te.Tensor:
    """int8 (or int16) -> float32: scale * (q - zero_point), the product taken in double as TFLite does."""
    return te.compute(
        data.shape,
        lambda *i: tirx.Cast(
            "float32", tirx.const(scale, "float64") * tirx.Cast("float64", data(*i).astype("int32") - zero_point)
        ),
        name="dequantize_int8",
    )


def requantize_integer(data: te.Tensor, *, input_zero_point: int, multiplier: int, shift: int,
                       output_zero_point: int, out_dtype: str, rounding: Rounding) -> te.Tensor:
    """An integer QUANTIZE (int8/int16 -> int8/int16/int32): TFLM's Requantize,
    clamp(MBQM(q - input_zero_point, multiplier, shift) + output_zero_point) in ``out_dtype``; the requantization
    the cheapest helper whose contract the constants and the input's range meet (a right shift of an int8 or int16
    value: the small-accumulator one, which a DSP core's element loop computes as one SMMLAR with the zero point,
    `backends.cortex_m.schedules.biased_requantize`)."""
    info = np.iinfo(out_dtype)
    largest = largest_centered(str(data.dtype), input_zero_point)

    def value(*i):
        scaled = multiply_by_constant_quantized_multiplier(data(*i).astype("int32") - input_zero_point, multiplier,
                                                           shift, rounding, largest)
        if out_dtype == "int32":  # the clamp to int32 is the identity; the zero point is added in int64, wrapped
            return tirx.Cast("int32", tirx.Cast("int64", scaled) + output_zero_point)
        return clamp_to_type(scaled + output_zero_point, int(info.min), int(info.max), out_dtype)

    return te.compute(data.shape, value, name="requantize")
