"""LEAKY_RELU: ``q(leakyrelu(dq(x), alpha))`` -> TFLite Micro's integer LEAKY_RELU: of an int8 input a lookup in
the 256-entry table of its outputs (``kernels.int8_tables``; fused after a convolution, the epilogue is then one
load instead of a test and a second requantization), of an int16 one (16x8) the kernel computing it."""

from __future__ import annotations

from typing import Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import leaky_relu_int8
from ...kernels.int8_tables import leaky_relu_table
from ...kernels.quant_params import leaky_relu_params
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary
from .tables import lookup_call, table_constant

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
    if str(quantize.ty.dtype) == "int8":
        table = table_constant(leaky_relu_table, data.quant.zero_point, out.zero_point, params, ctx.rounding)
        return FixedCall(lookup_call("LEAKY_RELU", core, data.tensor, table))
    return FixedCall(KernelCall("LEAKY_RELU", core, leaky_relu_int8, (data.tensor,),
                                {"input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                                 "identity": params.identity, "alpha": params.alpha, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"LEAKY_RELU"}), ends_float_operator, match)
