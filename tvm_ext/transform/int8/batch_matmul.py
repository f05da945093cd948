"""BATCH_MATMUL: ``q(matmul([permute](dq(a)), [permute](dq(b))))`` (tvm_ext/frontend/tflite_ops/batch_matmul.py), each
operand an int8 activation or constant -> TFLite's integer batch matmul kernel."""

from __future__ import annotations

from typing import Union

from tvm import relax
from tvm.relax.dpl import is_op

from ...kernels.batch_matmul import batch_matmul_int8
from ...kernels.quant_params import fully_connected_multiplier
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedOperand, QuantizedResult, ends_float_operator, extract, float_operator_mismatch


class _Operand:
    """One matmul operand: ``dq(x)``, or ``permute_dims(dq(x))`` swapping its last two axes (adj_x/adj_y)."""

    def __init__(self) -> None:
        self.dequantized = DequantizedOperand()
        self.adjoint = is_op("relax.permute_dims")(self.dequantized.pattern)
        self.pattern = self.adjoint | self.dequantized.pattern


_LHS, _RHS = _Operand(), _Operand()
_CORE = is_op("relax.matmul")(_LHS.pattern, _RHS.pattern)
_RESULT = QuantizedResult(_CORE)


def _swaps_last_two_axes(permute: relax.Call) -> bool:
    axes = [int(a) for a in permute.attrs.axes]
    rank = len(axes)
    return rank >= 2 and axes == list(range(rank - 2)) + [rank - 1, rank - 2]


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    """Per-tensor int8 operands and output; a permute only as the frontend writes adj_x/adj_y."""
    matched = extract(_RESULT.pattern, quantize, ctx)
    if matched is None:
        return float_operator_mismatch(quantize, ctx)
    lhs, rhs, out = _LHS.dequantized.read(matched, ctx), _RHS.dequantized.read(matched, ctx), _RESULT.read(matched, ctx)
    adjoints = [side.adjoint in matched for side in (_LHS, _RHS)]
    swaps = all(_swaps_last_two_axes(matched[side.adjoint]) for side, adj in zip((_LHS, _RHS), adjoints) if adj)
    if lhs is None or rhs is None or out is None or not swaps:
        return float_operator_mismatch(quantize, ctx)
    multiplier, shift = fully_connected_multiplier(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
    call = KernelCall("BATCH_MATMUL", matched[_CORE], batch_matmul_int8, (lhs.tensor, rhs.tensor),
                      {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                       "adj_x": adjoints[0], "adj_y": adjoints[1], "multiplier": multiplier, "shift": shift,
                       "output_zero_point": out.quant.zero_point, "rounding": ctx.rounding})
    return ClampedCall(call, out.activation)


LOWERING = Lowering(frozenset({"BATCH_MATMUL"}), ends_float_operator, match)
