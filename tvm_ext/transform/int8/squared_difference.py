"""SQUARED_DIFFERENCE: ``q(d * d)`` with ``d = subtract(dq(a), dq(b))`` (the frontend's import), each operand
an int8 activation or constant, or both int16 of zero point 0 (16x8: TFLite Micro's int16 form, no left shift),
broadcast -> TFLite Micro's integer SQUARED_DIFFERENCE kernel (an operand's rescaled
values tabled where ``kernels.elementwise.rescaled_table_args`` says, as ADD's and SUB's), or the backend's kernel
from the tabled values where ``binary.values_call`` gives it (as ADD's and SUB's)."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import squared_difference_int8
from ...kernels.quant_params import squared_difference_params, squared_difference_params_int16
from ...layers import BROADCAST_LOOKUP_ATTR
from .binary import elements_of, rescaled_tables, values_call
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedOperand, ends_float_operator, extract, float_operator_mismatch

_LHS, _RHS = DequantizedOperand(), DequantizedOperand()
_DIFFERENCE = is_op("relax.subtract")(_LHS.pattern, _RHS.pattern)
_RESULT = is_op("relax.quantize")(is_op("relax.multiply")(_DIFFERENCE, _DIFFERENCE), is_const(), is_const())


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    matched = extract(_RESULT, quantize, ctx)
    if matched is None:
        return float_operator_mismatch(quantize, ctx)
    lhs, rhs = _LHS.read(matched, ctx), _RHS.read(matched, ctx)
    out = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if lhs is None or rhs is None or out is None:
        return float_operator_mismatch(quantize, ctx)
    dtypes = {str(lhs.tensor.ty.dtype), str(rhs.tensor.ty.dtype), str(quantize.ty.dtype)}
    zero_points = {lhs.quant.zero_point, rhs.quant.zero_point, out.zero_point}
    if dtypes == {"int16"} and zero_points == {0}:
        params_of = squared_difference_params_int16
    elif dtypes == {"int8"}:
        params_of = squared_difference_params
    else:
        return float_operator_mismatch(quantize, ctx)
    params = params_of(lhs.quant.scale, rhs.quant.scale, out.scale, ctx.rounding)
    if dtypes == {"int8"} and not all(
            ctx.graph.constant(operand.tensor) is not None for operand in (lhs, rhs)):
        from_values = values_call("SQUARED_DIFFERENCE", matched[_DIFFERENCE], lhs, rhs, out.zero_point, params, -1,
                                  ctx, squared=True)
        if from_values is not None:
            return FixedCall(from_values)
    tables, tabled = rescaled_tables(lhs, rhs, elements_of(quantize), params, -1, ctx.rounding)
    return FixedCall(KernelCall("SQUARED_DIFFERENCE", matched[_DIFFERENCE], squared_difference_int8,
                                (lhs.tensor, rhs.tensor, *tables),
                                {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                                 "output_zero_point": out.zero_point, "params": params, "rounding": ctx.rounding,
                                 **tabled},
                                # its tables' loads indexed by the operands: the pattern of the kernel without them
                                func_attrs={BROADCAST_LOOKUP_ATTR: True} if tables else {}))


LOWERING = Lowering(frozenset({"SQUARED_DIFFERENCE"}), ends_float_operator, match)
