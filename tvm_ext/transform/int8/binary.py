"""The int8 binary elementwise operators with a fused activation (ADD, SUB, MUL, DIV):
``q([act](op(dq(a), dq(b))))``, each operand an int8 activation or an int8 constant, broadcast."""

from __future__ import annotations

import functools
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
                    tables: Callable[[], tuple[relax.Constant, ...]] = tuple,
                    backend_kernel: Callable[[LoweringContext], Optional[Callable[..., Optional[te.Tensor]]]]
                    = lambda ctx: None) -> Lowering:
    """The lowering of the TFLite operator ``kind``, imported as the Relax op ``relax_op``, to ``kernel``
    (operands: both inputs, then the constants ``tables()`` gives; keywords: operand and output zero points,
    ``params_of``'s result, activation, rounding). With ``int16_params_of``, int16 operands and output of zero
    point 0 (TFLite Micro's int16 form) too. ``backend_kernel(ctx)``, where not None, is tried first on int8
    operands neither of which is a constant (a constant operator would be folded on the host, which cannot run
    a backend's helper calls): the generic ``kernel`` where it gives None."""
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
        own = backend_kernel(ctx) if dtypes == {"int8"} and not any(
            ctx.graph.constant(operand.tensor) is not None for operand in (lhs, rhs)) else None
        chosen = kernel if own is None else _first_fitting(own, kernel)
        call = KernelCall(kind, matched[core], chosen, (lhs.tensor, rhs.tensor, *tables()),
                          {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                           "output_zero_point": out.quant.zero_point, "params": params, "rounding": ctx.rounding})
        return ClampedCall(call, out.activation)

    return Lowering(frozenset({kind}), ends_float_operator, match)


@functools.cache
def _first_fitting(own: Callable[..., Optional[te.Tensor]],
                   kernel: Callable[..., te.Tensor]) -> Callable[..., te.Tensor]:
    """The kernel giving ``own``'s tensor on its operands, or ``kernel``'s where ``own`` gives None: one function
    per pair (identical calls of it share their PrimFunc), with ``kernel``'s signature (which names the operands)."""

    @functools.wraps(kernel)
    def chosen(*args, **kwargs) -> te.Tensor:
        tensor = own(*args, **kwargs)
        return kernel(*args, **kwargs) if tensor is None else tensor

    return chosen
