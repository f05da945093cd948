"""PRELU: ``q(where(x >= 0, x, x * dq(alpha)))`` with x = dq(input) (tvm_ext/frontend/tflite_ops/prelu.py) -> TFLite's
integer PRELU with its two output multipliers."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels.prelu import PreluParams, prelu_int8
from ...kernels.quant_params import mul_params, rescale_multiplier
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, DequantizedOperand, ends_float_operator, extract, float_operator_mismatch

_INPUT = DequantizedActivation()
_ALPHA = DequantizedOperand()
_WHERE = is_op("relax.where")(is_op("relax.greater_equal")(_INPUT.pattern, is_const()), _INPUT.pattern,
                              is_op("relax.multiply")(_INPUT.pattern, _ALPHA.pattern))
_RESULT = is_op("relax.quantize")(_WHERE, is_const(), is_const())


def _match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    matched = extract(_RESULT, quantize, ctx)
    data = _INPUT.read(matched, ctx) if matched is not None else None
    alpha = _ALPHA.read(matched, ctx) if matched is not None else None
    out = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if data is None or alpha is None or out is None:
        return float_operator_mismatch(quantize, ctx)
    params = PreluParams(data.quant.zero_point, alpha.quant.zero_point, out.zero_point,
                         identity=rescale_multiplier(data.quant.scale, out.scale, ctx.rounding),
                         alpha=mul_params(data.quant.scale, alpha.quant.scale, out.scale, ctx.rounding).output)
    return FixedCall(KernelCall("PRELU", matched[_WHERE], prelu_int8, (data.tensor, alpha.tensor),
                                {"params": params, "rounding": ctx.rounding}))


LOWERING = Lowering(frozenset({"PRELU"}), ends_float_operator, _match)
