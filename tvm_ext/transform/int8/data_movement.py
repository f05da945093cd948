"""Data-movement operators the frontend applies to the int8 tensor itself (no dequantize/quantize around them):
TRANSPOSE (``permute_dims(x, axes)``; DEPTH_TO_SPACE and SPACE_TO_DEPTH are ``reshape``, ``permute_dims``,
``reshape``, the reshapes views of the same bytes), PAD and PADV2 (``nn.pad(x, widths, value)``), SQUEEZE and EXPAND_DIMS
(``squeeze(x, axes)``, ``expand_dims(x, axis)``: reshapes to the shape the frontend inferred, which
``RewriteDataflowReshape`` turns into views of the input's bytes), SLICE and STRIDED_SLICE
(``strided_slice(x, axes, begin, end[, strides])``: the frontend resolved SLICE's sizes into ends and
STRIDED_SLICE's masks into one slice, and a reshape where it shrinks axes). (The concatenation of int8 tensors
themselves is CONCATENATION's second form: `tvm_ext.transform.int8.concatenation`.)

They keep one quantization (TVM's converter asserts PAD's input and output agree, as TFLite Micro requires
of the zero point), so each is a copy kernel of the stored int8 values with no requantization (PAD's as runs where the backend
asks for them: the input's rows copied whole, the padding filled, ``tvm_ext.kernels.copy_runs.pad_runs``; TRANSPOSE's
too: the trailing axes it keeps in place one copy per index of the others, ``transpose_runs``). PAD's value
is the one the frontend wrote, already in the quantized domain: the zero point for PAD (TFLite Micro pads
with the output's, equal to the input's), PADV2's stored int8 constant as it is.
"""

from __future__ import annotations

from typing import Callable

from tvm import relax, topi
from tvm.relax.dpl import DFPattern, is_op, wildcard

from ...kernels.copy_runs import pad_runs, transpose_runs
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext

PAD_OPERATORS = frozenset({"PAD", "PADV2"})
TRANSPOSE_OPERATORS = frozenset({"TRANSPOSE", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH"})
SLICE_OPERATORS = frozenset({"SLICE", "STRIDED_SLICE"})


def _int8_operand_lowering(operators: frozenset[str], pattern: DFPattern,
                           kernel_call: Callable[[relax.Call, LoweringContext], KernelCall]) -> Lowering:
    """A lowering of ``pattern`` (a Relax op applied to an int8 tensor already lowered) to ``kernel_call``."""

    def completes(value: relax.Expr, ctx: LoweringContext) -> bool:
        return bool(pattern.match(value)) and value.args[0] in ctx.lowered

    def match(call: relax.Call, ctx: LoweringContext) -> FixedCall:
        return FixedCall(kernel_call(call, ctx))

    return Lowering(operators, completes, match)


def _transpose(call: relax.Call, ctx: LoweringContext) -> KernelCall:
    axes = None if call.attrs.axes is None else [int(axis) for axis in call.attrs.axes]  # None: reversed
    # as runs of the trailing axes it keeps where the backend asks for copy runs (``ctx.pad_runs``)
    return KernelCall(recorded_operator(call, ctx, TRANSPOSE_OPERATORS, "TRANSPOSE"), call,
                      transpose_runs if ctx.pad_runs else topi.transpose, (ctx.lowered[call.args[0]],), {"axes": axes})


def recorded_operator(call: relax.Call, ctx: LoweringContext, operators: frozenset[str], default: str) -> str:
    """Which of ``operators`` the frontend imported as ``call`` (its layer record says), else ``default``."""
    records = ctx.graph.records_of(call)
    return records[0].kind if records and records[0].kind in operators else default


def _pad(call: relax.Call, ctx: LoweringContext) -> KernelCall:
    """PAD's kernel: as runs where the backend asks for them (``ctx.pad_runs``), else ``topi.nn.pad``'s."""
    widths = [int(width) for width in call.attrs.pad_width]  # (before, after) of each axis in turn
    value = int(float(call.attrs.pad_value))
    return KernelCall(recorded_operator(call, ctx, PAD_OPERATORS, "PAD"), call,
                      pad_runs if ctx.pad_runs else topi.nn.pad,
                      (ctx.lowered[call.args[0]],),
                      {"pad_before": widths[0::2], "pad_after": widths[1::2], "pad_value": value})


def _slice(call: relax.Call, ctx: LoweringContext) -> KernelCall:
    axes, begin, end, *strides = ([int(value.value) for value in operand.fields] for operand in call.args[1:])
    # SLICE has no strides: topi's strided_slice with axes needs one per axis.
    return KernelCall(recorded_operator(call, ctx, SLICE_OPERATORS, "SLICE"), call, topi.strided_slice,
                      (ctx.lowered[call.args[0]],),
                      {"begin": begin, "end": end, "strides": strides[0] if strides else [1] * len(axes),
                       "axes": axes,
                       "assume_inbound": bool(call.attrs.assume_inbound)})


def _reshape_to_result(kind: str) -> Callable[[relax.Call, LoweringContext], KernelCall]:
    """The kernel call of an operator that only changes the shape: a reshape to its result's shape."""

    def kernel_call(call: relax.Call, ctx: LoweringContext) -> KernelCall:
        shape = [int(size) for size in call.ty.shape]
        return KernelCall(kind, call, topi.reshape, (ctx.lowered[call.args[0]],), {"newshape": shape})

    return kernel_call


TRANSPOSE = _int8_operand_lowering(TRANSPOSE_OPERATORS, is_op("relax.permute_dims")(wildcard()), _transpose)
PAD = _int8_operand_lowering(PAD_OPERATORS, is_op("relax.nn.pad")(wildcard()).has_attr({"pad_mode": "constant"}), _pad)
SQUEEZE = _int8_operand_lowering(frozenset({"SQUEEZE"}), is_op("relax.squeeze")(wildcard()),
                                 _reshape_to_result("SQUEEZE"))
EXPAND_DIMS = _int8_operand_lowering(frozenset({"EXPAND_DIMS"}), is_op("relax.expand_dims")(wildcard()),
                                     _reshape_to_result("EXPAND_DIMS"))

SLICE = _int8_operand_lowering(SLICE_OPERATORS,
                               is_op("relax.strided_slice")(wildcard(), varg_default_wildcard=True), _slice)
