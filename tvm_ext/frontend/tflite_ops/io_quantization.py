"""The quantization a TFLite file declares for a model input or output, as the plan's QuantParams."""

from __future__ import annotations

import numpy as np

from memory_planner.plan import QuantParams, QuantRounding

_INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "int32"})


def tflite_tensor_quant(tensor, dtype: str) -> QuantParams | None:
    """`tensor`'s (a tflite.Tensor) affine quantization when it is an integer tensor (`dtype`) with scales; per
    channel along its QuantizedDimension when it has more than one scale. TFLite's QUANTIZE rounds half away
    from zero. A missing zero point is 0 (TFLite's default)."""
    quantization = tensor.Quantization()
    if dtype not in _INTEGER_DTYPES or quantization is None or quantization.ScaleLength() == 0:
        return None
    scales = [float(np.float32(s)) for s in quantization.ScaleAsNumpy()]
    zero_points = ([int(z) for z in quantization.ZeroPointAsNumpy()] if quantization.ZeroPointLength()
                   else [0] * len(scales))
    if len(zero_points) == 1 and len(scales) > 1:
        zero_points = zero_points * len(scales)
    axis = int(quantization.QuantizedDimension()) if len(scales) > 1 else None
    return QuantParams(tuple(scales), tuple(zero_points), axis, QuantRounding.HALF_AWAY_FROM_ZERO)
