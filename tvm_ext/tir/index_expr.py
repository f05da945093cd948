"""Integer index expressions of TIR (constants, variables, casts, + - * // %): evaluated with every variable
given, or rewritten with some variables replaced. Any other node kind raises KeyError, so a caller falls
back to the general path rather than guessing."""

from __future__ import annotations

from tvm import tirx

INDEX_OPERATORS = {tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b, tirx.Mul: lambda a, b: a * b,
                   tirx.FloorDiv: lambda a, b: a // b, tirx.FloorMod: lambda a, b: a % b}
CLAMPED_INDEX_OPERATORS = {**INDEX_OPERATORS, tirx.Max: max, tirx.Min: min}
"""Those and max, min: an index clamped to a range (a pool window's first row inside the input)."""


def evaluate_index(expr, values: dict, operators: dict = INDEX_OPERATORS) -> int:
    """The integer value of an index expression with every variable given in ``values`` (KeyError else), of
    the binary ``operators`` (by default INDEX_OPERATORS)."""
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        return values[expr]
    if isinstance(expr, tirx.Cast):
        return evaluate_index(expr.value, values, operators)
    if type(expr) in operators:
        return operators[type(expr)](evaluate_index(expr.a, values, operators),
                                     evaluate_index(expr.b, values, operators))
    raise KeyError(type(expr).__name__)


def substitute_index(expr, mapping: dict, operators: dict = INDEX_OPERATORS):
    """``expr`` with the variables of ``mapping`` replaced (index arithmetic of the binary ``operators``;
    KeyError for other nodes)."""
    if isinstance(expr, tirx.Var):
        return mapping.get(expr, expr)
    if isinstance(expr, tirx.IntImm):
        return expr
    if isinstance(expr, tirx.Cast):
        return tirx.Cast(str(expr.ty.dtype), substitute_index(expr.value, mapping, operators))
    if type(expr) in operators:
        return type(expr)(substitute_index(expr.a, mapping, operators), substitute_index(expr.b, mapping, operators))
    raise KeyError(type(expr).__name__)
