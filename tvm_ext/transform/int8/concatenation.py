"""CONCATENATION of int8 activations: ``q(concat([dq(x0), dq(x1), ...], axis))`` -> TFLite Micro's kernel, which
copies the stored int8 values (its Prepare requires every input's scale and zero point to equal the output's
and no fused activation; TFLite's requantizing variant is not TFLite Micro's, so other quantizations are
refused rather than computed differently from the reference).

Its second form, the concatenation of int8 tensors themselves (``concat([x0, x1, ...], axis)``), is the same copy:
the frontend never writes it; ``tvm_ext.transform.patch_prefix`` joins a layer's patches so, each piece with the
layer's quantization. That kernel stays unfused (`UNFUSED_ATTR`): fused into the pool after it, gcc's
maybe-uninitialized analysis refused the C and the arena grew."""

from __future__ import annotations

from typing import Optional, Union

from tvm import relax, topi

from ...kernels.copy_runs import concatenate_runs
from ...layers import UNFUSED_ATTR
from .graph import Quant, is_call_to
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import ends_float_operator, float_operator_mismatch


def _concat(quantize: relax.Call, ctx: LoweringContext) -> Optional[relax.Call]:
    """The float concat ``quantize`` ends directly (no float activation between them), else None."""
    concat = ctx.graph.value_of(quantize.args[0])
    return concat if is_call_to(concat, "relax.concat") else None


def _operand_quants(concat: relax.Call, ctx: LoweringContext) -> Optional[list[tuple[relax.Expr, Optional[Quant]]]]:
    """Each concatenated int8 activation with its quantization; None when an operand is not the dequantize
    of an int8 activation already lowered."""
    pieces = ctx.graph.value_of(concat.args[0])
    if not isinstance(pieces, relax.Tuple):
        return None
    operands = []
    for piece in pieces.fields:
        dequantize = ctx.graph.value_of(piece)
        if not is_call_to(dequantize, "relax.dequantize") or dequantize.args[0] not in ctx.lowered:
            return None
        operands.append((ctx.lowered[dequantize.args[0]], ctx.graph.quant(dequantize.args[1], dequantize.args[2])))
    return operands


def _has_fused_activation(quantize: relax.Call, ctx: LoweringContext) -> bool:
    """Whether the frontend clips the int8 result (its import of a fused activation)."""
    var = next((b.var for b in ctx.graph.bindings if b.value.same_as(quantize)), None)
    return var is not None and ctx.graph.single_user(var, "relax.clip") is not None


def _int8_pieces(value: relax.Expr, ctx: LoweringContext) -> Optional[list[relax.Expr]]:
    """The lowered pieces of ``value`` when it concatenates int8 tensors themselves (the second form), else None."""
    if not is_call_to(value, "relax.concat"):
        return None
    pieces = ctx.graph.value_of(value.args[0])
    if not isinstance(pieces, relax.Tuple) or not all(piece in ctx.lowered for piece in pieces.fields):
        return None
    return [ctx.lowered[piece] for piece in pieces.fields]


def _completes(value: relax.Expr, ctx: LoweringContext) -> bool:
    return (ends_float_operator(value, ctx) and _concat(value, ctx) is not None) or _int8_pieces(value, ctx) is not None


def _match(value: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    pieces = _int8_pieces(value, ctx)
    if pieces is not None:
        axis = int(value.attrs.axis) % len(value.ty.shape)
        return FixedCall(KernelCall("CONCATENATION", value, topi.concatenate, (pieces,), {"axis": axis},
                                    {UNFUSED_ATTR: True}))
    return _match_quantized(value, ctx)


def _match_quantized(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
    concat = _concat(quantize, ctx)
    operands = _operand_quants(concat, ctx)
    out = ctx.graph.quant(quantize.args[1], quantize.args[2])
    if operands is None or out is None:
        return float_operator_mismatch(quantize, ctx)
    if any(quant != out for _, quant in operands):
        return Mismatch("CONCATENATION of inputs quantized unlike its output (TFLite Micro requires them equal)")
    if _has_fused_activation(quantize, ctx):
        return Mismatch("CONCATENATION with a fused activation (TFLite Micro requires none)")
    rank = len(quantize.ty.shape)
    axis = int(concat.attrs.axis) % rank
    return FixedCall(KernelCall("CONCATENATION", concat, concatenate_runs, ([tensor for tensor, _ in operands],),
                                {"axis": axis, "word_runs": ctx.word_runs}))


LOWERING = Lowering(frozenset({"CONCATENATION"}), _completes, _match)
