"""FULLY_CONNECTED: ``q([act](add(matmul(dq(x), dq(W^T)), dq(b))))`` -> one integer dense kernel."""

from __future__ import annotations

from typing import Union

import numpy as np
from tvm import relax

from ...kernels import fully_connected_int8
from ...kernels.quant_params import conv_multipliers, fully_connected_multiplier
from .lowering import Lowering, LoweringContext, Mismatch
from .mac import MacKernel, MacPattern
from .patterns import ends_float_operator, float_operator_mismatch

_PATTERN = MacPattern("relax.matmul")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[MacKernel, Mismatch]:
    """A rank-2 input times the weight the frontend transposed (``permute_dims``) from TFLite's [O, I]."""
    operands = _PATTERN.read(quantize, ctx)
    if operands is None or len(operands.core.args[0].ty.shape) != 2:
        return float_operator_mismatch(quantize, ctx)
    data, weight, out = operands.data, operands.weight, operands.out
    # The kernel reads [O, I]: the stored constant when the frontend only transposed it, else its transpose.
    weight_values = weight.values if weight.permuted and not weight.reshaped else np.ascontiguousarray(weight.values.T)
    if weight.scales.size == 1:
        m, s = fully_connected_multiplier(data.quant.scale, weight.scales[0], out.quant.scale, ctx.rounding)
        multipliers, shifts = np.array([m]), np.array([s])
    else:
        multipliers, shifts = conv_multipliers(data.quant.scale, weight.scales, out.quant.scale, ctx.rounding)
    return MacKernel("FULLY_CONNECTED", operands.core, fully_connected_int8, data.tensor, data.quant.zero_point,
                     weight_values, operands.bias, multipliers, shifts, out.quant.zero_point, out.activation,
                     ctx.rounding, channel_axis=0, folds_zero_point=True)


LOWERING = Lowering(frozenset({"FULLY_CONNECTED"}), ends_float_operator, match)
