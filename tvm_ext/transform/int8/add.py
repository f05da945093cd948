"""ADD: ``q([act](add(dq(a), dq(b))))`` of two int8 operands, or two int16 ones (16x8) -> TFLite's integer ADD
kernel."""

from ...kernels import add_int8
from ...kernels.quant_params import add_params, add_params_int16
from .binary import binary_lowering

LOWERING = binary_lowering("ADD", "relax.add", add_int8, add_params, add_params_int16,
                           backend_kernel=lambda ctx: ctx.int8_add, rescaled_sign=1)
