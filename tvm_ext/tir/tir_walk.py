"""One complete walk over TIR: every statement and expression node kind of TVM 0.27's `tvm.tirx` (and the
schedulable blocks of `tvm.s_tir`), by its exact class. A node of a kind not listed here raises
UnknownTirNode instead of being skipped: a new TVM that adds a kind fails loudly, never silently.

TVM 0.27's Python API has no TIR visitor; this module is ours. `children` lists a node's sub-nodes,
`walk` visits a tree in pre-order, `buffer_loads` counts loads per buffer, `vars_read` collects the variables
a tree reads, `map_child_stmts` rebuilds a statement with its child statements rewritten, `map_leaves` rebuilds
a tree with its constants and variables rewritten, `map_nodes` with any nodes replaced.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterator, Optional

from tvm import ir, s_tir, tirx
from tvm.ir.prim import expr as prim

Node = object  # a tirx.Stmt or a TIR expression (tvm.ir.Expr)


class UnknownTirNode(TypeError):
    """A TIR node of a kind this walker does not know (a TVM newer than the one it was written for)."""


def _binary(node) -> list:
    return [node.a, node.b]


def _region(regions) -> list:
    """The index expressions of buffer regions (a block's reads and writes, a match_buffer's source)."""
    return [e for region in regions for r in region.region for e in (r.min, r.extent)]


def _optional(*nodes) -> list:
    return [n for n in nodes if n is not None]


def _ints(*values) -> list:
    """The expressions among `values` (a vector's lanes may be a plain int)."""
    return [v for v in values if isinstance(v, ir.Expr)]


_EXPRESSIONS: dict[type, Callable[[object], list]] = {
    **{kind: _binary for kind in (
        prim.Add, prim.Sub, prim.Mul, prim.Div, prim.Mod, prim.FloorDiv, prim.FloorMod, prim.Min, prim.Max,
        prim.EQ, prim.NE, prim.LT, prim.LE, prim.GT, prim.GE, prim.And, prim.Or,
        prim.LShift, prim.RShift, prim.BitwiseAnd, prim.BitwiseOr, prim.BitwiseXor)},
    prim.Not: lambda n: [n.a],
    prim.BitwiseNot: lambda n: [n.a],
    prim.Cast: lambda n: [n.value],
    prim.Select: lambda n: [n.condition, n.true_value, n.false_value],
    prim.Ramp: lambda n: [n.base, n.stride, *_ints(n.lanes)],
    prim.Broadcast: lambda n: [n.value, *_ints(n.lanes)],
    prim.Shuffle: lambda n: [*n.vectors, *n.indices],
    prim.Let: lambda n: [n.var, n.value, n.body],
    ir.Var: lambda n: [],
    prim.IntImm: lambda n: [],
    prim.FloatImm: lambda n: [],
    ir.StringImm: lambda n: [],
    ir.Call: lambda n: [a for a in n.args if isinstance(a, ir.Expr)],
    ir.TensorLoad: lambda n: [n.source, *n.indices],  # tirx.BufferLoad builds these
    tirx.Reduce: lambda n: [*n.source, *n.init, *(a.var for a in n.axis), n.condition],
}

_STATEMENTS: dict[type, Callable[[object], list]] = {
    tirx.Bind: lambda n: [n.var, n.value],
    tirx.AssertStmt: lambda n: [n.condition, *n.message_parts],
    tirx.For: lambda n: [n.loop_var, n.min, n.extent, *_optional(n.step), n.body],
    tirx.While: lambda n: [n.condition, n.body],
    tirx.BufferStore: lambda n: [n.buffer, n.value, *n.indices],
    tirx.AllocBuffer: lambda n: [n.buffer],
    tirx.DeclBuffer: lambda n: [n.buffer, *_optional(n.data)],
    tirx.AttrStmt: lambda n: [*_ints(n.value), n.body],
    tirx.SeqStmt: lambda n: list(n.seq),
    tirx.IfThenElse: lambda n: [n.condition, n.then_case, *_optional(n.else_case)],
    tirx.Evaluate: lambda n: [n.value],
    tirx.Return: lambda n: _ints(n.value),
    tirx.Break: lambda n: [],
    tirx.Continue: lambda n: [],
    tirx.ScopeIdDefStmt: lambda n: [*getattr(n, "def").def_ids, *getattr(n, "def").extents],
    tirx.TilePrimitiveCall: lambda n: [a for a in n.args if isinstance(a, ir.Expr)],
    s_tir.SBlockRealize: lambda n: [*n.iter_values, n.predicate, n.block],
    s_tir.SBlock: lambda n: [*(e for iv in n.iter_vars for e in (iv.var, iv.dom.min, iv.dom.extent)),
                             *_region(n.reads), *_region(n.writes), *_region(m.source for m in n.match_buffers),
                             *_optional(n.init), n.body],
}

KNOWN_KINDS: frozenset[type] = frozenset(_EXPRESSIONS) | frozenset(_STATEMENTS)


def children(node: Node) -> list:
    """The statements and expressions directly inside `node`, in source order; UnknownTirNode for a kind
    this walker does not know."""
    kind = type(node)
    visit = _STATEMENTS.get(kind) or _EXPRESSIONS.get(kind)
    if visit is None:
        raise UnknownTirNode(f"tvm_ext.tir.tir_walk does not know the TIR node kind {kind.__module__}.{kind.__name__}")
    return visit(node)


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree under `node` (itself included), in pre-order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def buffer_loads(node: Node) -> Counter:
    """How many loads of each buffer (its data var) the tree under `node` holds."""
    return Counter(n.source for n in walk(node) if isinstance(n, ir.TensorLoad))


def vars_read(node: Node) -> set:
    """Every variable the tree under `node` reads: loop variables, bound variables where they are used,
    buffers loaded or stored, pointers. Not the variable a `Bind` defines, nor a buffer or pointer that only
    a `DeclBuffer` or `AllocBuffer` declares."""
    return {child for current in walk(node) if not isinstance(current, (tirx.DeclBuffer, tirx.AllocBuffer))
            for child in (children(current) if not isinstance(current, tirx.Bind) else [current.value])
            if isinstance(child, ir.Var)}


def map_child_stmts(stmt: tirx.Stmt, rewrite: Callable[[tirx.Stmt], Optional[tirx.Stmt]]) -> Optional[tirx.Stmt]:
    """`stmt` with each statement directly inside it replaced by `rewrite(child)`, where None removes the
    child: a sequence left empty is None, a loop or branch body left empty is `Evaluate(0)`. A statement
    without child statements is returned as it is; an unknown kind raises UnknownTirNode."""
    kind = type(stmt)
    if kind not in _STATEMENTS:
        raise UnknownTirNode(f"tvm_ext.tir.tir_walk does not know the TIR statement kind {kind.__module__}.{kind.__name__}")
    if kind is tirx.SeqStmt:
        kept = [s for s in (rewrite(child) for child in stmt.seq) if s is not None]
        return None if not kept else kept[0] if len(kept) == 1 else tirx.SeqStmt(kept)

    def body(child: tirx.Stmt) -> tirx.Stmt:
        return rewrite(child) or tirx.Evaluate(0)

    if kind is tirx.For:
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body(stmt.body), stmt.thread_binding,
                        stmt.annotations, stmt.step)
    if kind is tirx.IfThenElse:
        else_case = rewrite(stmt.else_case) if stmt.else_case is not None else None
        return tirx.IfThenElse(stmt.condition, body(stmt.then_case), else_case)
    if kind is tirx.AttrStmt:
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, body(stmt.body))
    if kind is tirx.While:
        return tirx.While(stmt.condition, body(stmt.body))
    if kind in (s_tir.SBlockRealize, s_tir.SBlock):
        raise UnknownTirNode(f"tvm_ext.tir.tir_walk does not rewrite inside {kind.__name__} (schedule it first)")
    return stmt


_BINARY_KINDS = frozenset(kind for kind, visit in _EXPRESSIONS.items() if visit is _binary)

# How each node kind is rebuilt from its direct children (in the order `children` lists them).
_REBUILD: dict[type, Callable[[object, list], object]] = {
    **{kind: (lambda n, c: type(n)(c[0], c[1])) for kind in _BINARY_KINDS},
    prim.Not: lambda n, c: prim.Not(c[0]),
    prim.BitwiseNot: lambda n, c: prim.BitwiseNot(c[0]),
    prim.Cast: lambda n, c: prim.Cast(n.ty, c[0]),
    prim.Select: lambda n, c: prim.Select(c[0], c[1], c[2]),
    prim.Let: lambda n, c: prim.Let(c[0], c[1], c[2]),
    ir.Call: lambda n, c: ir.Call(n.op, [c.pop(0) if isinstance(a, ir.Expr) else a for a in n.args], n.attrs,
                                  ret_ty=n.ty),
    ir.TensorLoad: lambda n, c: tirx.BufferLoad(c[0], c[1:]),
    tirx.Bind: lambda n, c: tirx.Bind(c[0], c[1]),
    tirx.BufferStore: lambda n, c: tirx.BufferStore(c[0], c[1], c[2:]),
    tirx.Evaluate: lambda n, c: tirx.Evaluate(c[0]),
    tirx.IfThenElse: lambda n, c: tirx.IfThenElse(c[0], c[1], c[2] if n.else_case is not None else None),
    tirx.For: lambda n, c: tirx.For(c[0], c[1], c[2], n.kind, c[-1], n.thread_binding, n.annotations,
                                    c[3] if n.step is not None else None),
    tirx.While: lambda n, c: tirx.While(c[0], c[1]),
    tirx.AttrStmt: lambda n, c: tirx.AttrStmt(n.node, n.attr_key, c[0] if len(c) == 2 else n.value, c[-1]),
    tirx.SeqStmt: lambda n, c: tirx.SeqStmt(c),
}


def map_leaves(node: Node, rewrite: Callable[[Node], Node]) -> Node:
    """The tree under `node` with each leaf (constant, variable, buffer) replaced by `rewrite(leaf)`; a node
    is rebuilt only where a leaf under it changed. UnknownTirNode for a kind `children` does not know, or a
    changed leaf under a kind this function cannot rebuild."""
    return map_nodes(node, lambda n: None if children(n) else rewrite(n))


def map_nodes(node: Node, replace: Callable[[Node], Optional[Node]]) -> Node:
    """The tree under `node` with each node for which `replace` returns a node replaced by it (pre-order: what
    is replaced is not looked into); a node is rebuilt only where something under it changed. UnknownTirNode
    as for `map_leaves`."""
    replacement = replace(node)
    if replacement is not None:
        return replacement
    parts = children(node)
    if not parts:
        return node
    mapped = [map_nodes(part, replace) for part in parts]
    if all(new.same_as(old) for new, old in zip(mapped, parts)):
        return node
    kind = type(node)
    if kind not in _REBUILD:
        raise UnknownTirNode(f"tvm_ext.tir.tir_walk does not rebuild the TIR node kind {kind.__module__}.{kind.__name__}")
    return _REBUILD[kind](node, mapped)


def map_store_expressions(stmt: tirx.Stmt, rewrite: Callable[[Node], Optional[Node]]) -> tirx.Stmt:
    """``stmt`` with ``map_nodes(..., rewrite)`` applied to its stores and evaluations, inside blocks too; a block
    (and its realize) rebuilt only where its body changed."""
    if isinstance(stmt, s_tir.SBlockRealize):
        block = map_store_expressions(stmt.block, rewrite)
        return stmt if block.same_as(stmt.block) else s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, block)
    if isinstance(stmt, s_tir.SBlock):
        body = map_store_expressions(stmt.body, rewrite)
        return stmt if body.same_as(stmt.body) else s_tir.SBlock(
            stmt.iter_vars, stmt.reads, stmt.writes, stmt.name_hint, body, stmt.init, stmt.alloc_buffers,
            stmt.match_buffers, stmt.annotations)
    if isinstance(stmt, (tirx.BufferStore, tirx.Evaluate)):
        return map_nodes(stmt, rewrite)
    return map_child_stmts(stmt, lambda child: map_store_expressions(child, rewrite))


def replace_stmt(stmt: tirx.Stmt, target: tirx.Stmt, replacement: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with the statement ``target`` (found through loops, sequences and branches, not inside
    blocks) replaced by ``replacement``."""
    if stmt.same_as(target):
        return replacement
    if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)):
        return stmt
    return map_child_stmts(stmt, lambda child: replace_stmt(child, target, replacement))


def with_root_loops_replaced(func: tirx.PrimFunc, replacement: Callable[..., Optional[tirx.Stmt]],
                             enclosing: bool = False) -> tirx.PrimFunc:
    """``func`` (a root block around its statements) with each loop under the root that is not inside another
    block replaced by ``replacement(loop)`` (with ``enclosing``: ``replacement(loop, loops)``, ``loops`` the
    loops around it, outermost first) where that is not None, outermost loops first (a replaced loop's
    inner loops are not visited); ``func`` itself when its body is no root block."""
    realize = func.body
    if not isinstance(realize, s_tir.SBlockRealize):
        return func

    def replaced(stmt: tirx.Stmt, loops: tuple) -> tirx.Stmt:
        if isinstance(stmt, tirx.For):
            new = replacement(stmt, loops) if enclosing else replacement(stmt)
            if new is not None:
                return new
            loops = (*loops, stmt)
        if isinstance(stmt, (s_tir.SBlockRealize, s_tir.SBlock)) or not isinstance(stmt, tirx.Stmt):
            return stmt
        return map_child_stmts(stmt, lambda child: replaced(child, loops))

    root = realize.block
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, replaced(root.body, ()), root.init,
                         root.alloc_buffers, root.match_buffers, root.annotations)
    return func.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))
