"""SUB: ``q([act](subtract(dq(a), dq(b))))`` of two int8 operands, or two int16 ones (16x8) -> TFLite's integer SUB
kernel (ADD's rescaling to a common scale, then the difference; TFLite Micro's int16 SUB shifts left by 15, as its
int16 ADD)."""

from ...kernels import sub_int8
from ...kernels.quant_params import add_params, add_params_int16
from .binary import binary_lowering

LOWERING = binary_lowering("SUB", "relax.subtract", sub_int8, add_params, add_params_int16, rescaled_sign=-1)
