"""TE definitions of QUANTIZE (float32 -> int8) and DEQUANTIZE (int8 -> float32) at a model's edges (uint8
and int16 too, for ONNX QuantizeLinear and DequantizeLinear).

These are the only kernels with float arithmetic; the pass emits them only where a model's own input
or output is float. Rules of TFLite's reference kernels: q = clamp(round(x / scale) + zp), rounding half
away from zero on the float32 quotient; x = float32(double(scale) * (q - zp)).
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from .fixed_point import clamp_to_type


def quantize_int8(data: te.Tensor, *, scale: float, zero_point: int, dtype: str = "int8") -> te.Tensor:
    """float32 -> `dtype` (int8 by default; uint8 or int16 for an ONNX QuantizeLinear to them) with
    TFLite's AffineQuantize rule, clamped to `dtype`'s range."""
    info = np.iinfo(dtype)

    def value(*i):
        quotient = data(*i) / tirx.const(scale, "float32")
        rounded = tirx.Select(quotient >= 0, tirx.floor(quotient + 0.5), tirx.ceil(quotient - 0.5))
        return clamp_to_type(tirx.Cast("int32", rounded) + zero_point, int(info.min), int(info.max), dtype)

    return te.compute(data.shape, value, name="quantize_int8")


def dequantize_int8(data: te.Tensor, *, scale: float, zero_point: int) -> te.Tensor:
    """int8 -> float32: scale * (q - zero_point), the product taken in double as TFLite does."""
    return te.compute(
        data.shape,
        lambda *i: tirx.Cast(
            "float32", tirx.const(scale, "float64") * tirx.Cast("float64", data(*i).astype("int32") - zero_point)
        ),
        name="dequantize_int8",
    )
