"""A kernel's tests that go one way at every iteration that reaches them, reduced to that branch.

A padded convolution's pixel loop tests each pixel three ways after ``pixel_pairs`` (a pair's first pixel, a
pair's second, any other pixel: inside the image or on its border), and the "inside the image" branch of the last
is reached only by interior pixels no pair covers: none where the pairs tile an even count of interior columns (a
3x3 convolution of stride 1 on an even width; yolo_tiny_80_int8's 40, 20 and 10). Its code stays in the kernel all
the same: on Helium the fused channel tiles inlined once more, 150-300 B per kernel.

``unreached_branches`` evaluates each test's condition at every iteration of the constant loops around it (their
variables' values enumerated, at most MAX_POINTS iterations) that reaches it, the tests around it taken as they
are taken there: a condition false at every such iteration leaves its else branch (or nothing), one true at every
such iteration its then branch. Only conditions of those loop variables and constants in integer arithmetic,
comparisons and logic are evaluated (exactly, in int64: the kernels' index arithmetic is far from overflowing it);
any other condition keeps both branches, and a test around it that cannot be evaluated adds no constraint (the
iterations it lets through are a superset of the true ones). Every iteration then runs the statements it ran
before: the outputs are the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import numpy as np
from tvm import s_tir, tirx

from tvm_ext.tir.tir_walk import map_child_stmts, with_root_loops_replaced

MAX_POINTS = 1 << 16
"""The most iterations of a loop nest enumerated (a 96x96 image's pixels with a 3x3 window's taps: 82,944, not;
its pixels alone, yes); a loop whose iterations would pass it leaves its variable unknown."""

_Values = np.ndarray
"""An expression's values at every enumerated iteration (int64 or bool), or a 0-d array of a constant."""

_ARITHMETIC: dict[type, Callable[[_Values, _Values], _Values]] = {
    tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply, tirx.Min: np.minimum, tirx.Max: np.maximum,
    tirx.LT: np.less, tirx.LE: np.less_equal, tirx.GT: np.greater, tirx.GE: np.greater_equal, tirx.EQ: np.equal,
    tirx.NE: np.not_equal, tirx.And: np.logical_and, tirx.Or: np.logical_or, tirx.BitwiseAnd: np.bitwise_and,
    tirx.BitwiseOr: np.bitwise_or, tirx.BitwiseXor: np.bitwise_xor,
}
_DIVISIONS: dict[type, Callable[[_Values, _Values], _Values]] = {
    tirx.FloorDiv: np.floor_divide, tirx.FloorMod: np.mod,
    tirx.Div: lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)),
    tirx.Mod: lambda a, b: a - np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)) * b,
}


def values(expr, env: dict) -> Optional[_Values]:
    """``expr``'s values at the enumerated iterations (``env``: loop variable -> its values there), None where it
    reads anything else or has an operation not evaluated here (or divides by zero somewhere)."""
    kind = type(expr)
    if kind is tirx.IntImm:
        return np.array(int(expr.value), dtype=np.int64)
    if kind is tirx.Var:
        return env.get(expr)
    if kind is tirx.Not:
        inner = values(expr.a, env)
        return None if inner is None else np.logical_not(inner)
    if kind is tirx.Select:
        parts = [values(part, env) for part in (expr.condition, expr.true_value, expr.false_value)]
        return None if any(part is None for part in parts) else np.where(*parts)
    if kind in _ARITHMETIC or kind in _DIVISIONS:
        a, b = values(expr.a, env), values(expr.b, env)
        if a is None or b is None:
            return None
        if kind in _DIVISIONS:
            return None if np.any(b == 0) else _DIVISIONS[kind](a, b)
        return _ARITHMETIC[kind](a, b)
    return None


def _inside(loop: tirx.For, env: dict, reached: _Values) -> tuple[dict, _Values]:
    """The enumeration inside ``loop`` (its variable's values beside the others'), where its bounds are constants
    and the iterations stay within MAX_POINTS; else the same, the variable unknown."""
    if not isinstance(loop.min, tirx.IntImm) or not isinstance(loop.extent, tirx.IntImm) \
            or reached.size * int(loop.extent) > MAX_POINTS or int(loop.extent) < 1:
        return env, reached
    extent, start = int(loop.extent), int(loop.min)
    inner = {var: np.repeat(vals, extent) for var, vals in env.items()}
    inner[loop.loop_var] = np.tile(np.arange(start, start + extent, dtype=np.int64), reached.size)
    return inner, np.repeat(reached, extent)


def _pruned(stmt: tirx.Stmt, env: dict, reached: _Values) -> Optional[tirx.Stmt]:
    """``stmt`` (reached at the enumerated iterations where ``reached`` holds) with its tests that go one way at
    every iteration reaching them reduced to that branch; None where nothing is left."""
    if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
        return stmt
    if isinstance(stmt, tirx.For):
        inner_env, inner_reached = _inside(stmt, env, reached)
        return map_child_stmts(stmt, lambda child: _pruned(child, inner_env, inner_reached))
    if isinstance(stmt, tirx.IfThenElse):
        taken = values(stmt.condition, env)
        if taken is not None:
            taken = np.broadcast_to(taken, reached.shape).astype(bool)
            if not np.any(taken & reached):
                return None if stmt.else_case is None else _pruned(stmt.else_case, env, reached)
            if not np.any(~taken & reached):
                return _pruned(stmt.then_case, env, reached)
            then_reached, else_reached = taken & reached, ~taken & reached
        else:
            then_reached = else_reached = reached
        then_case = _pruned(stmt.then_case, env, then_reached) or tirx.Evaluate(0)
        else_case = None if stmt.else_case is None else _pruned(stmt.else_case, env, else_reached)
        return tirx.IfThenElse(stmt.condition, then_case, else_case)
    return map_child_stmts(stmt, lambda child: _pruned(child, env, reached))


def unreached_branches(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each test in its root loops reduced to its branch where it goes one way at every iteration that
    reaches it (see the module)."""
    return with_root_loops_replaced(
        func, lambda loop: _pruned(loop, {}, np.ones(1, dtype=bool)) or tirx.Evaluate(0))
