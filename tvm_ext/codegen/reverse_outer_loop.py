"""A kernel's outermost loop run from its last iteration to its first, where the memory plan asks for it.

The memory planner lets a kernel's output overlap the input it consumes (`memory_planner.api.StreamOrder`):
run forwards, the output's write front must stay below the input's read front, so a chain of such kernels
(convolution after convolution, each over the last one's output) drifts down the arena by every kernel's
lead, and the first large buffer of the chain must sit above the whole drift. Run backwards, the write front
must stay above the read front instead (`StreamOrder.trail_bytes`): a reversed kernel climbs the arena, and
a chain that mixes both directions drifts less (`tvm_ext.compile.reversed_loops` chooses which kernels).

The pass (on lowered TIR, last of `codegen_c`'s lowering passes, so the stream order read after it is the
reversed kernel's own) rewrites only a PrimFunc carrying `REVERSED_ATTR` whose body, declarations aside, is
one serial loop of constant bounds: ``for (i = min; i < min + extent; ++i) body(i)`` becomes
``for (i = min; i < min + extent; ++i) body(2 * min + extent - 1 - i)``. Every iteration then runs exactly as
before, in the opposite order: the results are the same bits when no iteration reads what another writes,
which the caller guarantees by marking only kernels whose outer loop runs over output rows (convolutions:
`tvm_ext.compile.reversed_loops.REVERSIBLE_KINDS`; each output element is computed within its own iteration).
Any other body is left as it is (its stream order then stays forwards, and the planner sees no gain).
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.ir.prim import expr as prim

from tvm_ext.tir.tir_walk import map_leaves, replace_stmt

REVERSED_ATTR = "tvm_ext.reversed_outer_loop"  # on a kernel's PrimFunc: run its outermost loop backwards


def _statements(stmt: tirx.Stmt) -> list[tirx.Stmt]:
    """The statements the body runs one after the other, declarations left out and attributes opened."""
    if isinstance(stmt, tirx.SeqStmt):
        return [inner for child in stmt.seq for inner in _statements(child)]
    if isinstance(stmt, tirx.AttrStmt):
        return _statements(stmt.body)
    if isinstance(stmt, (tirx.DeclBuffer, tirx.AllocBuffer)):
        return []
    return [stmt]


def outer_loop(func: tirx.PrimFunc) -> tirx.For | None:
    """The one serial loop of constant bounds that is all `func` runs (declarations aside), else None."""
    statements = _statements(func.body)
    if len(statements) != 1:
        return None
    loop = statements[0]
    if not (isinstance(loop, tirx.For) and loop.kind == tirx.ForKind.SERIAL and loop.step is None
            and isinstance(loop.min, prim.IntImm) and isinstance(loop.extent, prim.IntImm)):
        return None
    return loop


def reversed_outer_loop(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with its outermost loop run backwards (module docstring); `func` itself when it has no such loop."""
    loop = outer_loop(func)
    if loop is None or int(loop.extent) < 2:
        return func
    var = loop.loop_var
    mirrored = tirx.const(2 * int(loop.min) + int(loop.extent) - 1, str(var.ty.dtype)) - var
    body = map_leaves(loop.body, lambda leaf: mirrored if leaf.same_as(var) else leaf)
    backwards = tirx.For(var, loop.min, loop.extent, loop.kind, body, loop.thread_binding, loop.annotations)
    return tirx.PrimFunc(func.params, replace_stmt(func.body, loop, backwards), func.ret_type, func.attrs)


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.ReverseOuterLoop")
def reverse_outer_loop(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """The pass form of `reversed_outer_loop`, for the kernels marked with `REVERSED_ATTR` only."""
    if func.attrs is None or REVERSED_ATTR not in func.attrs or not int(func.attrs[REVERSED_ATTR]):
        return func
    return reversed_outer_loop(func)


def marked_reversed(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` marked for `reverse_outer_loop`."""
    return func.with_attr(REVERSED_ATTR, tvm.tirx.IntImm("int32", 1))
