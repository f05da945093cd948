"""ADD: ``q([act](add(dq(a), dq(b))))`` of two int8 operands -> TFLite's integer ADD kernel."""

from ...kernels import add_int8
from ...kernels.quant_params import add_params
from .binary import binary_lowering

LOWERING = binary_lowering("ADD", "relax.add", add_int8, add_params)
