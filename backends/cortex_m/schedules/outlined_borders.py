"""On Helium cores, a padded convolution's border pixels call the table-form fused channel tiles' one out-of-line copy.

A LEAKY_RELU convolution's pixel (``conv_tiles``' table form, ``<prefix>_conv_tiles_lut_s8``, always inlined with
its constant sizes) is one call on its window inside the image or, in the other branch of the kernel's test, on its
copied border window: two inlined copies of the tiles per kernel (``common_tails`` does not merge the table forms:
merged, yolo_tiny_80's kernels ran 1.3-2.5 M instructions more, `conv_tiles.HELIUM_TAIL_CHOICES`), ~1,060 B a 3x3
kernel on cortex-m55 where cortex-m4f's call one shared copy (~510 B). ``outlined_border_calls`` makes the border
branch's call one of the bundle's out-of-line copy (``<prefix>_conv_tiles_shared_lut_s8``: the same contract, its
sizes read at run time); the interior keeps its inlined call. ``outlined_borders`` gives it the kernels whose border
pixels' extra instructions cost less than the inlined copy's bytes at the one price of code, where together they pay
the copy's own bytes: cortex-m55 yolo_tiny_80x48_w11 code 10,060 -> 9,088 B (cortex-m4f 9,932), 4,581,435 ->
4,535,557 instructions (six of its seven 3x3 kernels). The same sums in the same order either way: bit-exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import CONV_TILES_LUT_OPS, SHARED_CONV_TILES_LUT_OPS, call_of
from tvm_ext.tir.tir_walk import children, replace_stmt

INLINED_BYTES = 250
"""A kernel's code more with its border's table-form tiles inlined than calling the copy (bytes), the least measured
on cortex-m55 (arm-none-eabi-gcc -O2, nm): yolo_tiny_80x48_w11's 3x3 kernels of 17, 30, 45 and 70 channels 252, 266,
282, 276 and 380 B less."""
COPY_BYTES = 400
"""The copy's own code (bytes, once per bundle and bias type; 398 B in yolo_tiny_80x48_w11 on cortex-m55)."""
PIXEL_INSTRUCTIONS = 250
"""Instructions more per border pixel calling the copy (generic over its callers' windows, its sizes read at run
time) than inlined, about the most measured on cortex-m55 but one, where the kernel's inlined interior changed too:
yolo_tiny_80x48_w11's 3x3 kernels of 70 channels on 5x3 pixels (12 border pixels) +112 and +241 a border pixel, of
30 and 45 channels -137 and -535 (faster), of 17 channels over 11 inputs on 40x24 (124) +560."""
_BIAS_OF = {op: bias for bias, op in CONV_TILES_LUT_OPS.items()}


def _border_tails(stmt: tirx.Stmt, extents: dict) -> Iterator[tuple[tirx.Stmt, tvm.ir.Call, int]]:
    """(the border branch's last statement, its table-form call, its executions per call of the function) of each
    test under ``stmt`` (``extents``: the loops around it, variable -> constant extent) whose two branches end with
    calls of one table-form op, one branch that call alone (a pixel inside the image) and the other the call after
    statements (a border pixel's copied window)."""
    if isinstance(stmt, tirx.For):
        if not (isinstance(stmt.extent, tirx.IntImm) and isinstance(stmt.min, tirx.IntImm) and int(stmt.min) == 0):
            return
        extents = {**extents, stmt.loop_var: int(stmt.extent)}
    if isinstance(stmt, tirx.IfThenElse) and stmt.else_case is not None:
        found = _border_tail(stmt, extents)
        if found is not None:
            yield found
            return
    if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
        return
    for child in children(stmt):
        if isinstance(child, tirx.Stmt):
            yield from _border_tails(child, extents)


def _border_tail(test: tirx.IfThenElse, extents: dict) -> Optional[tuple[tirx.Stmt, tvm.ir.Call, int]]:
    """`_border_tails`' finding for the test ``test``, or None where its branches are not such calls."""
    branches = []
    for branch in (test.then_case, test.else_case):
        stmts = list(branch.seq) if isinstance(branch, tirx.SeqStmt) else [branch]
        branches.append((len(stmts) - 1, stmts[-1], call_of(stmts[-1], tuple(_BIAS_OF))))
    (then_head, _, then_call), (else_head, else_tail, else_call) = branches
    if then_call is None or else_call is None or not then_call.op.same_as(else_call.op) \
            or (then_head == 0) == (else_head == 0):
        return None
    total = 1
    for extent in extents.values():
        total *= extent
    inside = _inside_count(test.condition, extents)
    if then_head == 0:  # the condition holds inside the image
        border = total if inside is None else total - inside
        return else_tail, else_call, border
    border = total if inside is None else inside
    return branches[0][1], then_call, border


def _inside_count(condition: tirx.PrimExpr, extents: dict) -> Optional[int]:
    """The points of the loops ``extents`` where ``condition`` holds, for a conjunction of constant bounds on the
    loop variables (``lo <= v``, ``v < hi``), else None."""
    bounds = {var: [0, extent] for var, extent in extents.items()}
    terms, todo = [], [condition]
    while todo:
        term = todo.pop()
        if isinstance(term, tirx.And):
            todo += [term.a, term.b]
        else:
            terms.append(term)
    for term in terms:
        if not isinstance(term, (tirx.LT, tirx.LE)):
            return None
        a, b, strict = term.a, term.b, isinstance(term, tirx.LT)
        if isinstance(a, tirx.Var) and a in bounds and isinstance(b, tirx.IntImm):
            bounds[a][1] = min(bounds[a][1], int(b) + (0 if strict else 1))
        elif isinstance(b, tirx.Var) and b in bounds and isinstance(a, tirx.IntImm):
            bounds[b][0] = max(bounds[b][0], int(a) + (1 if strict else 0))
        else:
            return None
    count = 1
    for low, high in bounds.values():
        count *= max(0, high - low)
    return count


def border_gain(calls: int, pixels: int, instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> int:
    """What a kernel saves calling the copy on its border pixels (``pixels`` per call of the kernel, ``calls`` per
    inference), in instructions per inference: INLINED_BYTES at ``instructions_per_byte`` each, less
    PIXEL_INSTRUCTIONS a pixel."""
    return INLINED_BYTES * instructions_per_byte - calls * pixels * PIXEL_INSTRUCTIONS


def outlined_borders(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int],
                     instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> dict[str, frozenset[str]]:
    """Per bias type, the kernels of ``kernels`` (name -> PrimFunc, scheduled with the table-form tiles inlined;
    ``calls``: name -> calls per inference, one where absent) whose border pixels call the copy: those whose every
    border gains (`border_gain`), the best-paying first, the prefix whose gains most exceed the copy's COPY_BYTES
    at ``instructions_per_byte``."""
    gains: dict[str, dict[str, int]] = {}
    for name, func in kernels.items():
        found = list(_border_tails(_root_body(func), {}))
        per_bias: dict[str, int] = {}
        for _, call, pixels in found:
            gain = border_gain(calls.get(name, 1), pixels, instructions_per_byte)
            if gain <= 0:
                per_bias = {}
                break
            bias = _BIAS_OF[call.op.name]
            per_bias[bias] = per_bias.get(bias, 0) + gain
        if len(per_bias) == 1:
            (bias, gain), = per_bias.items()
            gains.setdefault(bias, {})[name] = gain
    chosen: dict[str, frozenset[str]] = {}
    for bias, by_kernel in gains.items():
        ranked = sorted(by_kernel, key=lambda kernel: (-by_kernel[kernel], kernel))
        best, total, count_best = 0, -COPY_BYTES * instructions_per_byte, 0
        for count, kernel in enumerate(ranked, 1):
            total += by_kernel[kernel]
            if total > best:
                best, count_best = total, count
        if count_best:
            chosen[bias] = frozenset(ranked[:count_best])
    return chosen


def outlined_border_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each border branch's table-form call (`_border_tails`) a call of the copy
    (SHARED_CONV_TILES_LUT_OPS of its bias type); any other function unchanged."""
    body = func.body
    for tail, call, _ in list(_border_tails(_root_body(func), {})):
        shared = tvm.ir.Op.get(SHARED_CONV_TILES_LUT_OPS[_BIAS_OF[call.op.name]])
        block = tail.block
        outlined = s_tir.SBlockRealize(tail.iter_values, tail.predicate, s_tir.SBlock(
            block.iter_vars, block.reads, block.writes, block.name_hint,
            tirx.Evaluate(tvm.ir.Call(shared, call.args, call.attrs, ret_ty=call.ty)), block.init, block.alloc_buffers,
            block.match_buffers, block.annotations))
        body = _replaced(body, tail, outlined)
    return func if body.same_as(func.body) else func.with_body(body)


def _root_body(func: tirx.PrimFunc) -> tirx.Stmt:
    """The statements of ``func``'s root block (its body where it has none)."""
    return func.body.block.body if isinstance(func.body, s_tir.SBlockRealize) else func.body


def _replaced(stmt: tirx.Stmt, target: tirx.Stmt, replacement: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with ``target`` replaced by ``replacement``, inside the function's root block too."""
    if isinstance(stmt, s_tir.SBlockRealize) and not stmt.same_as(target):
        block = stmt.block
        body = _replaced(block.body, target, replacement)
        if body.same_as(block.body):
            return stmt
        return s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, s_tir.SBlock(
            block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init, block.alloc_buffers,
            block.match_buffers, block.annotations))
    return replace_stmt(stmt, target, replacement)
