"""Read-only view of the frontend's QDQ ``main``: producers, uses, constants and each binding's layer records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional

import numpy as np
from tvm import relax
from tvm.ir import Op
from tvm.ir.expr import Constant

from tvm_ext.layers import LayerRecord, Layers


@dataclass(frozen=True)
class Quant:
    """Per-tensor quantization of an int8 activation: float32 scale and int32 zero point."""

    scale: np.float32
    zero_point: int


def describe(value: relax.Expr) -> str:
    """What an expression is, for messages: the Relax op name of a call, else the node's type name."""
    if isinstance(value, relax.Call) and isinstance(value.op, Op):
        return value.op.name
    return type(value).__name__


def is_call_to(value: relax.Expr, op_name: str) -> bool:
    """Whether ``value`` is a call to the Relax operator ``op_name``."""
    return isinstance(value, relax.Call) and isinstance(value.op, Op) and value.op.name == op_name


class Graph:
    """Main's bindings in order, each Var's producer, use counts, the layer records the frontend gave each
    binding, and the var-to-value map of the dataflow pattern matcher (``tvm.relax.dpl``), built once per
    function."""

    def __init__(self, func: relax.Function) -> None:
        self.bindings = [b for block in func.body.blocks for b in block.bindings]
        self.producer = {b.var: b.value for b in self.bindings}
        self.var2val = relax.analysis.get_var2val(func)
        self.params = set(func.params)
        self.layers = Layers.of(func)
        self._position = {b.value: i for i, b in enumerate(self.bindings)}
        self.uses: Counter = Counter()
        self._callers: dict[relax.Var, list[relax.Binding]] = {}  # a Var -> the calls with it as an argument, in order
        for binding in self.bindings:
            relax.analysis.post_order_visit(binding.value, self._count)
            for arg in binding.value.args if isinstance(binding.value, relax.Call) else ():
                if isinstance(arg, relax.Var):
                    self._callers.setdefault(arg, []).append(binding)
        relax.analysis.post_order_visit(func.body.body, self._count)

    def _count(self, expr: relax.Expr) -> None:
        if isinstance(expr, relax.Var):
            self.uses[expr] += 1

    def records_of(self, core: relax.Expr) -> tuple[LayerRecord, ...]:
        """The layer records of the binding whose value is ``core`` (none without one, or without records)."""
        position = self._position.get(core)
        return () if position is None else self.layers.of_binding(position)

    def value_of(self, expr: relax.Expr) -> relax.Expr:
        """The expression bound to ``expr``, following ``a = b`` aliases (expr itself if unbound)."""
        while isinstance(expr, relax.Var) and expr in self.producer:
            expr = self.producer[expr]
        return expr

    def constant(self, expr: relax.Expr) -> Optional[np.ndarray]:
        """The value of the constant ``expr`` is (or is bound to), None when it is not a constant."""
        value = self.value_of(expr)
        return value.value.numpy() if isinstance(value, Constant) else None

    def quant(self, scale: relax.Expr, zero_point: relax.Expr) -> Optional[Quant]:
        """Per-tensor quantization from a QDQ call's scale and zero point; None when they are not
        constants or differ per channel."""
        scales, zero_points = self.constant(scale), self.constant(zero_point)
        if scales is None or zero_points is None:
            return None
        scales, zero_points = scales.astype(np.float32).reshape(-1), zero_points.reshape(-1)
        if scales.size != 1 or np.any(zero_points != zero_points[0]):
            return None
        return Quant(np.float32(scales[0]), int(zero_points[0]))

    def dequantized(self, expr: relax.Expr) -> tuple[Optional[relax.Expr], Optional[Quant]]:
        """The source and per-tensor quantization of the dequantize ``expr`` is (or is bound to); (None, None)
        when it is no dequantize."""
        value = self.value_of(expr)
        if not is_call_to(value, "relax.dequantize"):
            return None, None
        return value.args[0], self.quant(value.args[1], value.args[2])

    def quantized_packed_call(self, value: relax.Expr, symbol: str) -> Optional[relax.Call]:
        """The ``call_dps_packed`` of ``symbol`` (one of our frontend's opaque float steps) that the quantize
        ``value`` quantizes, else None."""
        if not is_call_to(value, "relax.quantize"):
            return None
        step = self.value_of(value.args[0])
        if is_call_to(step, "relax.call_dps_packed") and getattr(step.args[0], "global_symbol", None) == symbol:
            return step
        return None

    def single_user(self, var: relax.Var, op_name: str) -> Optional[relax.Binding]:
        """The binding that is var's only use, if it is a call to ``op_name`` (looked up among the calls with var as
        an argument, not by a scan of every binding: a GRU unrolled over 600 operators asks some 400 times)."""
        if self.uses[var] != 1:
            return None
        return next((binding for binding in self._callers.get(var, ()) if is_call_to(binding.value, op_name)), None)
