"""MEAN and SUM: ``q(mean|sum(dq(x), axis, keepdims))`` -> TFLite Micro's integer QuantizedMeanOrSum (int8, or int16:
16x8); REDUCE_MAX and REDUCE_MIN: ``q(max|min(dq(x), axis, keepdims))`` of one quantization -> the extreme stored
value (TFLite Micro's int8 ReduceGeneric, which refuses an output quantized unlike its input)."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax

from ...kernels import Rounding
from ...kernels.reduce import max_or_min_int8, mean_or_sum_int8
from ...kernels.reduce_params import ReduceParams, mean_params, sum_params
from ...kernels.window_sums import window_sums_kernels
from .binary import first_fitting
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import QuantizedUnary, UnaryMatch, ends_float_operator

ParamsOf = Callable[[np.float32, np.float32, int, Rounding], ReduceParams]


def _axes(core: relax.Call) -> list[int]:
    """The reduced axes of the Relax reduction ``core``, non-negative and sorted (None: every axis)."""
    rank = len(core.args[0].ty.shape)
    return sorted({int(a) % rank for a in core.attrs.axis} if core.attrs.axis is not None else range(rank))


def _reduce_lowering(kind: str, relax_op: str,
                     kernel_call: Callable[[UnaryMatch, relax.Call, LoweringContext], Union[KernelCall, Mismatch]]
                     ) -> Lowering:
    """The lowering of the TFLite reducer ``kind``, which the frontend writes as ``relax_op`` in QDQ form."""
    pattern = QuantizedUnary(relax_op)

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        unary = pattern.match(quantize, ctx)
        if isinstance(unary, Mismatch):
            return unary
        call = kernel_call(unary, unary.matched[pattern.core], ctx)
        return call if isinstance(call, Mismatch) else FixedCall(call)

    return Lowering(frozenset({kind}), ends_float_operator, match)


def _mean_or_sum(kind: str, params_of: ParamsOf):
    def kernel_call(unary: UnaryMatch, core: relax.Call, ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
        data, out = unary.data, unary.out
        axes = _axes(core)
        shape = [int(d) for d in core.args[0].ty.shape]
        count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        if count == 0:
            return Mismatch(f"{kind} over an empty axis")
        params = params_of(data.quant.scale, out.scale, count, ctx.rounding)
        # int8 window sums a word at a time where the backend gives their ops (DSP cores) and they fit (not of a
        # constant input, which is folded on the host), else the generic kernel
        ops = ctx.int8_window_sums if ctx.graph.constant(data.tensor) is None else None
        kernel = mean_or_sum_int8 if ops is None else first_fitting(window_sums_kernels(ops)[2], mean_or_sum_int8)
        return KernelCall(kind, core, kernel, (data.tensor,),
                          {"axes": axes, "keepdims": bool(core.attrs.keepdims),
                           "input_zero_point": data.quant.zero_point, "output_zero_point": out.zero_point,
                           "multiplier": params.multiplier, "shift": params.shift, "rounding": ctx.rounding})

    return kernel_call


def _max_or_min(kind: str, maximum: bool):
    def kernel_call(unary: UnaryMatch, core: relax.Call, ctx: LoweringContext) -> Union[KernelCall, Mismatch]:
        if unary.data.quant != unary.out:
            return Mismatch(f"{kind} with an output quantized unlike its input (TFLite Micro refuses it)")
        return KernelCall(kind, core, max_or_min_int8, (unary.data.tensor,),
                          {"axes": _axes(core), "keepdims": bool(core.attrs.keepdims), "maximum": maximum})

    return kernel_call


def _sum_params(input_scale: np.float32, output_scale: np.float32, count: int, rounding: Rounding) -> ReduceParams:
    """SUM's rescale, which does not depend on the element count."""
    del count
    return sum_params(input_scale, output_scale, rounding)


MEAN = _reduce_lowering("MEAN", "relax.mean", _mean_or_sum("MEAN", mean_params))
SUM = _reduce_lowering("SUM", "relax.sum", _mean_or_sum("SUM", _sum_params))
REDUCE_MAX = _reduce_lowering("REDUCE_MAX", "relax.max", _max_or_min("REDUCE_MAX", maximum=True))
REDUCE_MIN = _reduce_lowering("REDUCE_MIN", "relax.min", _max_or_min("REDUCE_MIN", maximum=False))
