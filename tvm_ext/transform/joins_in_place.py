"""Joins of contiguous pieces are written in place: each piece's producer writes its slice of the join's output.

A kernel whose only work is ``out.flat[c_k + j] = in_k.flat[j]`` for every element j of each input k, the
inputs' blocks tiling the output (row-major element indices; a CONCATENATION along an axis before which every
extent is 1, so each piece is one contiguous block of the output), computes nothing but a copy. ``JoinsInPlace`` finds these kernels from their TIR (`contiguous_join_offsets`, read from the
loops and their stores, not from the operator's name) and replaces the call by ``R.concat(pieces, axis)``, which
the plan reads as "every piece's storage is a view of this result at the piece's byte offset"
(`tvm_ext.plan.extract_plan`): the kernels that produce the pieces write the join's bytes directly, no kernel
copies them, and the memory planner keeps one buffer, live from the first piece's write to the join's last read.

A join is made in place only where that is as good as the copy for every reader:
- each piece is the whole storage of a kernel's result (directly, or through a reshape or a view of all its
  bytes) or of an earlier join made in place, and no model input, constant or state;
- no piece storage is another piece's (of this join or any other): a storage can lie in one place only;
- no piece storage is a model output (the caller's output buffer is its own storage); the join may be one (the
  kernels then write their pieces into the caller's buffer);
- every piece's byte offset is a multiple of `alignment` (the profile's, which every arena buffer keeps: a
  kernel writing its output there finds the alignment it finds in any buffer);
- the arena planned with the join in place is no larger than with its copy (`join_lifetimes`: the join is live
  from its first piece's write, so a long branch computing a later piece holds the earlier pieces and the rest of
  the join; decided greedily in main's order, the joins kept before in place in both plans).
The values are the copy's exactly: a kernel writes the same bytes, only elsewhere, and no kernel writes them
again while the join's result is live (`memory_planner.check` verifies the written views).
"""

from __future__ import annotations

import math
from typing import Optional

import tvm
from tvm import ir, relax, s_tir, tirx
from tvm.ir.prim import expr as prim
from tvm.sym import Analyzer

from memory_planner.plan import DTYPE_BYTES
from tvm_ext.layers import STATE_OPERAND_ATTR
from tvm_ext.transform.contiguous_views import plain_buffer, returned_vars, row_major
from tvm_ext.transform.join_lifetimes import JoinLifetimes

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_RESHAPE = tvm.ir.Op.get("relax.reshape")
_VIEW = tvm.ir.Op.get("relax.memory.view")
_CONCAT = tvm.ir.Op.get("relax.concat")


def _copy_leaves(stmt: tirx.Stmt, loops: tuple[tirx.For, ...] = ()) -> Optional[list]:
    """Each store of `stmt` with the loops around it (outermost first), None when `stmt` has anything but
    sequences, serial loops from 0 over constant extents, blocks without iteration variables, initialization,
    buffers or predicate of their own, and stores."""
    if isinstance(stmt, tirx.BufferStore):
        return [(loops, stmt)]
    if isinstance(stmt, tirx.SeqStmt):
        leaves = []
        for child in stmt.seq:
            found = _copy_leaves(child, loops)
            if found is None:
                return None
            leaves += found
        return leaves
    if isinstance(stmt, tirx.For):
        if stmt.kind != tirx.ForKind.SERIAL or not isinstance(stmt.min, prim.IntImm) or int(stmt.min) != 0 \
                or not isinstance(stmt.extent, prim.IntImm):
            return None
        return _copy_leaves(stmt.body, (*loops, stmt))
    if isinstance(stmt, s_tir.SBlockRealize):
        block = stmt.block
        if list(block.iter_vars) or block.init is not None or list(block.alloc_buffers) \
                or list(block.match_buffers) or not (isinstance(stmt.predicate, prim.IntImm)
                                                     and int(stmt.predicate) == 1):
            return None
        return _copy_leaves(block.body, loops)
    return None


def _leaf_run(loops: tuple[tirx.For, ...], store: tirx.BufferStore, target: tirx.Buffer,
              sources: list[tirx.Buffer]) -> Optional[tuple[int, int, int, int]]:
    """(input index, first element read, elements, write offset) when the store under `loops` copies the input's
    elements [first, first + elements) in order to the output `elements` further on by the write offset, else
    None."""
    value = store.value
    if not (store.buffer.same_as(target) and isinstance(value, ir.TensorLoad)):
        return None
    source = next((k for k, s in enumerate(sources) if value.source.same_as(s)), None)
    if source is None:
        return None
    analyzer = Analyzer()
    for loop in loops:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    written = row_major(store.indices, target.shape)
    read = row_major(value.indices, sources[source].shape)
    first = analyzer.simplify(read - row_major([loop.loop_var for loop in loops], [l.extent for l in loops]))
    offset = analyzer.simplify(written - read)
    if not (isinstance(first, prim.IntImm) and isinstance(offset, prim.IntImm)):
        return None
    return source, int(first), math.prod(int(loop.extent) for loop in loops), int(offset)


def _tiles(blocks: list[tuple[int, int]], total: int) -> bool:
    """Whether the (start, elements) `blocks` cover [0, total) exactly, each element once."""
    end = 0
    for start, count in sorted(blocks):
        if start != end:
            return False
        end += count
    return end == total


def contiguous_join_offsets(func: tirx.PrimFunc) -> Optional[list[int]]:
    """Per input, the element offset c_k when `func` (two or more inputs, one output, all of one dtype) writes
    ``out.flat[c_k + j] = in_k.flat[j]`` for every element j of each input, the inputs' blocks tiling the output
    (each output element written once), else None."""
    buffers = list(func.params)
    if len(buffers) < 3 or not all(isinstance(b, tirx.Buffer) and plain_buffer(b) for b in buffers):
        return None
    *sources, target = buffers
    if any(str(s.dtype) != str(target.dtype) for s in sources):
        return None
    leaves = _copy_leaves(func.body)
    runs = [] if leaves is None else [_leaf_run(loops, store, target, sources) for loops, store in leaves]
    if not runs or any(run is None for run in runs):
        return None
    offsets: list[Optional[int]] = [None] * len(sources)
    for source, _, _, offset in runs:
        if offsets[source] not in (None, offset):
            return None  # one input copied to two places
        offsets[source] = offset
    for k, source in enumerate(sources):
        if offsets[k] is None or not _tiles([(first, n) for s, first, n, _ in runs if s == k],
                                            math.prod(int(d) for d in source.shape)):
            return None
    elements = [math.prod(int(d) for d in s.shape) for s in sources]
    if not _tiles([(offsets[k], elements[k]) for k in range(len(sources))], math.prod(int(d) for d in target.shape)):
        return None
    return [int(offset) for offset in offsets]


def _join_axis(pieces: list[relax.TensorType], result: relax.TensorType) -> Optional[int]:
    """The axis along which `pieces`, in their order, are `result` (every other extent equal), None if none is."""
    shapes = [[int(d) for d in ty.shape.values] for ty in [*pieces, result]]
    *piece_shapes, out = shapes
    for axis in range(len(out)):
        if all(len(s) == len(out) and s[:axis] == out[:axis] and s[axis + 1:] == out[axis + 1:] for s in piece_shapes) \
                and sum(s[axis] for s in piece_shapes) == out[axis]:
            return axis
    return None


@tvm.transform.module_pass(opt_level=0, name="JoinsInPlace")
class JoinsInPlace:
    """Each `call_tir` of a contiguous join (module docstring) whose pieces the rules there allow in place, its
    arena no larger than the copy's (`_ArenaGuard`) -> ``R.concat(pieces, axis)``, which the plan makes one buffer
    with each piece's storage a view of it; PrimFuncs no call reads any more are dropped. Bindings keep their
    vars and places (layer records stay as they were)."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        value_of = {b.var: b.value for block in main.body.blocks for b in block.bindings}
        storage = _Storages(mod, value_of)
        outputs = {storage.root(var) for var in returned_vars(main)}
        claimed: set = set()
        guard = _ArenaGuard(main, self.alignment)
        blocks, replaced = [], set()
        for block in main.body.blocks:
            bindings = []
            for binding in block.bindings:
                join = self._join(mod, binding, storage, outputs, claimed)
                roots = [] if join is None else [storage.root(p) for p in join.args[0].fields]
                if join is not None and guard.keeps(binding.var, roots):
                    claimed.update(roots)
                    replaced.add(binding.value.args[0])
                    storage.joined.add(binding.var)
                    binding = relax.VarBinding(binding.var, join)
                bindings.append(binding)
            blocks.append(type(block)(bindings))
        if not replaced:
            return mod
        result = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
        result["main"] = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty,
                                        main.is_pure, main.attrs)
        still_called = {b.value.args[0] for block in blocks for b in block.bindings
                        if isinstance(b.value, relax.Call) and b.value.op.same_as(_CALL_TIR)}
        for gvar in replaced - still_called:
            del result[gvar]
        return result

    def _join(self, mod: tvm.IRModule, binding: relax.VarBinding, storage: "_Storages", outputs: set,
              claimed: set) -> Optional[relax.Call]:
        """The ``R.concat`` that replaces `binding`'s value, None when it is no join this pass makes in place."""
        value = binding.value
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR) and isinstance(value.ty, relax.TensorType)
                and isinstance(value.args[0], tvm.ir.GlobalVar)):
            return None
        func = mod[value.args[0]]
        offsets = contiguous_join_offsets(func) if isinstance(func, tirx.PrimFunc) else None
        pieces = list(value.args[1].fields)
        if offsets is None or not all(isinstance(p, relax.Var) and isinstance(p.ty, relax.TensorType) for p in pieces):
            return None
        element_bytes = DTYPE_BYTES[str(value.ty.dtype)]
        if any(offset * element_bytes % self.alignment for offset in offsets):
            return None
        # In argument order, each piece right after the one before: the plan lays the pieces out in that order.
        order = sorted(range(len(pieces)), key=lambda k: offsets[k])
        if order != list(range(len(pieces))):
            return None
        roots = [storage.root(p) for p in pieces]
        if any(root is None or root in outputs or root in claimed for root in roots) or len(set(roots)) < len(roots):
            return None
        axis = _join_axis([p.ty for p in pieces], value.ty)
        if axis is None:
            return None
        return relax.op.concat(relax.Tuple(pieces), axis)


class _ArenaGuard:
    """Which joins stay in place: greedily, in main's order, each join whose pieces in place plan an arena no
    larger than its copy does, the joins kept before it in place in both plans (`JoinLifetimes`, planned only
    once a join is found)."""

    def __init__(self, main: relax.Function, alignment: int) -> None:
        self.main = main
        self.alignment = alignment
        self.lifetimes: Optional[JoinLifetimes] = None
        self.joins: dict = {}  # piece storage var -> join result var, of the joins kept in place
        self.arena: Optional[int] = None  # bytes, with `joins` in place and every other join a copy

    def keeps(self, join: relax.Var, pieces: list[relax.Var]) -> bool:
        """Whether the join `join` of the piece storages `pieces` stays in place (then recorded)."""
        if self.lifetimes is None:
            self.lifetimes = JoinLifetimes(self.main, self.alignment)
            self.arena = self.lifetimes.arena_bytes(self.joins)
        joins = {**self.joins, **{piece: join for piece in pieces}}
        arena = self.lifetimes.arena_bytes(joins)
        if arena > self.arena:
            return False
        self.joins, self.arena = joins, arena
        return True


class _Storages:
    """Which var holds the bytes of a var of main: the kernel result (or in-place join) whose storage it is."""

    def __init__(self, mod: tvm.IRModule, value_of: dict) -> None:
        self.mod = mod
        self.value_of = value_of
        self.joined: set = set()  # the results of joins made in place so far

    def root(self, var: relax.Expr) -> Optional[relax.Var]:
        """The var whose value is the kernel result (or in-place join) that `var` is all the bytes of, None
        when it is something else (a model input, a constant, part of a storage, a kernel's state)."""
        nbytes = _nbytes(var.ty) if isinstance(var, relax.Var) else None
        while isinstance(var, relax.Var) and var in self.value_of:
            value = self.value_of[var]
            if isinstance(value, relax.Var):
                var = value
            elif isinstance(value, relax.Call) and (value.op.same_as(_RESHAPE) or (
                    value.op.same_as(_VIEW) and int(value.args[3].value) == 0)):
                var = value.args[0]
            elif isinstance(value, relax.TupleGetItem):
                return var if self._own_result(value.tuple_value) and _nbytes(var.ty) == nbytes else None
            else:
                own = var in self.joined or (self._own_result(value) and isinstance(value.ty, relax.TensorType))
                return var if own and _nbytes(var.ty) == nbytes else None
        return None

    def _own_result(self, value: relax.Expr) -> bool:
        """Whether `value` (or the var bound to it) is a kernel call whose results are storages of their own."""
        if isinstance(value, relax.Var):
            value = self.value_of.get(value)
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
            return False
        func = self.mod[value.args[0]]
        return not (isinstance(func, tirx.PrimFunc) and func.attrs is not None and STATE_OPERAND_ATTR in func.attrs)


def _nbytes(ty) -> Optional[int]:
    """Bytes of a tensor of static shape, None for anything else."""
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return None
    return math.prod(int(d) for d in ty.shape.values) * DTYPE_BYTES[str(ty.dtype)]
