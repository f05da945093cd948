"""Read-only view of the frontend's QDQ ``main``: producers, uses, constants and TFLite operator indices."""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Optional

import numpy as np
from tvm import relax
from tvm.ir import Op
from tvm.ir.expr import Constant

# Relax ops that are the computation of exactly one TFLite operator in the frontend's QDQ output.
CORE_OPS = frozenset({"relax.nn.conv2d", "relax.matmul", "relax.nn.softmax", "relax.nn.avg_pool2d",
                      "relax.nn.max_pool2d", "relax.subtract", "relax.nn.leakyrelu", "relax.maximum",
                      "relax.minimum", "relax.sigmoid", "relax.tanh",
                      "relax.divide"})


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
    """Main's bindings in order, each Var's producer, use counts, and the var-to-value map of the
    dataflow pattern matcher (``tvm.relax.dpl``), built once per function."""

    def __init__(self, func: relax.Function) -> None:
        self.bindings = [b for block in func.body.blocks for b in block.bindings]
        self.producer = {b.var: b.value for b in self.bindings}
        self.var2val = relax.analysis.get_var2val(func)
        self.params = set(func.params)
        self._position = {b.value: i for i, b in enumerate(self.bindings)}
        self._core_positions = [i for i, b in enumerate(self.bindings) if self._is_operator_core(b.value)]
        self.uses: Counter = Counter()
        for binding in self.bindings:
            relax.analysis.post_order_visit(binding.value, self._count)
        relax.analysis.post_order_visit(func.body.body, self._count)

    def _count(self, expr: relax.Expr) -> None:
        if isinstance(expr, relax.Var):
            self.uses[expr] += 1

    def _is_operator_core(self, value: relax.Expr) -> bool:
        """Whether ``value`` is the computation of one TFLite operator (the frontend emits these in order)."""
        if not (isinstance(value, relax.Call) and isinstance(value.op, Op)):
            return False
        name = value.op.name
        if name in CORE_OPS:
            return True
        if name in ("relax.add", "relax.multiply"):
            # ADD and MUL of int8 operands; not a bias add (of a dequantized int32 constant), nor the square
            # of SQUARED_DIFFERENCE, nor HARD_SWISH's x + 3 and x * relu6(x + 3) (its divide is the core)
            return all(self._dequantizes_int8(arg) for arg in value.args)
        if name in ("relax.nn.relu", "relax.clip"):  # RELU/RELU6 of an int8 activation, not a fused activation
            return is_call_to(self.value_of(value.args[0]), "relax.dequantize")
        if name == "relax.reshape":  # RESHAPE of an int8 activation, not of dequantized weights
            return str(value.ty.dtype) == "int8" and not isinstance(self.value_of(value.args[0]), Constant)
        return name == "relax.quantize" and value.args[0] in self.params  # QUANTIZE of a float model input

    def _dequantizes_int8(self, expr: relax.Expr) -> bool:
        """Whether expr is a dequantize of an int8 tensor (an activation or an int8 constant)."""
        value = self.value_of(expr)
        return is_call_to(value, "relax.dequantize") and str(value.args[0].ty.dtype) == "int8"

    def operator_index(self, core: relax.Call) -> int:
        """TFLite operator index of the operator whose computation is ``core``.

        An output DEQUANTIZE, not a binding of its own kind, gets the index after every operator before it.
        """
        position = self._position.get(core, len(self.bindings))
        return bisect.bisect_left(self._core_positions, position)

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

    def single_user(self, var: relax.Var, op_name: str) -> Optional[relax.Binding]:
        """The binding that is var's only use, if it is a call to ``op_name``."""
        if self.uses[var] != 1:
            return None
        for binding in self.bindings:
            if is_call_to(binding.value, op_name) and any(arg.same_as(var) for arg in binding.value.args):
                return binding
        return None
