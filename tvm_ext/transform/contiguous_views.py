"""Copies of a contiguous block of their input become views: no kernel, no bytes of their own.

A kernel whose only work is ``out.flat[i] = in.flat[c + i]`` for every output element i (row-major element
indices; an UNPACK or SPLIT piece along the outermost axis longer than one, a SLICE or STRIDED_SLICE that keeps
whole rows of a contiguous block, any such copy whatever operator it came from) computes nothing: its output
is the input's bytes from ``c`` elements on. ``ContiguousCopiesAsViews`` finds these kernels from their TIR
(`contiguous_copy_offset`, read from the loops and the one store, not from the operator's name) and replaces
each call by ``R.memory.view(input, shape, dtype, byte_offset)``; the plan makes its output a view of the
input at that byte offset (`memory_planner.plan.Tensor.view_offset`), the memory planner keeps the input's
bytes alive while any view of them is read, and the run function passes ``input + offset``.

A view is made only where it is as good as a copy for every reader: its byte offset is a multiple of
`alignment` (the profile's, which every arena buffer keeps, so a kernel reading it finds the alignment it
finds in any buffer; at most `memory_planner.api.VIEW_ALIGNMENT_BYTES`, the most any kernel's reads need, which
the plan's checker asks of a view), and it is no model output (the caller's output buffer is its own storage).
"""

from __future__ import annotations

import math
from typing import Optional

import tvm
from tvm import ir, relax, s_tir, tirx
from tvm.ir.prim import expr as prim
from tvm.sym import Analyzer

from memory_planner.api import VIEW_ALIGNMENT_BYTES
from memory_planner.plan import DTYPE_BYTES
from tvm_ext.tir.tir_walk import map_leaves

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def row_major(indices, shape) -> tirx.PrimExpr:
    """The row-major element index of `indices` in a buffer of `shape`."""
    flat = tirx.const(0, "int64")
    for index, extent in zip(indices, shape):
        flat = flat * tirx.const(int(extent), "int64") + tirx.Cast("int64", index)
    return flat


def plain_buffer(buffer: tirx.Buffer) -> bool:
    """Whether `buffer` is a dense row-major tensor of constant shape starting at its data pointer."""
    offset = buffer.elem_offset
    return (all(isinstance(d, (int, prim.IntImm)) for d in buffer.shape) and not list(buffer.strides or [])
            and (offset is None or (isinstance(offset, (int, prim.IntImm)) and int(offset) == 0)))


def _copy_nest(func: tirx.PrimFunc) -> Optional[tuple[list[tirx.For], s_tir.SBlockRealize]]:
    """The loops (outermost first) and the one block under them of `func`'s body, None for any other form:
    a root block with no buffers of its own, then serial loops from 0 over constant extents, then one block
    with no initialization and no buffers of its own."""
    stmt = func.body
    if isinstance(stmt, s_tir.SBlockRealize) and not list(stmt.block.iter_vars):
        root = stmt.block
        if root.init is not None or list(root.alloc_buffers) or list(root.match_buffers):
            return None
        stmt = root.body
    loops = []
    while isinstance(stmt, tirx.For):
        if stmt.kind != tirx.ForKind.SERIAL or not isinstance(stmt.min, prim.IntImm) or int(stmt.min) != 0 \
                or not isinstance(stmt.extent, prim.IntImm):
            return None
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, s_tir.SBlockRealize):
        return None
    block = stmt.block
    if block.init is not None or list(block.alloc_buffers) or list(block.match_buffers):
        return None
    if not (isinstance(stmt.predicate, prim.IntImm) and int(stmt.predicate) == 1):
        return None
    return loops, stmt


def contiguous_copy_offset(func: tirx.PrimFunc) -> Optional[int]:
    """The element offset c when `func` (one input, one output of the same dtype) writes
    ``out.flat[i] = in.flat[c + i]`` for each of its output's elements once (row-major indices), else None."""
    if len(func.params) != 2 or not all(isinstance(p, tirx.Buffer) for p in func.params):
        return None
    source, target = func.params
    if source.dtype != target.dtype or not (plain_buffer(source) and plain_buffer(target)):
        return None
    nest = _copy_nest(func)
    if nest is None:
        return None
    loops, realize = nest
    store = realize.block.body
    if not (isinstance(store, tirx.BufferStore) and store.buffer.same_as(target)
            and isinstance(store.value, ir.TensorLoad) and store.value.source.same_as(source)):
        return None
    bound = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    substituted = map_leaves(store, lambda leaf: bound.get(leaf, leaf) if isinstance(leaf, tirx.Var) else leaf)
    target_elements = math.prod(int(d) for d in target.shape)
    if math.prod(int(loop.extent) for loop in loops) != target_elements:
        return None
    analyzer = Analyzer()
    for loop in loops:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    written = row_major(substituted.indices, target.shape)
    read = row_major(substituted.value.indices, source.shape)
    # Each loop iteration writes the next output element (so each once), and reads `offset` elements further on.
    in_order = analyzer.simplify(written - row_major([loop.loop_var for loop in loops], [l.extent for l in loops]))
    offset = analyzer.simplify(read - written)
    if not (isinstance(in_order, prim.IntImm) and int(in_order) == 0 and isinstance(offset, prim.IntImm)):
        return None
    source_elements = math.prod(int(d) for d in source.shape)
    return int(offset) if 0 <= int(offset) and int(offset) + target_elements <= source_elements else None


def returned_vars(main: relax.Function) -> set:
    """The vars main returns: its result, or the fields of its result tuple (bound to a var or not); not the
    inputs of a call whose result main returns."""
    result = main.body.body
    tuples = {b.var: b.value for block in main.body.blocks for b in block.bindings if isinstance(b.value, relax.Tuple)}
    return set(relax.analysis.free_vars(tuples.get(result, result)))


@tvm.transform.module_pass(opt_level=0, name="ContiguousCopiesAsViews")
class ContiguousCopiesAsViews:
    """Each `call_tir` of a contiguous copy (module docstring) whose byte offset is a multiple of `alignment`
    (bytes; at most VIEW_ALIGNMENT_BYTES) and whose result is no model output -> ``R.memory.view`` of its input;
    PrimFuncs no call reads any more are dropped. Bindings keep their vars and places (layer records stay as they
    were)."""

    def __init__(self, alignment: int) -> None:
        self.alignment = min(alignment, VIEW_ALIGNMENT_BYTES)

    def _view(self, mod: tvm.IRModule, value: relax.Expr) -> Optional[relax.Call]:
        """The view that replaces `value`, None when it is no contiguous copy this pass replaces."""
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)
                and isinstance(value.args[0], tvm.ir.GlobalVar) and len(value.args[1].fields) == 1
                and isinstance(value.args[1].fields[0], relax.Var) and isinstance(value.ty, relax.TensorType)):
            return None
        func = mod[value.args[0]]
        offset = contiguous_copy_offset(func) if isinstance(func, tirx.PrimFunc) else None
        if offset is None:
            return None
        byte_offset = offset * DTYPE_BYTES[str(value.ty.dtype)]
        if byte_offset % self.alignment:
            return None
        return relax.op.memory.view(value.args[1].fields[0], relax.ShapeExpr(list(value.ty.shape.values)),
                                    str(value.ty.dtype), relax.prim_value(tirx.IntImm("int64", byte_offset)))

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        returned = returned_vars(main)
        blocks, replaced = [], set()
        for block in main.body.blocks:
            bindings = []
            for binding in block.bindings:
                view = None if binding.var in returned else self._view(mod, binding.value)
                if view is not None:
                    replaced.add(binding.value.args[0])
                    binding = relax.VarBinding(binding.var, view)
                bindings.append(binding)
            blocks.append(type(block)(bindings))
        if not replaced:
            return mod
        body = relax.SeqExpr(blocks, main.body.body)
        result = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
        result["main"] = relax.Function(main.params, body, main.ret_ty, main.is_pure, main.attrs)
        still_called = {value.args[0] for block in blocks for b in block.bindings
                        for value in [b.value] if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)}
        for gvar in replaced - still_called:
            del result[gvar]
        return result
