"""MUL: ``q([act](multiply(dq(a), dq(b))))`` of two int8 operands, or two int16 ones (16x8: TFLite Micro's int16
MUL, the int8 arithmetic and multiplier with zero points 0) -> TFLite's integer MUL kernel."""

from ...kernels import mul_int8
from ...kernels.quant_params import mul_params
from .binary import binary_lowering

LOWERING = binary_lowering("MUL", "relax.multiply", mul_int8, mul_params, mul_params)
