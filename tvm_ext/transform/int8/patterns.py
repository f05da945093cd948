"""Dataflow patterns (``tvm.relax.dpl``) shared by the int8 lowerings, each with the reader that turns
its matched expressions into quantization facts.

A pattern object stands for one expression of a match: a pattern used twice in one larger pattern must
match the same expression, so each use builds its own (call the builder again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.dpl import DFPattern, is_const, is_op, wildcard

from ...kernels.quant_params import ActivationRange
from .graph import Quant, describe
from .lowering import LoweringContext, Mismatch

Matched = dict  # a pattern's extract_matched_expr result: DFPattern -> matched Relax expression


def extract(pattern: DFPattern, value: relax.Expr, ctx: LoweringContext) -> Optional[Matched]:
    """Match ``pattern`` at ``value``, looking through main's bindings; None when it does not match."""
    return pattern.extract_matched_expr(value, ctx.graph.var2val)


@dataclass(frozen=True)
class Int8Input:
    """An int8 activation operand: its tensor in the lowered graph and its quantization."""

    tensor: relax.Expr
    quant: Quant


class DequantizedActivation:
    """``dequantize(x, scale, zero_point)`` of an int8 activation already lowered (not of a constant)."""

    def __init__(self) -> None:
        self.pattern = is_op("relax.dequantize")(wildcard(), is_const(), is_const())

    def read(self, matched: Matched, ctx: LoweringContext) -> Optional[Int8Input]:
        call = matched[self.pattern]
        source = call.args[0]
        quant = ctx.graph.quant(call.args[1], call.args[2])
        if source not in ctx.lowered or quant is None:
            return None
        return Int8Input(ctx.lowered[source], quant)


class DequantizedOperand(DequantizedActivation):
    """An int8 (or int16: 16x8) operand of an elementwise operator: an activation already lowered, or a constant
    (TFLite's constant operand, e.g. a scalar; it stays an integer constant of the kernel)."""

    def read(self, matched: Matched, ctx: LoweringContext) -> Optional[Int8Input]:
        activation = super().read(matched, ctx)
        if activation is not None:
            return activation
        call = matched[self.pattern]
        values, quant = ctx.graph.constant(call.args[0]), ctx.graph.quant(call.args[1], call.args[2])
        if values is None or values.dtype not in (np.int8, np.int16) or quant is None:
            return None
        return Int8Input(relax.const(values), quant)


@dataclass(frozen=True)
class UnaryMatch:
    """A quantized unary operator of an int8 activation: the match, its operand, its output quantization."""

    matched: Matched
    data: Int8Input
    out: Quant


def match_unary(result: DFPattern, operand: DequantizedActivation, quantize: relax.Call,
                ctx: LoweringContext) -> Optional[UnaryMatch]:
    """``result`` (a quantize of a unary operator of ``operand``) matched at ``quantize``; None when it does
    not match or a quantization is not per-tensor."""
    matched = extract(result, quantize, ctx)
    data = operand.read(matched, ctx) if matched is not None else None
    out = ctx.graph.quant(quantize.args[1], quantize.args[2])
    return UnaryMatch(matched, data, out) if data is not None and out is not None else None


@dataclass(frozen=True)
class Int8Weight:
    """A symmetric int8 weight constant: its values as stored, per-channel float32 scales, and whether the
    frontend transposed (``permute_dims``) and reshaped it after reading it."""

    values: np.ndarray
    scales: np.ndarray
    permuted: bool
    reshaped: bool


class WeightPattern:
    """``[reshape](dequantize([permute_dims](W), scales, 0))`` with W an int8 constant."""

    def __init__(self) -> None:
        self.permute = is_op("relax.permute_dims")(is_const())
        self.dequantize = is_op("relax.dequantize")(self.permute | is_const(), is_const(), is_const())
        self.reshape = is_op("relax.reshape")(self.dequantize, wildcard())
        self.pattern = self.reshape | self.dequantize

    def read(self, matched: Matched, ctx: LoweringContext) -> Optional[Int8Weight]:
        dequantize = matched[self.dequantize]
        permuted = self.permute in matched
        source = matched[self.permute].args[0] if permuted else dequantize.args[0]
        values = ctx.graph.constant(source)
        if values is None or values.dtype != np.int8 or np.any(ctx.graph.constant(dequantize.args[2]) != 0):
            return None  # weights that are not symmetric int8
        scales = ctx.graph.constant(dequantize.args[1]).astype(np.float32).reshape(-1)
        return Int8Weight(values, scales, permuted, self.reshape in matched)


class BiasPattern:
    """``dequantize(b, scale, zero_point)`` with b an int32 constant (the bias of a MAC operator), or int64
    (a 16x8 MAC operator's)."""

    def __init__(self) -> None:
        self.values = is_const()
        dequantize = is_op("relax.dequantize")(self.values, wildcard(), wildcard())
        widened = is_op("relax.multiply")(is_op("relax.astype")(self.values), wildcard())  # frontend/tflite_ops/constants.py
        self.pattern = dequantize | widened

    def read(self, matched: Matched, ctx: LoweringContext) -> Optional[Constant]:
        """The bias as stored in flash, in the narrowest of int16, int32 and its own type that holds every
        value (the same integers, fewer bytes); ``stored_dtype`` tells what the model stored."""
        bias = ctx.graph.constant(matched[self.values])
        if bias is None or bias.dtype not in (np.int32, np.int64):
            return None
        return bias_constant(bias)

    def stored_dtype(self, matched: Matched, ctx: LoweringContext) -> str:
        """The bias type the model stored (int32, or int64 in 16x8 operators)."""
        return str(ctx.graph.constant(matched[self.values]).dtype)


def bias_constant(bias: np.ndarray) -> Constant:
    """Bias values as stored in flash, flattened, in the narrowest of int16 and int32 that holds every value
    (the same integers, fewer bytes), else int64 (16x8 operators)."""
    bias = bias.reshape(-1)
    for narrow in (np.int16, np.int32):
        if bias.size == 0 or (bias.min() >= np.iinfo(narrow).min and bias.max() <= np.iinfo(narrow).max):
            return relax.const(bias.astype(narrow))
    return relax.const(tvm.runtime.tensor(bias))  # relax.const(int64 array) would narrow it to int32


def with_bias(core: DFPattern, bias: BiasPattern) -> DFPattern:
    """``add(core, bias)`` or ``core`` alone (an operator without bias)."""
    return is_op("relax.add")(core, bias.pattern) | core


@dataclass(frozen=True)
class QuantizedOutput:
    """The int8 output of a float operator: its quantization and the clamp of a float activation."""

    quant: Quant
    activation: ActivationRange


class QuantizedResult:
    """``quantize([relu | clip](core), scale, zero_point)``: the end of a float operator in QDQ form,
    with the float RELU/RELU6 the frontend puts between the operator and its quantize."""

    def __init__(self, core: DFPattern) -> None:
        self.relu = is_op("relax.nn.relu")(core)
        self.clip = is_op("relax.clip")(core, wildcard(), wildcard())
        self.pattern = is_op("relax.quantize")(self.relu | self.clip | core, is_const(), is_const())

    def read(self, matched: Matched, ctx: LoweringContext) -> Optional[QuantizedOutput]:
        quantize = matched[self.pattern]
        out = ctx.graph.quant(quantize.args[1], quantize.args[2])
        if out is None:
            return None
        activation = ActivationRange.of_dtype(str(quantize.attrs.out_dtype))
        if self.relu in matched:
            activation = activation.with_float_clip(0.0, float("inf"), out.scale, out.zero_point)
        elif self.clip in matched:
            low, high = (float(arg.value) for arg in matched[self.clip].args[1:3])
            activation = activation.with_float_clip(low, high, out.scale, out.zero_point)
        return QuantizedOutput(out, activation)


_QUANTIZE = is_op("relax.quantize")(wildcard(), wildcard(), wildcard())
_FLOAT_ACTIVATION = is_op("relax.nn.relu")(wildcard()) | is_op("relax.clip")(wildcard(), wildcard(), wildcard())


def ends_float_operator(value: relax.Expr, ctx: LoweringContext) -> bool:
    """Whether ``value`` quantizes the float result of an operator (not an int8 tensor already lowered,
    nor a float model input: that is the QUANTIZE edge)."""
    return _QUANTIZE.match(value) and value.args[0] not in ctx.lowered


def float_operator_mismatch(quantize: relax.Call, ctx: LoweringContext) -> Mismatch:
    """Why the float operator ``quantize`` ends has no integer lowering: its output quantization is not
    per-tensor, else the float operator found (behind its float activation)."""
    if ctx.graph.quant(quantize.args[1], quantize.args[2]) is None:
        return Mismatch("per-channel activation quantization")
    operand = quantize.args[0]
    if _FLOAT_ACTIVATION.match(ctx.graph.value_of(operand)):
        operand = ctx.graph.value_of(operand).args[0]
    return Mismatch(describe(ctx.graph.producer.get(operand, operand)))


class QuantizedUnary:
    """``quantize(<relax_op>(dequantize(x)), scale, zero_point)``: a float operator of one int8 activation
    in QDQ form; ``core`` is the pattern of the float operator's call, whose further arguments (not
    activations, e.g. resize2d's size) match ``attributes``."""

    def __init__(self, relax_op: str, *attributes: DFPattern) -> None:
        self.operand = DequantizedActivation()
        self.core = is_op(relax_op)(self.operand.pattern, *attributes)
        self.result = is_op("relax.quantize")(self.core, is_const(), is_const())

    def match(self, quantize: relax.Call, ctx: LoweringContext) -> UnaryMatch | Mismatch:
        """The match at ``quantize``, or why the float operator it ends has no integer lowering."""
        unary = match_unary(self.result, self.operand, quantize, ctx)
        return unary if unary is not None else float_operator_mismatch(quantize, ctx)
