"""MUL: ``q([act](multiply(dq(a), dq(b))))`` of two int8 operands -> TFLite's integer MUL kernel."""

from ...kernels import mul_int8
from ...kernels.quant_params import mul_params
from .binary import binary_lowering

LOWERING = binary_lowering("MUL", "relax.multiply", mul_int8, mul_params)
