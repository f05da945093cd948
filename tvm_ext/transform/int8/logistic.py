"""LOGISTIC and TANH: ``q(sigmoid(dq(x)))`` and ``q(tanh(dq(x)))`` -> TFLite Micro's integer kernels."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax, te
from tvm.relax.dpl import is_const, is_op

from ...kernels import logistic_int8, tanh_int8
from ...kernels.quant_params import logistic_params
from .graph import Quant
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary

# The output quantization TFLite requires of each (its Prepare checks it); the kernel writes exactly that.
LOGISTIC_OUTPUT = Quant(np.float32(1 / 256), -128)
TANH_OUTPUT = Quant(np.float32(1 / 128), 0)

Kernel = Callable[..., te.Tensor]  # (data, *, params: LogisticParams, rounding: Rounding) -> the int8 output


def _lowering(kind: str, relax_op: str, kernel: Kernel, output: Quant) -> Lowering:
    data_operand = DequantizedActivation()
    core = is_op(relax_op)(data_operand.pattern)
    result = is_op("relax.quantize")(core, is_const(), is_const())

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        unary = match_unary(result, data_operand, quantize, ctx)
        if unary is None or unary.out != output:
            return float_operator_mismatch(quantize, ctx)
        params = logistic_params(unary.data.quant.scale, unary.data.quant.zero_point)
        return FixedCall(KernelCall(kind, unary.matched[core], kernel, (unary.data.tensor,),
                                    {"params": params, "rounding": ctx.rounding}))

    return Lowering(frozenset({kind}), ends_float_operator, match)


LOGISTIC = _lowering("LOGISTIC", "relax.sigmoid", logistic_int8, LOGISTIC_OUTPUT)
TANH = _lowering("TANH", "relax.tanh", tanh_int8, TANH_OUTPUT)
