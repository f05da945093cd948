"""The int8 binary elementwise operators with a fused activation (ADD, SUB, MUL, DIV):
``q([act](op(dq(a), dq(b))))``, each operand an int8 activation or an int8 constant, broadcast."""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np
from tvm import relax, te
from tvm.relax.dpl import is_op

from ...kernels import Rounding
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedOperand, QuantizedResult, ends_float_operator, extract, float_operator_mismatch

# (lhs scale, rhs scale, output scale, rounding) -> the kernel's compile-time multipliers
ParamsOf = Callable[[np.float32, np.float32, np.float32, Rounding], object]


def binary_lowering(kind: str, relax_op: str, kernel: Callable[..., te.Tensor], params_of: ParamsOf,
                    int16_params_of: Optional[ParamsOf] = None,
                    tables: Callable[[], tuple[relax.Constant, ...]] = tuple) -> Lowering:
    """The lowering of the TFLite operator ``kind``, imported as the Relax op ``relax_op``, to ``kernel``
    (operands: both inputs, then the constants ``tables()`` gives; keywords: operand and output zero points,
    ``params_of``'s result, activation, rounding). With ``int16_params_of``, int16 operands and output of zero
    point 0 (TFLite Micro's int16 form) too."""
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
        dtypes = {str(operand.tensor.ty.dtype) for operand in (lhs, rhs)} | {str(quantize.ty.dtype)}
        zero_points = {lhs.quant.zero_point, rhs.quant.zero_point, out.quant.zero_point}
        if dtypes == {"int16"} and int16_params_of is not None and zero_points == {0}:
            params_of_dtype = int16_params_of
        elif dtypes == {"int8"}:
            params_of_dtype = params_of
        else:
            return float_operator_mismatch(quantize, ctx)
        params = params_of_dtype(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
        call = KernelCall(kind, matched[core], kernel, (lhs.tensor, rhs.tensor, *tables()),
                          {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                           "output_zero_point": out.quant.zero_point, "params": params, "rounding": ctx.rounding})
        return ClampedCall(call, out.activation)

    return Lowering(frozenset({kind}), ends_float_operator, match)
