"""TE definitions of onnxruntime's QLinearAdd and QLinearMul (com.microsoft), computed as its CPU provider
computes them on x86-64, which is not ONNX's dequantize-add-quantize:

- QLinearAdd (MLAS's AVX2 kernel): with the scale ratios rv = v_scale / c_scale and rs = s_scale / c_scale
  and the constant F = c_zero_point - fma(rv, v_zero_point, rs * s_zero_point) (float32, each step rounded;
  the compiler fuses onnxruntime's ``rv * zv + rs * zs`` into one fma), each output is
  saturate(round_half_even(fma(v, rv, fma(s, rs, F)))) of the raw integer inputs v and s as floats. ``v``
  is the operand read as a vector where onnxruntime's broadcast loop reads the other as one value repeated
  (the one whose innermost axis is broadcast), else the first input.
- QLinearMul (MLAS's SSE2 kernel): saturate(round_half_even(float((a - za) * (b - zb)) * ratio + zc)) with
  ratio = (a_scale * b_scale) / c_scale, a multiplication then an addition, each rounded.

The fused multiply-adds round once (``fused_multiply_add``: the bundle's exact helper), so the kernels equal
onnxruntime on every input, ties included; ONNX's formula differs from both in a few outputs per ten thousand.
Broadcasting is numpy's. The compile-time parameters come from ``qlinear_add_parameters`` and
``qlinear_mul_ratio``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tvm import te, tirx

from .fused_multiply_add import fused_multiply_add
from .onnx_qlinear import saturate_half_to_even


def fma_float32(x: float, y: float, z: float) -> np.float32:
    """x * y + z of float32 values rounded to float32 once (the kernels' ``fused_multiply_add``, at compile
    time): the product is exact in float64, the sum is rounded to odd there, then to float32."""
    product = np.float64(np.float32(x)) * np.float64(np.float32(y))
    addend = np.float64(np.float32(z))
    total = product + addend
    addend_part = total - product
    error = (product - (total - addend_part)) + (addend - addend_part)
    bits = np.array(total).view(np.int64)
    if error != 0 and not bits & 1:
        bits = bits + (1 if (error > 0) == (total > 0) else -1)
    return np.float32(bits.view(np.float64))


@dataclass(frozen=True)
class AddParameters:
    """QLinearAdd's compile-time constants: whether the second input is the vector operand ``v`` (else the
    first is), the ratios rv and rs, and F (float32 values; see the module docstring)."""

    second_is_vector: bool
    vector_ratio: float
    other_ratio: float
    fixed: float


def vector_is_second(a_shape: Sequence[int], b_shape: Sequence[int]) -> bool:
    """Whether onnxruntime's broadcast loop reads the second input as the vector: when the first one's
    innermost axis (of the output's axes that are not 1) is broadcast and the second's is not."""
    out = np.broadcast_shapes(tuple(a_shape), tuple(b_shape))
    rank = len(out)
    a_full = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b_full = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    axes = [i for i in range(rank) if out[i] != 1]
    if not axes:
        return False
    last = axes[-1]
    return a_full[last] == 1 and b_full[last] != 1


def qlinear_add_parameters(a: tuple[float, int], b: tuple[float, int], c: tuple[float, int],
                           second_is_vector: bool) -> AddParameters:
    """The constants of QLinearAdd for (scale, zero point) of inputs ``a``, ``b`` and output ``c``."""
    c_scale = np.float32(c[0])
    (v_scale, v_zero), (s_scale, s_zero) = (b, a) if second_is_vector else (a, b)
    vector_ratio = np.float32(np.float32(v_scale) / c_scale)
    other_ratio = np.float32(np.float32(s_scale) / c_scale)
    other_part = np.float32(other_ratio * np.float32(s_zero))
    fixed = np.float32(np.float32(c[1]) - fma_float32(vector_ratio, np.float32(v_zero), other_part))
    return AddParameters(second_is_vector, float(vector_ratio), float(other_ratio), float(fixed))


def qlinear_mul_ratio(a_scale: float, b_scale: float, c_scale: float) -> float:
    """QLinearMul's float32 ratio (a_scale * b_scale) / c_scale."""
    return float(np.float32(np.float32(np.float32(a_scale) * np.float32(b_scale)) / np.float32(c_scale)))


def _element(tensor: te.Tensor, index: Sequence[tirx.PrimExpr]) -> tirx.PrimExpr:
    """The element of ``tensor`` numpy broadcasting reads for output ``index``."""
    shape = [int(d) for d in tensor.shape]
    own = list(index)[len(index) - len(shape):] if shape else []
    return tensor(*(0 if size == 1 else i for size, i in zip(shape, own)))


def _broadcast_shape(a: te.Tensor, b: te.Tensor) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(int(d) for d in a.shape), tuple(int(d) for d in b.shape)))


def qlinear_add(a: te.Tensor, b: te.Tensor, *, parameters: AddParameters, dtype: str) -> te.Tensor:
    """onnxruntime's QLinearAdd of ``a`` and ``b`` (int8 or uint8) to ``dtype``."""
    vector_ratio = tirx.const(parameters.vector_ratio, "float32")
    other_ratio = tirx.const(parameters.other_ratio, "float32")
    fixed = tirx.const(parameters.fixed, "float32")

    def output(*index):
        first, second = (_element(t, index).astype("float32") for t in (a, b))
        vector, other = (second, first) if parameters.second_is_vector else (first, second)
        value = fused_multiply_add(vector, vector_ratio, fused_multiply_add(other, other_ratio, fixed))
        return saturate_half_to_even(value, tirx.const(0, "int32"), dtype)

    return te.compute(_broadcast_shape(a, b), output, name="qlinear_add")


def qlinear_mul(a: te.Tensor, b: te.Tensor, *, a_zero_point: int, b_zero_point: int, ratio: float,
                output_zero_point: int, dtype: str) -> te.Tensor:
    """onnxruntime's QLinearMul of ``a`` and ``b`` (int8 or uint8) to ``dtype``."""

    def output(*index):
        first = _element(a, index).astype("int32") - tirx.const(a_zero_point, "int32")
        second = _element(b, index).astype("int32") - tirx.const(b_zero_point, "int32")
        scaled = (first * second).astype("float32") * tirx.const(ratio, "float32")
        value = scaled + tirx.const(float(output_zero_point), "float32")
        return saturate_half_to_even(value, tirx.const(0, "int32"), dtype)

    return te.compute(_broadcast_shape(a, b), output, name="qlinear_mul")
