"""SUB: ``q([act](subtract(dq(a), dq(b))))`` of two int8 operands -> TFLite's integer SUB kernel (ADD's
rescaling to a common scale, then the difference)."""

from ...kernels import sub_int8
from ...kernels.quant_params import add_params
from .binary import binary_lowering

LOWERING = binary_lowering("SUB", "relax.subtract", sub_int8, add_params)
