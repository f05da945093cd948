"""The padded border's bounds test taken out of a float convolution's reduction loops.

TOPI's float convolutions read a padded input as ``if_then_else(inside, x[...], 0.0f)`` in their innermost
statement, so every multiply-accumulate pays the test (four compares and branches on a Cortex-M). The test
reads only the output position and the kernel tap, never the input channel: this pass (on lowered TIR,
after the blocks are gone) wraps the outermost statement whose every store is such an accumulation with
one shared test in a single ``if (inside)``, and the stores inside read ``x[...]`` directly. A 3x3
convolution over C input channels then tests once per tap and C channels, not once per MAC; interior
pixels never take the padded path, border pixels skip the padded taps. A register tile of several pixels
(unrolled before this pass runs) has one test per pixel: the tile runs without tests where all of them hold,
and a copy with a test per accumulation where the tile touches the border.

Contract: an accumulation ``acc = acc + if_then_else(inside, a, 0.0f) * w`` skipped where ``inside`` is false
added ``0.0f * w`` (+0 or -0) to an accumulator that starts at +0 and so is never -0 (round to nearest):
the results are bit-identical for finite weights, and every other term is added in the same order.
Integer kernels (their padding is the input zero point, tvm_ext/kernels/conv.py) do not match.
"""

from __future__ import annotations

import functools
from typing import Optional

import tvm
import tvm_ffi
from tvm import ir, tirx
from tvm.ir.prim import expr as prim

from tvm_ext.tir.tir_walk import buffer_loads, map_child_stmts, map_leaves, vars_read, walk

_IF_THEN_ELSE = tvm.ir.Op.get("prim.if_then_else")


def _padded_accumulation(store: tirx.BufferStore) -> Optional[tuple[ir.Expr, ir.Expr, ir.Expr]]:
    """``(inside, value, weight)`` if `store` is ``acc = acc + if_then_else(inside, value, 0.0f) * weight`` on
    a float accumulator (the same buffer element loaded and stored), else None."""
    total = store.value
    if not isinstance(total, prim.Add) or not str(total.ty.dtype).startswith("float"):
        return None
    accumulator, term = total.a, total.b
    if not (isinstance(accumulator, ir.TensorLoad) and accumulator.source.same_as(store.buffer)
            and tvm_ffi.structural_equal(list(accumulator.indices), list(store.indices))):
        return None
    if not isinstance(term, prim.Mul) or not isinstance(term.a, ir.Call) or not term.a.op.same_as(_IF_THEN_ELSE):
        return None
    inside, value, padding = term.a.args
    if not isinstance(padding, prim.FloatImm) or padding.value != 0.0:
        return None
    return inside, value, term.b


def _invariant_tests(stmt: tirx.Stmt) -> Optional[list[ir.Expr]]:
    """The distinct bounds tests the stores under `stmt` accumulate through, if `stmt` holds nothing but
    loops, sequences and such stores, and no test reads a loop variable of `stmt` or a buffer; else None."""
    tests, loop_vars = [], set()
    for node in walk(stmt):
        if isinstance(node, tirx.For):
            loop_vars.add(node.loop_var)
        elif isinstance(node, tirx.BufferStore):
            matched = _padded_accumulation(node)
            if matched is None:
                return None
            if not any(tvm_ffi.structural_equal(matched[0], test) for test in tests):
                tests.append(matched[0])
        elif isinstance(node, tirx.Stmt) and not isinstance(node, tirx.SeqStmt):
            return None
    if not tests or any(vars_read(test) & loop_vars or buffer_loads(test) for test in tests):
        return None
    return tests


def _without_test(stmt: tirx.Stmt) -> tirx.Stmt:
    """`stmt` (of which _invariant_tests found the tests) with each accumulation reading its value directly."""
    if isinstance(stmt, tirx.BufferStore):
        _, value, weight = _padded_accumulation(stmt)
        accumulator = stmt.value.a
        return tirx.BufferStore(stmt.buffer, type(stmt.value)(accumulator, type(stmt.value.b)(value, weight)),
                                list(stmt.indices))
    return map_child_stmts(stmt, _without_test)


def _each_under_its_test(stmt: tirx.Stmt) -> tirx.Stmt:
    """`stmt` (of which _invariant_tests found the tests) with each accumulation under its own test; its loops
    get fresh variables (this copy sits beside the one without tests, and a variable is defined once)."""
    if isinstance(stmt, tirx.BufferStore):
        return tirx.IfThenElse(_padded_accumulation(stmt)[0], _without_test(stmt), None)
    if isinstance(stmt, tirx.For):
        old, fresh = stmt.loop_var, tirx.Var(stmt.loop_var.name, stmt.loop_var.ty)
        stmt = map_leaves(stmt, lambda leaf: fresh if leaf.same_as(old) else leaf)
    return map_child_stmts(stmt, _each_under_its_test)


def hoist_padding_tests_in(stmt: tirx.Stmt) -> tirx.Stmt:
    """`stmt` with each outermost statement _invariant_tests accepts put under its test; where its stores
    have several tests (a tile of output pixels, tvm_ext.schedule.float_schedule.tile_pixels), under all of them at
    once, and a tile that touches the border takes a copy with each accumulation under its own test."""
    tests = _invariant_tests(stmt)
    if tests is None:
        return map_child_stmts(stmt, hoist_padding_tests_in)
    if len(tests) == 1:
        return tirx.IfThenElse(tests[0], _without_test(stmt), None)
    return tirx.IfThenElse(functools.reduce(tirx.And, tests), _without_test(stmt), _each_under_its_test(stmt))


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.HoistPaddingTests")
def hoist_padding_tests(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """The pass form of `hoist_padding_tests_in`, for lowered TIR (no blocks left) whose register
    tiles are unrolled (a tile's loop variable would otherwise hide which test belongs to which pixel)."""
    return tirx.PrimFunc(func.params, hoist_padding_tests_in(func.body), func.ret_type, func.attrs)
