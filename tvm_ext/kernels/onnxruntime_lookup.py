"""onnxruntime's QLinearLeakyRelu (com.microsoft) as a table of its 256 int8 outputs, computed at compile time as
its CPU provider computes the table it looks each input up in (QLinearLookupBase: QlinearBuildLookupTable):

- each input q dequantized as float32(x_scale) * float32(q - x_zero_point), one float32 product;
- ``v >= 0 ? v : alpha * v`` in float32 (alpha the node's float32 attribute);
- quantized as MlasQuantizeLinear does: saturate(round_half_even(v / y_scale) + y_zero_point), the float32
  quotient (a division, not a product with 1 / y_scale) rounded half to even.

Each step is one IEEE float32 operation (numpy's float32 arithmetic here), so the table equals onnxruntime's entry
for entry, and the bundle's lookup (``tvm_ext.kernels.lookup.lookup_int8``: ``table[q + 128]``) its output for every
input. The same float32 operations are what the group DequantizeLinear -> LeakyRelu -> QuantizeLinear computes
unfused (``tvm_ext.kernels.onnx_qlinear``), so the table also equals that path.
"""

from __future__ import annotations

import numpy as np


def leaky_relu_table(x_scale: float, x_zero_point: int, y_scale: float, y_zero_point: int,
                     alpha: float) -> np.ndarray:
    """int8[256]: onnxruntime's QLinearLeakyRelu of int8 input ``index - 128`` (scales float32, zero points int8)."""
    inputs = np.arange(-128, 128, dtype=np.int32)
    with np.errstate(over="ignore", invalid="ignore"):
        dequantized = np.float32(x_scale) * (inputs - np.int32(x_zero_point)).astype(np.float32)
        activated = np.where(dequantized >= np.float32(0), dequantized, np.float32(alpha) * dequantized)
        quantized = np.rint(activated.astype(np.float32) / np.float32(y_scale)) + np.float32(y_zero_point)
    return np.clip(quantized, -128, 127).astype(np.int8)
