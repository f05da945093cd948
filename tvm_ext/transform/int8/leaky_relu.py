"""LEAKY_RELU: ``q(leakyrelu(dq(x), alpha))`` -> TFLite Micro's integer LEAKY_RELU kernel."""

from __future__ import annotations

from typing import Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import leaky_relu_int8
from ...kernels.quant_params import leaky_relu_params
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary

_INPUT = DequantizedActivation()
_LEAKY_RELU = is_op("relax.nn.leakyrelu")(_INPUT.pattern)
_RESULT = is_op("relax.quantize")(_LEAKY_RELU, is_const(), is_const())


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    unary = match_unary(_RESULT, _INPUT, quantize, ctx)
    if unary is None:
        return float_operator_mismatch(quantize, ctx)
    data, out, core = unary.data, unary.out, unary.matched[_LEAKY_RELU]
    # The frontend passes TFLite's float32 alpha as the attribute (a double holding the same value).
    params = leaky_relu_params(data.quant.scale, np.float32(core.attrs.alpha), out.scale, ctx.rounding)
    return FixedCall(KernelCall("LEAKY_RELU", core, leaky_relu_int8, (data.tensor,),
                                {"input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                                 "identity": params.identity, "alpha": params.alpha, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"LEAKY_RELU"}), ends_float_operator, match)
