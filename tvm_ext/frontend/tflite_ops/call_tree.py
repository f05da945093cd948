"""Editing what TVM 0.27's TFLite converters return: a tree of unnormalized Relax calls (nothing bound yet)."""

from __future__ import annotations

from typing import Callable

import tvm
from tvm import relax


def find_call(expr: relax.Expr, op_name: str) -> relax.Call:
    """The first call of `op_name` (e.g. "relax.nn.conv2d") reached through `expr`'s first arguments."""
    while not (isinstance(expr.op, tvm.ir.Op) and expr.op.name == op_name):
        expr = expr.args[0]
    return expr


def with_call_replaced(expr: relax.Expr, op_name: str, rebuild: Callable[[relax.Call], relax.Expr]) -> relax.Expr:
    """`expr` with each call of `op_name` in its tree of calls replaced by `rebuild(call)`."""
    if not isinstance(expr, relax.Call):
        return expr
    if isinstance(expr.op, tvm.ir.Op) and expr.op.name == op_name:
        return rebuild(expr)
    return relax.Call(expr.op, [with_call_replaced(arg, op_name, rebuild) for arg in expr.args], expr.attrs,
                      expr.ty_args)
