"""On Helium cores, a statement both branches of a test end with runs once after the test.

After the fused channel tiles (``conv_tiles``), a convolution whose windows are copied (a stem of few input
channels, whose window is copied to a whole vector for every pixel) tests whether the pixel's window lies inside
the image, copies it one way or the other (the border's with the padding) and then, in both branches, calls the
fused helper on the copy with the same arguments. Each call is an inlined copy of the helper (``always_inline``:
its sizes constants), so the kernel holds two identical copies of its tiles. ``common_tails`` rewrites
``if (c) {A; S} else {B; S}`` as ``if (c) {A} else {B}; S`` wherever the two branches' last statements are
structurally equal (the same variables, buffers and arguments): the same statements run in the same order, so
the outputs are the same, bit for bit. A tail that uses a variable or buffer a branch declares before it (a
``Bind``, ``AllocBuffer`` or ``DeclBuffer`` in that branch's sequence) stays where it is: after the test it would
be out of that declaration's scope. Applied last, to every Helium kernel (``HeliumMacSchedules.epilogue_calls``).
Measured on cortex-m55 (the stems' kernels' code B; the bundles' code B and instructions), before / after:
vww_96_int8's stem 710 -> 470, 14,176 -> 13,936 B, 4,226,164 -> 4,242,719; kws_ref_model's 820 -> 536,
5,016 -> 4,732 B, 1,415,351 -> 1,398,556; pretrainedResnet_quant's 818 -> 552, 9,992 -> 9,724 B, 3,834,238 ->
3,807,512; person_detect 14,556 -> 14,348 B, 4,162,487 -> 4,167,093.

Two last statements that differ only in some arguments of one helper call become one call after the test too,
where the caller's `TailChoice` for that op allows it (``choices``): a padded 3x3 convolution's pixel that is
not paired calls the fused tiles on its window inside the image (the input's address, its row stride) or on its
copied border window (the copy's address, the copy's row stride), the two calls otherwise alike once the copy's
window is split into the same rows (`TailChoice.align`). The call after the test takes the differing addresses
through the choice op (``op(c, a, b)``: a where c holds, else b; TIR has no `Select` of pointers, and
`tvm_ext.codegen.stream_order` reads the op as one, `tvm_ext.tir.helper_access.register_address_choice`) and the
differing integers as ``Select(c, a, b)``: the same call with the same values runs for every pixel, bit for bit.
The test's condition must read no buffer (the branch before the call may write one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Optional

import tvm
import tvm_ffi
from tvm import s_tir, tirx

from tvm_ext.tir.tir_walk import (buffer_loads, map_child_stmts, map_leaves, map_nodes, vars_read, walk,
                                  with_root_loops_replaced)


@dataclass(frozen=True)
class TailChoice:
    """How two calls of one helper op that end a test's two branches become one call after the test (module
    docstring): ``addresses``, the argument positions that may differ as addresses (each pair chosen by a call of
    ``choose_op``: ``choose_op(condition, a, b)``, an address), ``integers``, those that may differ as integers
    (a ``Select``), and ``align``: the two calls made alike where they differ elsewhere (None where they cannot
    be), the calls themselves by default."""

    choose_op: str
    addresses: frozenset[int]
    integers: frozenset[int]
    align: Callable[[tvm.ir.Call, tvm.ir.Call], Optional[tuple[tvm.ir.Call, tvm.ir.Call]]] = lambda a, b: (a, b)
    merged_op: Optional[str] = None


def _split_tail(stmt: tirx.Stmt) -> tuple[list[tirx.Stmt], tirx.Stmt]:
    """The statements of ``stmt`` before its last one, and its last one (``stmt`` itself where it is no
    sequence)."""
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq[:-1]), stmt.seq[-1]
    return [], stmt


def _sequence(stmts: list[tirx.Stmt]) -> Optional[tirx.Stmt]:
    """``stmts`` as one statement, None where there are none."""
    return None if not stmts else stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _declared(stmts: list[tirx.Stmt]) -> set[tirx.Var]:
    """The variables ``stmts`` declare for the statements after them: a ``Bind``'s variable, an ``AllocBuffer``'s
    or ``DeclBuffer``'s data pointer."""
    declared: set[tirx.Var] = set()
    for stmt in stmts:
        if isinstance(stmt, tirx.Bind):
            declared.add(stmt.var)
        elif isinstance(stmt, (tirx.AllocBuffer, tirx.DeclBuffer)):
            declared.add(stmt.buffer.data)
    return declared


def _call_of(stmt: tirx.Stmt) -> Optional[tvm.ir.Call]:
    """The op call ``stmt`` evaluates: ``stmt`` an ``Evaluate`` of it, or a block of nothing else (no iteration
    variables, always run, no buffers of its own)."""
    if isinstance(stmt, s_tir.SBlockRealize):
        block = stmt.block
        if stmt.iter_values or not (isinstance(stmt.predicate, tirx.IntImm) and int(stmt.predicate)) \
                or block.iter_vars or block.alloc_buffers or block.match_buffers or block.init is not None:
            return None
        stmt = block.body
    if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tvm.ir.Call) and isinstance(stmt.value.op, tvm.ir.Op):
        return stmt.value
    return None


def _with_call(stmt: tirx.Stmt, other: tirx.Stmt, call: tvm.ir.Call) -> tirx.Stmt:
    """``stmt`` (a statement `_call_of` reads) evaluating ``call`` instead; a block then reads and writes what its
    own block and ``other``'s (the other branch's) do."""
    if not isinstance(stmt, s_tir.SBlockRealize):
        return tirx.Evaluate(call)
    block, theirs = stmt.block, other.block

    def union(mine, others) -> list:
        return [*mine, *(r for r in others if not any(tvm_ffi.structural_equal(r, m) for m in mine))]

    merged = s_tir.SBlock([], union(block.reads, theirs.reads), union(block.writes, theirs.writes), block.name_hint,
                          tirx.Evaluate(call), None, [], [], block.annotations)
    return s_tir.SBlockRealize([], stmt.predicate, merged)


def _chosen_tail(condition, then_tail: tirx.Stmt, else_tail: tirx.Stmt,
                 choices: Mapping[str, TailChoice]) -> Optional[tirx.Stmt]:
    """One statement running ``then_tail``'s call where ``condition`` holds and ``else_tail``'s where not, both
    calls of one op of ``choices`` that differ only where its `TailChoice` allows (module docstring); None where
    they are not such calls or the condition reads a buffer."""
    then_call, else_call = _call_of(then_tail), _call_of(else_tail)
    if then_call is None or else_call is None or type(then_tail) is not type(else_tail) \
            or not then_call.op.same_as(else_call.op) or then_call.op.name not in choices or buffer_loads(condition):
        return None
    choice = choices[then_call.op.name]
    aligned = choice.align(then_call, else_call)
    if aligned is None or len(aligned[0].args) != len(aligned[1].args):
        return None
    args = []
    for index, (mine, theirs) in enumerate(zip(aligned[0].args, aligned[1].args)):
        if tvm_ffi.structural_equal(mine, theirs):
            args.append(mine)
        elif index in choice.addresses:
            args.append(tirx.call_intrin("handle", choice.choose_op, condition, mine, theirs))
        elif index in choice.integers and isinstance(mine.ty, tvm.ir.PrimType) \
                and tvm_ffi.structural_equal(mine.ty, theirs.ty):
            args.append(tirx.Select(condition, mine, theirs))
        else:
            return None
    op = then_call.op if choice.merged_op is None else tvm.ir.Op.get(choice.merged_op)
    call = tvm.ir.Call(op, args, then_call.attrs, ret_ty=then_call.ty)
    return _with_call(then_tail, else_tail, call)


def _chosen_loops(condition, then_tail: tirx.Stmt, else_tail: tirx.Stmt,
                  choices: Mapping[str, TailChoice]) -> Optional[tirx.Stmt]:
    """``_chosen_tail`` through loops: ``then_tail`` with its one call of an op of ``choices`` made the call
    ``_chosen_tail`` makes of it and ``else_tail``'s one such call, where the two tails are otherwise the same
    statements (their loops' variables apart: a kernel's own channel-tile loop around its window MAC's call, its
    zeroed sums and its epilogue alike in both branches); None where they are not, or where a chosen argument
    reads a variable of ``else_tail``'s loops."""
    found = [[node for node in walk(tail) if isinstance(node, s_tir.SBlockRealize)
              and (call := _call_of(node)) is not None and call.op.name in choices] for tail in (then_tail, else_tail)]
    if any(len(calls) != 1 for calls in found):
        return None
    (mine,), (theirs,) = found
    marker = tirx.Evaluate(tirx.const(0, "int32"))
    if not tvm_ffi.structural_equal(*(map_nodes(tail, lambda node, call=call: marker if node.same_as(call) else None)
                                      for tail, call in ((then_tail, mine), (else_tail, theirs)))):
        return None
    loop_vars = [[node.loop_var for node in walk(tail) if isinstance(node, tirx.For)] for tail in (then_tail, else_tail)]
    renamed = dict(zip(loop_vars[1], loop_vars[0]))
    call = _call_of(theirs)
    own = [region.source for region in [*mine.block.reads, *mine.block.writes]]
    block = theirs.block
    if any(_reads_any(region, renamed) and not any(region.source.same_as(source) for source in own)
           for region in [*block.reads, *block.writes]):
        return None  # a region of the other branch's own buffer that moves with its loops
    # the other call, its loops' variables the first's, its regions that move with them left to the first's
    other = s_tir.SBlockRealize([], theirs.predicate, s_tir.SBlock(
        [], [r for r in block.reads if not _reads_any(r, renamed)],
        [r for r in block.writes if not _reads_any(r, renamed)], block.name_hint,
        tirx.Evaluate(tvm.ir.Call(call.op, [map_leaves(arg, lambda leaf: renamed.get(leaf, leaf)) for arg in call.args],
                                  call.attrs, ret_ty=call.ty)),
        None, [], [], block.annotations))
    merged = _chosen_tail(condition, mine, other, choices)
    if merged is None or renamed.keys() & set(tirx.analysis.undefined_vars(merged)):
        return None
    return map_nodes(then_tail, lambda node: merged if node.same_as(mine) else None)


def _reads_any(region, variables) -> bool:
    """Whether the buffer region ``region``'s bounds read a variable of ``variables``."""
    return any(var in variables for extent in region.region
               for var in vars_read(tirx.Evaluate(extent.min + extent.extent)))


def _hoisted(stmt: tirx.Stmt, choices: Mapping[str, TailChoice], through_loops: bool = False) -> tirx.Stmt:
    """``stmt`` with every test under it (not inside blocks) whose branches end with the same statement
    (or calls ``choices`` merges; with ``through_loops``, loops around such calls: ``_chosen_loops``) rewritten
    to run that statement once after it, innermost tests first."""
    if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
        return stmt
    stmt = map_child_stmts(stmt, lambda child: _hoisted(child, choices, through_loops))
    if not isinstance(stmt, tirx.IfThenElse) or stmt.else_case is None:
        return stmt
    (then_head, then_tail), (else_head, else_tail) = _split_tail(stmt.then_case), _split_tail(stmt.else_case)
    same = tvm_ffi.structural_equal(then_tail, else_tail)
    merge = _chosen_loops if through_loops else _chosen_tail
    tail = then_tail if same else merge(stmt.condition, then_tail, else_tail, choices)
    if tail is None or _declared(then_head + else_head) & set(tirx.analysis.undefined_vars(tail)):
        return stmt
    then_rest, else_rest = _sequence(then_head), _sequence(else_head)
    if then_rest is None and else_rest is None:
        return tail
    if then_rest is None:
        test = tirx.IfThenElse(tirx.Not(stmt.condition), else_rest, None)
    else:
        test = tirx.IfThenElse(stmt.condition, then_rest, else_rest)
    return tirx.SeqStmt([test, tail])


def common_tails(func: tirx.PrimFunc, choices: Optional[Mapping[str, TailChoice]] = None,
                 through_loops: bool = False) -> tirx.PrimFunc:
    """``func`` with each test in its loops whose two branches end with the same statement, or with calls of an op
    of ``choices`` (None: none) that its `TailChoice` makes one (with ``through_loops``, also the same loops and
    sequences around such calls: ``_chosen_loops``), running that statement once after the test (see the
    module)."""
    return with_root_loops_replaced(func, lambda loop: _hoisted(loop, choices or {}, through_loops))
