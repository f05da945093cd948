"""MAXIMUM and MINIMUM: ``q(maximum(dq(a), dq(b)))`` (and minimum), each operand an int8 activation or
constant, broadcast -> TFLite Micro's kernels, which compare the stored int8 values and write the winner
as it is (the quantizations are not read)."""

from __future__ import annotations

from typing import Callable, Union

from tvm import relax, te
from tvm.relax.dpl import is_const, is_op

from ...kernels import maximum_int8, minimum_int8
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedOperand, ends_float_operator, extract, float_operator_mismatch


def _lowering(kind: str, relax_op: str, kernel: Callable[[te.Tensor, te.Tensor], te.Tensor]) -> Lowering:
    lhs_operand, rhs_operand = DequantizedOperand(), DequantizedOperand()
    core = is_op(relax_op)(lhs_operand.pattern, rhs_operand.pattern)
    result = is_op("relax.quantize")(core, is_const(), is_const())

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        matched = extract(result, quantize, ctx)
        if matched is None:
            return float_operator_mismatch(quantize, ctx)
        lhs, rhs = lhs_operand.read(matched, ctx), rhs_operand.read(matched, ctx)
        if lhs is None or rhs is None:
            return float_operator_mismatch(quantize, ctx)
        return FixedCall(KernelCall(kind, matched[core], kernel, (lhs.tensor, rhs.tensor)))

    return Lowering(frozenset({kind}), ends_float_operator, match)


MAXIMUM = _lowering("MAXIMUM", "relax.maximum", maximum_int8)
MINIMUM = _lowering("MINIMUM", "relax.minimum", minimum_int8)
