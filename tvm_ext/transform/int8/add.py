"""ADD: ``q([act](add(dq(a), dq(b))))`` of two int8 activations -> TFLite's integer ADD kernel."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_op

from ...kernels import add_int8
from ...kernels.quant_params import add_params
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, QuantizedResult, ends_float_operator, extract, float_operator_mismatch

_LHS, _RHS = DequantizedActivation(), DequantizedActivation()
_ADD = is_op("relax.add")(_LHS.pattern, _RHS.pattern)
_RESULT = QuantizedResult(_ADD)


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    matched = extract(_RESULT.pattern, quantize, ctx)
    if matched is None:
        return float_operator_mismatch(quantize, ctx)
    lhs, rhs, out = _LHS.read(matched, ctx), _RHS.read(matched, ctx), _RESULT.read(matched, ctx)
    if lhs is None or rhs is None or out is None:
        return float_operator_mismatch(quantize, ctx)
    params = add_params(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
    call = KernelCall("ADD", matched[_ADD], add_int8, (lhs.tensor, rhs.tensor),
                      {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                       "output_zero_point": out.quant.zero_point, "params": params, "rounding": ctx.rounding})
    return ClampedCall(call, out.activation)


LOWERING = Lowering(frozenset({"ADD"}), ends_float_operator, match)
