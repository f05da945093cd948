"""The int8 binary elementwise operators with a fused activation (ADD, SUB, MUL):
``q([act](op(dq(a), dq(b))))``, each operand an int8 activation or an int8 constant, broadcast."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax, te
from tvm.relax.dpl import is_op

from ...kernels import Rounding
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedOperand, QuantizedResult, ends_float_operator, extract, float_operator_mismatch

# (lhs scale, rhs scale, output scale, rounding) -> the kernel's compile-time multipliers
ParamsOf = Callable[[np.float32, np.float32, np.float32, Rounding], object]


def binary_lowering(kind: str, relax_op: str, kernel: Callable[..., te.Tensor], params_of: ParamsOf) -> Lowering:
    """The lowering of the TFLite operator ``kind``, imported as the Relax op ``relax_op``, to ``kernel``
    (keywords: operand and output zero points, ``params_of``'s result, activation, rounding)."""
    lhs_operand, rhs_operand = DequantizedOperand(), DequantizedOperand()
    core = is_op(relax_op)(lhs_operand.pattern, rhs_operand.pattern)
    result = QuantizedResult(core)

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
        matched = extract(result.pattern, quantize, ctx)
        if matched is None:
            return float_operator_mismatch(quantize, ctx)
        lhs, rhs, out = lhs_operand.read(matched, ctx), rhs_operand.read(matched, ctx), result.read(matched, ctx)
        if lhs is None or rhs is None or out is None:
            return float_operator_mismatch(quantize, ctx)
        params = params_of(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
        call = KernelCall(kind, matched[core], kernel, (lhs.tensor, rhs.tensor),
                          {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                           "output_zero_point": out.quant.zero_point, "params": params, "rounding": ctx.rounding})
        return ClampedCall(call, out.activation)

    return Lowering(frozenset({kind}), ends_float_operator, match)
