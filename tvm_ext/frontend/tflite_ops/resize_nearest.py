"""TFLite RESIZE_NEAREST_NEIGHBOR of a quantized tensor -> Relax (TVM 0.27 refuses it, and its coordinate
modes cannot express TFLite's align_corners together with half_pixel_centers).

TFLite picks each output row and column with ``GetNearestNeighbor`` (float32 arithmetic, computed here once,
as compile-time index tables) and copies the int8 values as they are. The converter writes that, in QDQ form:

    quantize(take(take(dequantize(x), rows, axis=1), columns, axis=2))

with the same quantization in and out, so the float model is TFLite's exactly; ``tvm_ext.transform.int8.resize``
lowers it to a gather of the int8 values. A float RESIZE_NEAREST_NEIGHBOR goes to TVM's own converter.
"""

from __future__ import annotations

import math

import numpy as np
from tvm import relax


class ResizeNearestConversionError(ValueError):
    """The RESIZE_NEAREST_NEIGHBOR operator is one our converter does not take (the message says why)."""


def nearest_indices(input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """TFLite's GetNearestNeighbor for every output index (int32), with its float32 arithmetic."""
    if align_corners and output_size > 1:
        scale = np.float32(input_size - 1) / np.float32(output_size - 1)
    else:
        scale = np.float32(input_size) / np.float32(output_size)
    offset = np.float32(0.5 if half_pixel_centers else 0.0)
    indices = []
    for index in range(output_size):
        position = float((np.float32(index) + offset) * scale)  # exact: a float32 value
        if align_corners:  # TfLiteRound: half away from zero
            chosen = int(math.copysign(math.floor(abs(position) + 0.5), position))
        else:
            chosen = math.floor(position)
        chosen = min(chosen, input_size - 1)
        indices.append(max(chosen, 0) if half_pixel_centers else chosen)
    return np.array(indices, np.int32)


def _quantization(tensor) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """A quantized tensor's scales and zero points as stored in the file."""
    quantization = tensor.tensor.Quantization()
    return tuple(quantization.ScaleAsNumpy().tolist()), tuple(quantization.ZeroPointAsNumpy().tolist())


def convert_resize_nearest_neighbor(converter, op, tvm_convert) -> relax.Expr:
    """The Relax expression of RESIZE_NEAREST_NEIGHBOR ``op``: ours when its input is quantized."""
    from tflite.ResizeNearestNeighborOptions import ResizeNearestNeighborOptions

    data, size = converter.get_input_tensors(op)[:2]
    output = converter.get_output_tensors(op)[0]
    if not data.qnn_params:
        return tvm_convert(op)
    if not output.qnn_params or _quantization(data) != _quantization(output):
        raise ResizeNearestConversionError("RESIZE_NEAREST_NEIGHBOR with different input and output quantization "
                                           "(TFLite copies the int8 values unchanged)")
    options = ResizeNearestNeighborOptions()
    options.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
    align_corners, half_pixel_centers = bool(options.AlignCorners()), bool(options.HalfPixelCenters())
    _, in_height, in_width, _ = (int(d) for d in data.tensor.ShapeAsNumpy())
    out_height, out_width = (int(d) for d in converter.get_tensor_value(size).reshape(-1))
    rows = nearest_indices(in_height, out_height, align_corners, half_pixel_centers)
    columns = nearest_indices(in_width, out_width, align_corners, half_pixel_centers)
    values = converter.dequantize(converter.get_tensor_expr(data), data)
    gathered = relax.op.take(relax.op.take(values, relax.const(rows), axis=1), relax.const(columns), axis=2)
    return converter.quantize(gathered, output)
