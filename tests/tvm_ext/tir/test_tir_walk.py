"""tvm_ext.tir.tir_walk: it knows every TIR node kind of the installed TVM, visits each, raises on others."""

from __future__ import annotations

import inspect

import pytest

tvm = pytest.importorskip("tvm")
from tvm import ir, s_tir, te, tirx  # noqa: E402
from tvm.ir.prim import expr as prim  # noqa: E402

from tvm_ext.tir import tir_walk  # noqa: E402
from tvm_ext.schedule.kernel_schedule import _read_repeatedly  # noqa: E402
from tvm_ext.tir.tir_walk import KNOWN_KINDS, UnknownTirNode, buffer_loads, children, map_child_stmts, walk  # noqa: E402

# Abstract bases, and classes of tvm.tirx that are no statement or expression node of a PrimFunc body.
_NOT_NODE_KINDS = {ir.Expr, tirx.Stmt, prim.BinaryOpExpr, prim.CmpExpr, prim.LogicalExpr, prim.Constant,
                   prim.ExprWithOp, tirx.PrimFunc}


def _installed_kinds() -> set[type]:
    """Every concrete statement class of tvm.tirx and tvm.s_tir, and every expression class of tvm.tirx (its
    expr.py re-exports tvm.ir.prim.expr), plus what tirx.BufferLoad, tirx.call_extern and a string build."""
    kinds = set()
    for module in (tirx, s_tir, prim):
        for value in vars(module).values():
            if inspect.isclass(value) and (issubclass(value, tirx.Stmt) or issubclass(value, ir.Expr)):
                kinds.add(value)
    kinds |= {ir.TensorLoad, ir.Call, ir.StringImm}
    return kinds - _NOT_NODE_KINDS


def test_the_walker_knows_every_node_kind_of_the_installed_tvm():
    missing = {kind.__name__ for kind in _installed_kinds() - KNOWN_KINDS}
    assert not missing, f"tir_walk does not know {sorted(missing)}"


def _sample_tree() -> tirx.Stmt:
    """A statement tree with one node of every kind the walker knows that can be built without a schedule."""
    n = tirx.Var("n", "int32")
    f = tirx.Var("f", "float32")
    buf = tirx.decl_buffer((8,), "float32", name="buf")
    load = tirx.BufferLoad(buf, [n])
    v = tirx.Var("v", "int32x4")
    exprs = [n + 1, n - 1, n * 2, tirx.Div(n, 2), tirx.Mod(n, 3), tirx.FloorDiv(n, 2), tirx.FloorMod(n, 2),
             tirx.Min(n, 1), tirx.Max(n, 1), tirx.EQ(n, 1), tirx.NE(n, 1), tirx.LT(n, 1), tirx.LE(n, 1),
             tirx.GT(n, 1), tirx.GE(n, 1), tirx.And(n < 1, n > 0), tirx.Or(n < 1, n > 0), tirx.Not(n < 1),
             tirx.LShift(n, 1), tirx.RShift(n, 1), tirx.BitwiseAnd(n, 1), tirx.BitwiseOr(n, 1),
             tirx.BitwiseXor(n, 1), tirx.BitwiseNot(n), tirx.Cast("float32", n), tirx.Select(n < 1, n, 2),
             tirx.Ramp(n, 1, 4), tirx.Broadcast(n, 4), tirx.Shuffle([v], [tirx.IntImm("int32", 0)]),
             tirx.Let(tirx.Var("t", "int32"), n, n), f * tirx.FloatImm("float32", 1.0),
             tirx.call_extern("int32", "f", ir.StringImm("s")), load]
    stmts = [tirx.Evaluate(e) for e in exprs]
    stmts += [tirx.BufferStore(buf, load, [n]), tirx.Bind(tirx.Var("b", "int32"), n),
              tirx.AssertStmt(n > 0, ir.StringImm("RuntimeError"), [ir.StringImm("n")]),
              tirx.AllocBuffer(tirx.decl_buffer((4,), "int8", name="tmp")),
              tirx.DeclBuffer(buf, data=tirx.Var("p", tirx.buffer_data_pointer_type(buf))),
              tirx.IfThenElse(n < 1, tirx.Evaluate(0), tirx.Evaluate(1)),
              tirx.While(n < 1, tirx.Break()), tirx.While(n < 1, tirx.Continue()),
              tirx.AttrStmt(n, "pragma", 1, tirx.Evaluate(0))]
    return tirx.For(n, 0, 8, tirx.ForKind.SERIAL, tirx.SeqStmt(stmts))


def test_walk_visits_every_node_of_a_tree_of_every_buildable_kind():
    seen = {type(node) for node in walk(_sample_tree())}
    assert {prim.Add, prim.Shuffle, prim.Let, ir.TensorLoad, ir.StringImm, ir.Call, tirx.While, tirx.Break,
            tirx.Continue, tirx.AttrStmt, tirx.AssertStmt, tirx.Bind, tirx.AllocBuffer, tirx.DeclBuffer} <= seen
    assert len(seen) >= 45


def test_an_unknown_kind_raises_instead_of_being_skipped(monkeypatch):
    with pytest.raises(UnknownTirNode, match="IndexMap"):
        children(tirx.IndexMap.from_func(lambda i: [i]))
    # Deep inside a tree: a kind the walker (as if written for an older TVM) does not know.
    monkeypatch.delitem(tir_walk._STATEMENTS, tirx.While)
    with pytest.raises(UnknownTirNode, match="While"):
        list(walk(_sample_tree()))


def test_buffer_loads_counts_loads_per_buffer_not_names_in_text():
    """`A` and `AB` (one name a prefix of the other): the old text count of `A[` would mix them."""
    a = te.placeholder((4,), "float32", name="A")
    ab = te.placeholder((4,), "float32", name="AB")
    out = te.compute((4,), lambda i: a[i] + ab[i] * ab[(i + 1) % 4], name="out")
    func = te.create_prim_func([a, ab, out])
    loads = buffer_loads(func.body)
    assert sorted(loads.values()) == [1, 2]
    assert {buf.name: count for buf, count in loads.items()} == {"A": 1, "AB": 2}


def test_read_repeatedly_counts_the_producers_buffer_only():
    """The consumer loads `p` once and `pp` twice: `p` is not read repeatedly (`p[` occurs 3 times in text)."""
    a = te.placeholder((4,), "float32", name="a")
    p = te.compute((4,), lambda i: a[i] * 2, name="p")
    pp = te.compute((4,), lambda i: a[i] * 3, name="pp")
    out = te.compute((4,), lambda i: p[i] + pp[i] * pp[(i + 1) % 4], name="out")
    sch = s_tir.Schedule(te.create_prim_func([a, out]))
    assert not _read_repeatedly(sch, sch.get_sblock("p"))
    assert _read_repeatedly(sch, sch.get_sblock("pp"))


def test_map_child_stmts_removes_and_fills_bodies():
    n = tirx.Var("n", "int32")
    alloc = tirx.AllocBuffer(tirx.decl_buffer((4,), "int8", name="tmp"))
    loop = tirx.For(n, 0, 4, tirx.ForKind.SERIAL, tirx.SeqStmt([alloc, alloc]))
    stripped = map_child_stmts(loop, lambda s: map_child_stmts(s, lambda _: None))
    assert isinstance(stripped, tirx.For) and isinstance(stripped.body, tirx.Evaluate)
    with pytest.raises(UnknownTirNode):
        map_child_stmts(tvm.relax.Var("x"), lambda s: s)
