"""On Helium cores, a statement both branches of a test end with runs once after the test.

After the fused channel tiles (``conv_tiles``), a convolution whose windows are copied (a stem of few input
channels, whose window is copied to a whole vector for every pixel) tests whether the pixel's window lies inside
the image, copies it one way or the other (the border's with the padding) and then, in both branches, calls the
fused helper on the copy with the same arguments. Each call is an inlined copy of the helper (``always_inline``:
its sizes constants), so the kernel holds two identical copies of its tiles. ``common_tails`` rewrites
``if (c) {A; S} else {B; S}`` as ``if (c) {A} else {B}; S`` wherever the two branches' last statements are
structurally equal (the same variables, buffers and arguments): the same statements run in the same order, so
the outputs are the same, bit for bit. Applied last, to every Helium kernel (``HeliumMacSchedules.epilogue_calls``).
Measured on cortex-m55 (the stems' kernels' code B; the bundles' code B and instructions), before / after:
vww_96_int8's stem 710 -> 470, 14,176 -> 13,936 B, 4,226,164 -> 4,242,719; kws_ref_model's 820 -> 536,
5,016 -> 4,732 B, 1,415,351 -> 1,398,556; pretrainedResnet_quant's 818 -> 552, 9,992 -> 9,724 B, 3,834,238 ->
3,807,512; person_detect 14,556 -> 14,348 B, 4,162,487 -> 4,167,093.
"""

from __future__ import annotations

from typing import Optional

import tvm_ffi
from tvm import s_tir, tirx

from tvm_ext.tir.tir_walk import map_child_stmts, with_root_loops_replaced


def _split_tail(stmt: tirx.Stmt) -> tuple[list[tirx.Stmt], tirx.Stmt]:
    """The statements of ``stmt`` before its last one, and its last one (``stmt`` itself where it is no
    sequence)."""
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq[:-1]), stmt.seq[-1]
    return [], stmt


def _sequence(stmts: list[tirx.Stmt]) -> Optional[tirx.Stmt]:
    """``stmts`` as one statement, None where there are none."""
    return None if not stmts else stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _hoisted(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every test under it (not inside blocks) whose branches end with the same statement
    rewritten to run that statement once after it, innermost tests first."""
    if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
        return stmt
    stmt = map_child_stmts(stmt, _hoisted)
    if not isinstance(stmt, tirx.IfThenElse) or stmt.else_case is None:
        return stmt
    (then_head, then_tail), (else_head, else_tail) = _split_tail(stmt.then_case), _split_tail(stmt.else_case)
    if not tvm_ffi.structural_equal(then_tail, else_tail):
        return stmt
    then_rest, else_rest = _sequence(then_head), _sequence(else_head)
    if then_rest is None and else_rest is None:
        return then_tail
    if then_rest is None:
        test = tirx.IfThenElse(tirx.Not(stmt.condition), else_rest, None)
    else:
        test = tirx.IfThenElse(stmt.condition, then_rest, else_rest)
    return tirx.SeqStmt([test, then_tail])


def common_tails(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each test in its loops whose two branches end with the same statement running that
    statement once after the test (see the module)."""
    return with_root_loops_replaced(func, _hoisted)
