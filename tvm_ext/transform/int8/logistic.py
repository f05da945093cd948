"""LOGISTIC: ``q(sigmoid(dq(x)))`` -> TFLite Micro's integer LOGISTIC kernel."""

from __future__ import annotations

from typing import Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import logistic_int8
from ...kernels.quant_params import logistic_params
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, extract, float_operator_mismatch

# TFLM requires an int8 LOGISTIC output quantized with scale 1/256 and zero point -128 (its Prepare checks
# both); the kernel writes exactly that quantization.
OUTPUT_SCALE = np.float32(1 / 256)
OUTPUT_ZERO_POINT = -128

_INPUT = DequantizedActivation()
_SIGMOID = is_op("relax.sigmoid")(_INPUT.pattern)
_RESULT = is_op("relax.quantize")(_SIGMOID, is_const(), is_const())


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    matched = extract(_RESULT, quantize, ctx)
    data = _INPUT.read(matched, ctx) if matched is not None else None
    out = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if data is None or out is None or out.scale != OUTPUT_SCALE or out.zero_point != OUTPUT_ZERO_POINT:
        return float_operator_mismatch(quantize, ctx)
    params = logistic_params(data.quant.scale, data.quant.zero_point)
    return FixedCall(KernelCall("LOGISTIC", matched[_SIGMOID], logistic_int8, (data.tensor,),
                                {"params": params, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"LOGISTIC"}), ends_float_operator, match)
