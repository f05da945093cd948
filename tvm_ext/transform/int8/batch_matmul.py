"""BATCH_MATMUL: ``q(matmul([permute](dq(a)), [permute](dq(b))))`` (tvm_ext/frontend/tflite_ops/batch_matmul.py), each
operand an int8 (or, 16x8, int16) activation or constant -> TFLite's integer batch matmul kernel, or for int8 the
backend's own where it gives one (``backends.backend.KernelSchedules.int8_batch_matmul``)."""

from __future__ import annotations

import math
from typing import Union

from tvm import relax, tirx
from tvm.relax.dpl import is_op

from ...kernels.batch_matmul import batch_matmul_int8
from ...kernels.quant_params import fully_connected_multiplier
from ...layers import DECLARED_MACS_ATTR
from .binary import first_fitting
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
    """Per-tensor int8 operands and output, or int16 ones of zero point 0 (16x8: TFLite Micro's int16 kernel refuses
    others); a permute only as the frontend writes adj_x/adj_y."""
    matched = extract(_RESULT.pattern, quantize, ctx)
    if matched is None:
        return float_operator_mismatch(quantize, ctx)
    lhs, rhs, out = _LHS.dequantized.read(matched, ctx), _RHS.dequantized.read(matched, ctx), _RESULT.read(matched, ctx)
    adjoints = [side.adjoint in matched for side in (_LHS, _RHS)]
    swaps = all(_swaps_last_two_axes(matched[side.adjoint]) for side, adj in zip((_LHS, _RHS), adjoints) if adj)
    if lhs is None or rhs is None or out is None or not swaps:
        return float_operator_mismatch(quantize, ctx)
    dtypes = {str(side.tensor.ty.dtype) for side in (lhs, rhs)} | {str(quantize.ty.dtype)}
    int8 = dtypes == {"int8"}
    if not (int8 or dtypes == {"int16"} and {lhs.quant.zero_point, rhs.quant.zero_point, out.quant.zero_point} == {0}):
        return float_operator_mismatch(quantize, ctx)
    multiplier, shift = fully_connected_multiplier(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
    kernel, func_attrs = batch_matmul_int8, {}
    if int8 and ctx.int8_batch_matmul is not None and any(ctx.graph.constant(side.tensor) is None for side in (lhs, rhs)):
        # the backend's own kernel where it fits (not of two constants: that product would be folded on the host,
        # which cannot run a backend's helper calls), else the generic one; its TE extern stage shows no reduction
        # to count, so the lowering declares the product's MACs, the generic kernel's too
        kernel = first_fitting(ctx.int8_batch_matmul, batch_matmul_int8)
        func_attrs = {DECLARED_MACS_ATTR: tirx.IntImm("int64", _macs(matched[_CORE], lhs.tensor, adjoints[0]))}
    call = KernelCall("BATCH_MATMUL", matched[_CORE], kernel, (lhs.tensor, rhs.tensor),
                      {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                       "adj_x": adjoints[0], "adj_y": adjoints[1], "multiplier": multiplier, "shift": shift,
                       "output_zero_point": out.quant.zero_point, "rounding": ctx.rounding}, func_attrs)
    return ClampedCall(call, out.activation)


def _macs(core: relax.Call, lhs: relax.Expr, adj_x: bool) -> int:
    """The MACs of the product ``core``: each output element sums the depth (lhs's last axis, or with ``adj_x`` its
    last but one)."""
    lhs_shape = [int(d) for d in lhs.ty.shape]
    return math.prod(int(d) for d in core.ty.shape) * lhs_shape[-2 if adj_x else -1]


LOWERING = Lowering(frozenset({"BATCH_MATMUL"}), ends_float_operator, match)
