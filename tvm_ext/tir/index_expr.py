"""Integer index expressions of TIR (constants, variables, casts, + - * // %): evaluated with every variable
given, or rewritten with some variables replaced. Any other node kind raises KeyError, so a caller falls
back to the general path rather than guessing."""

from __future__ import annotations

from tvm import tirx

INDEX_OPERATORS = {tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b, tirx.Mul: lambda a, b: a * b,
                   tirx.FloorDiv: lambda a, b: a // b, tirx.FloorMod: lambda a, b: a % b}


def evaluate_index(expr, values: dict) -> int:
    """The integer value of an index expression with every variable given in ``values`` (KeyError else)."""
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        return values[expr]
    if isinstance(expr, tirx.Cast):
        return evaluate_index(expr.value, values)
    if type(expr) in INDEX_OPERATORS:
        return INDEX_OPERATORS[type(expr)](evaluate_index(expr.a, values), evaluate_index(expr.b, values))
    raise KeyError(type(expr).__name__)


def substitute_index(expr, mapping: dict):
    """``expr`` with the variables of ``mapping`` replaced (index arithmetic only; KeyError for other nodes)."""
    if isinstance(expr, tirx.Var):
        return mapping.get(expr, expr)
    if isinstance(expr, tirx.IntImm):
        return expr
    if isinstance(expr, tirx.Cast):
        return tirx.Cast(str(expr.ty.dtype), substitute_index(expr.value, mapping))
    if type(expr) in INDEX_OPERATORS:
        return type(expr)(substitute_index(expr.a, mapping), substitute_index(expr.b, mapping))
    raise KeyError(type(expr).__name__)
