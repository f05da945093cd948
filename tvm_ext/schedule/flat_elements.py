"""One flat loop for an elementwise kernel: a block without reduction whose every access to a buffer indexed by its
iteration variables reads or writes element (v0, v1, ...) of a buffer of the block's own shape, in order, has its
loop nest fused into one loop over the elements (the same elements in the same order: C's flat index is the nest's
``(v0 * n1 + v1) * n2 + ...``).

Why: code. On rv32imc a 128x128 ADD kernel's nest took 152 B where one loop takes 104 B (simple_add_model's, from
tabled values, gcc -O2 -mtune=size: the nest's row pointers and counters spilled a register, 188 -> 148 B of the
bundle's code). Not speed: gcc steps one index and adds it to each buffer's base in the flat loop (RV32 has no
register-plus-register address), where the nest's inner loop stepped each pointer, one instruction more an element
less the nest's few a row (simple_add_model 362,604 -> 378,201 instructions; pretrainedResnet_quant 34,071,361 ->
34,091,617 for 180 B less code). A backend asks for it with its MAC schedules' ``flat_elements``
(`backends.backend.MacSchedules`); a block that broadcasts an operand, reads a window or a slice, or writes a part of
its output keeps its nest (its flat index would need a division per element).
"""

from __future__ import annotations

from tvm import ir, s_tir, tirx

from tvm_ext.tir.tir_walk import children, walk


def _element_access(indices, iter_vars, shape) -> bool:
    """Whether `indices` of a buffer of `shape` index element (v0, v1, ...) of the block's iteration variables
    `iter_vars`, every one in order (a dimension of extent 1 may be indexed by 0), the buffer of the block's shape."""
    if len(indices) != len(iter_vars) or len(shape) != len(iter_vars):
        return False
    for index, iv, extent in zip(indices, iter_vars, shape):
        if not isinstance(extent, tirx.IntImm) or not isinstance(iv.dom.extent, tirx.IntImm) \
                or int(extent) != int(iv.dom.extent):
            return False
        if not (index.same_as(iv.var) or (int(iv.dom.extent) == 1 and isinstance(index, tirx.IntImm)
                                           and int(index) == 0)):
            return False
    return True


def _flat_accesses(block: s_tir.SBlock) -> bool:
    """Whether every store of `block`, and every load whose indices read its iteration variables other than through
    another load (a table's position read from data), is an `_element_access`."""
    own = {iv.var for iv in block.iter_vars}
    for node in walk(block.body):
        if isinstance(node, tirx.BufferStore):
            buffer = node.buffer
        elif isinstance(node, ir.TensorLoad) and any(_reads_directly(index, own) for index in node.indices):
            buffer = node.source
        else:
            continue
        if not _element_access(list(node.indices), list(block.iter_vars), list(buffer.shape)):
            return False
    return True


def _reads_directly(expr, variables: set) -> bool:
    """Whether `expr` reads one of `variables` outside the loads inside it."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Var) and node in variables:
            return True
        if not isinstance(node, ir.TensorLoad):
            stack.extend(children(node))
    return False


def _bound_in_order(sch: s_tir.Schedule, block: s_tir.SBlock, loops: list) -> bool:
    """Whether `block`'s k-th iteration variable is bound to the k-th of `loops`' variables, each from 0."""
    realize = next(node for node in walk(sch.mod["main"].body)
                   if isinstance(node, s_tir.SBlockRealize) and node.block.same_as(block))
    return all(value.same_as(sch.get(loop).loop_var) and isinstance(sch.get(loop).min, tirx.IntImm)
               and int(sch.get(loop).min) == 0 for value, loop in zip(realize.iter_values, loops))


def flatten_elements(sch: s_tir.Schedule, root) -> None:
    """Fuse into one loop the loop nest of each of `root`'s child blocks that reduces nothing, sits alone in two or
    more loops (no other block inside them) that its own iteration variables bind one to one, and accesses its
    buffers elementwise (`_flat_accesses`). Its values, and the order they are computed in, do not change."""
    for block in sch.get_child_blocks(root):
        stmt = sch.get(block)
        if any(iv.iter_type != tirx.IterVar.DataPar for iv in stmt.iter_vars) or not _flat_accesses(stmt):
            continue
        loops = sch.get_loops(block)
        if len(loops) < 2 or len(loops) != len(stmt.iter_vars):
            continue
        nested = all(isinstance(sch.get(loop).body, tirx.For) for loop in loops[:-1]) \
            and isinstance(sch.get(loops[-1]).body, s_tir.SBlockRealize)
        if not nested or any(sch.get(loop).kind != tirx.ForKind.SERIAL for loop in loops) \
                or not _bound_in_order(sch, stmt, loops):
            continue
        try:
            sch.fuse(*loops)
        except s_tir.ScheduleError:
            continue
