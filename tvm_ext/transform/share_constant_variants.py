"""Kernels equal but for their scalar constants, emitted once: the shared kernel reads those constants from a
small int32 array each call passes (in flash, beside the weights).

A recurrent model the converter unrolled (a GRU's gate chain, once per time step) or a network of repeated blocks
calls kernels that differ only in their requantization multipliers, zero points and offsets: TVM's kernels then
differ in immediates and `unique_kernels` (tvm_ext.plan.extract_plan) emits one C function per step. Here each
int32 immediate of a kernel's stored values (`variable_immediates`) is one position of the kernel's *template*;
kernels whose templates are structurally equal form a group, and the positions whose values differ between its
members become loads from a new input buffer, ``constants``, that the call passes: the array of that call's
values. Positions every member agrees on stay immediates, and so does the shift of each general requantization
call (`_SHIFT_KEPT`): its helper folds its nudge and shift with it, so kernels of other shifts are other groups; the
direction of a shift and the other choices made from the constants (the helper's form, `right_shift_only`) are the
call's operator, part of the template.

A scheduled kernel that calls a backend helper has positions in its call too: the helper's *value* arguments
(`helper_value_arguments`: int32 immediates that are neither an address nor a size its registered access reads,
such as an input zero point), so the per-step fully connected kernels of an unrolled GRU, equal but for their input
zero point, share one. The kernels left unshared are grouped once more with their loads' index offsets as positions
too (`variable_immediates(offsets=True)`; one slot only, whose range over the calls index_checks bounds each index
by): an UNPACK's pieces that stay copies (unaligned for a view) share one kernel.

A group is shared only where that pays at the code price (`Group.pays`): the code of the kernels dropped
(`kernel_bytes`), less the constants' arrays and every call's extra argument, against the loads of the constants
every call runs: once at the kernel's entry where each loop's constants and own values fit in the core's registers
(`_entry_or_use`), else where used. A backend's choices made per kernel for the whole bundle see each paying group as the one kernel it
becomes (`shared_groups`, tvm_ext.lower.bundle_choice).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, s_tir, tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE, THUMB2_KERNEL_CODE, KernelCode
from packager.fixed_point_c import REQUANTIZE_OPS
from tvm_ext.layers import (BROADCAST_LOOKUP_ATTR, CONSTANT_RANGES_ATTR, ELEMENTWISE_LOOKUP_ATTR, INDEX_GUARDS_ATTR,
                            OPERAND_ROLES_ATTR, STATE_OPERAND_ATTR)
from tvm_ext.tir.helper_access import Arg, helper_access, is_out_of_line
from tvm_ext.tir.kernel_names import constant_roles
from tvm_ext.tir.tir_walk import children, map_child_stmts, map_nodes, walk

INT32_MIN = -(2**31)
_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_SHIFT_KEPT = frozenset(REQUANTIZE_OPS[helper] for helper in ("double", "single"))
"""The requantizations (TFLite's MultiplyByQuantizedMultiplier forms) whose third argument, the shift, stays an
immediate: the general ones, whose helpers branch on its sign or build 64-bit shifts from it. The right-shift-only
ones ("double_right_shift", "double_small") share it: a run-time shift costs them one NOT (e - 1 = ~shift), the
RISC-V form (`SMALL_RIGHT_SHIFT_MULH`) two instructions more than a constant one, and the DSP and Helium cores'
element loops call the biased helper (`backends.cortex_m.schedules.biased_requantize`), which takes its shift and
bias as arguments anyway."""
_OPERAND_INDEX_ATTRS = (STATE_OPERAND_ATTR, INDEX_GUARDS_ATTR, CONSTANT_RANGES_ATTR, ELEMENTWISE_LOOKUP_ATTR,
                        BROADCAST_LOOKUP_ATTR)
"""The kernel attributes (tvm_ext.layers) that name operands by their position."""
_NARROW_INTEGERS = frozenset({"int8", "uint8", "int16", "uint16"})
CONSTANTS_ROLE = "constants"
"""The role (tvm_ext.layers.OPERAND_ROLES_ATTR) and buffer name of a shared kernel's array of constants."""

CALL_ARGUMENT_BYTES = 8
"""Code bytes of one more pointer argument at a call: its address loaded (a literal's 2 B load and 4 B pool entry
on Thumb-2, LUI and ADDI on RV32) and, past the registers' arguments, stored on the stack; measured 7.2 (m4f),
7.1 (m55), 7.7 (rv32imc) B a call in kws_gru_40x16's run function."""


def helper_value_arguments(call) -> tuple[int, ...]:
    """The positions of `call`'s *value* arguments, if it is a call of a backend helper whose access is registered
    (tvm_ext.tir.helper_access): its int32 immediates that are neither a pointer the access names nor a size or
    stride its axes read (a zero point, an offset), which the helper's C takes as run-time parameters and which
    no bound of its memory access depends on. Empty for any other call."""
    if not (isinstance(call, tvm.ir.Call) and isinstance(call.op, tvm.ir.Op)):
        return ()
    access = helper_access(call.op.name)
    if access is None:
        return ()
    named = {reach.argument for reach in access.pointers}
    named |= {size.index for reach in access.pointers for axis in reach.axes for size in (axis.extent, axis.stride)
              if isinstance(size, Arg)}
    return tuple(k for k, arg in enumerate(call.args)
                 if k not in named and isinstance(arg, tirx.IntImm) and _int32(arg))


def _whole(region) -> tirx.BufferRegion:
    """The region of all of `region`'s buffer."""
    return tirx.BufferRegion(region.source, [tvm.ir.Range.from_min_extent(0, extent) for extent in region.source.shape])


def _map_stores(stmt: tirx.Stmt, rewrite: Callable, whole_reads: bool = False, in_loop: bool = False) -> tirx.Stmt:
    """`stmt` with `rewrite(value)` for each stored value, inside blocks too, and for each value argument of an
    evaluated helper call (`helper_value_arguments`) outside any loop of more than one pass (`in_loop`: inside one, where an inlined
    helper specialized on the value at every pixel would lose that: mobilenet_v2_050_64 cortex-m4f +181,000
    instructions for 932 B) or, of an out-of-line helper (`helper_access.is_out_of_line`: nothing specialized on
    the value), anywhere (Helium's ADD runs: vit_tiny_16_int8's five ADDs of 64x48 one kernel), in source order; with `whole_reads`, each block reading all of each buffer it reads
    (where its loads' index offsets become the constants': their regions no longer known)."""
    in_loop = in_loop or (isinstance(stmt, tirx.For)
                          and not (isinstance(stmt.extent, tirx.IntImm) and int(stmt.extent.value) == 1))
    if isinstance(stmt, s_tir.SBlockRealize):
        block = _map_stores(stmt.block, rewrite, whole_reads, in_loop)
        return stmt if block.same_as(stmt.block) else s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, block)
    if isinstance(stmt, s_tir.SBlock):
        body = _map_stores(stmt.body, rewrite, whole_reads, in_loop)
        reads = [_whole(region) for region in stmt.reads] if whole_reads else stmt.reads
        return stmt if body.same_as(stmt.body) and not whole_reads else s_tir.SBlock(
            stmt.iter_vars, reads, stmt.writes, stmt.name_hint, body, stmt.init, stmt.alloc_buffers,
            stmt.match_buffers, stmt.annotations)
    if isinstance(stmt, tirx.BufferStore):
        value = rewrite(stmt.value)
        return stmt if value.same_as(stmt.value) else tirx.BufferStore(stmt.buffer, value, stmt.indices)
    if isinstance(stmt, tirx.Evaluate) and helper_value_arguments(stmt.value) \
            and (not in_loop or is_out_of_line(stmt.value.op.name)):
        call, positions = stmt.value, helper_value_arguments(stmt.value)
        args = [rewrite(arg) if k in positions else arg for k, arg in enumerate(call.args)]
        if all(new.same_as(old) for new, old in zip(args, call.args)):
            return stmt
        return tirx.Evaluate(tvm.ir.Call(call.op, args, call.attrs, ret_ty=call.ty))
    return map_child_stmts(stmt, lambda child: _map_stores(child, rewrite, whole_reads, in_loop))


def _narrowing(node) -> bool:
    """Whether `node` is a cast to an integer of 16 bits or fewer: its value's range is its type's, whatever
    the constants under it."""
    return isinstance(node, tirx.Cast) and str(node.ty.dtype) in _NARROW_INTEGERS


def _keeping_indices(value_mapper: Callable[[object], Optional[tirx.Expr]]) -> Callable[[object], Optional[tirx.Expr]]:
    """A `map_nodes` mapper for a load and its indices: the indices keep their immediates (nested loads likewise),
    except a narrowing cast's value (`_narrowing`), which `value_mapper` maps as a stored value's."""
    def in_index(node) -> Optional[tirx.Expr]:
        if isinstance(node, tvm.ir.TensorLoad):
            return tirx.BufferLoad(node.source, [map_nodes(index, in_index) for index in node.indices])
        if _narrowing(node):
            return tirx.Cast(str(node.ty.dtype), map_nodes(node.value, value_mapper))
        return None

    return in_index


def _int32(node) -> bool:
    return str(node.ty.dtype) == "int32"


def _offset(node) -> Optional[tuple[tirx.Expr, int]]:
    """(x, c) where `node` is x + c or x - (-c) of an int32 immediate c (int32 x), else None."""
    if isinstance(node, (tirx.Add, tirx.Sub)) and isinstance(node.b, tirx.IntImm) and _int32(node.b):
        if isinstance(node, tirx.Add):
            return node.a, int(node.b.value)
        if int(node.b.value) != INT32_MIN:
            return node.a, -int(node.b.value)
    return None


def explicit_offsets(value: tirx.Expr) -> tirx.Expr:
    """`value` with each int32 operand (of an addition, subtraction, multiplication, minimum, maximum or call) in
    the form x + c, c an int32 immediate: 0 where it has none. The lowering leaves out an offset that is 0 (a zero
    point, a rescaled bias) and writes x + c for c > 0 and x - |c| for c < 0, so the kernels of an unrolled chain
    whose steps differ in such constants differ in form; so written, they are one template (`variable_immediates`)."""
    def operand(node: tirx.Expr) -> tirx.Expr:
        if isinstance(node, tirx.IntImm) or not _int32(node):
            return map_nodes(node, explicit)
        offset = _offset(node)
        if offset is not None:
            return tirx.Add(map_nodes(offset[0], explicit), tirx.IntImm("int32", offset[1]))
        return tirx.Add(map_nodes(node, explicit), tirx.IntImm("int32", 0))

    def explicit(node) -> Optional[tirx.Expr]:
        if isinstance(node, tvm.ir.TensorLoad):
            return in_index(node)
        if isinstance(node, (tirx.Add, tirx.Sub, tirx.Mul, tirx.Min, tirx.Max)) and _int32(node):
            offset = _offset(node)
            if offset is not None:
                return tirx.Add(map_nodes(offset[0], explicit), tirx.IntImm("int32", offset[1]))
            return type(node)(operand(node.a), operand(node.b))
        if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name.startswith("tvm_ext."):
            return tvm.ir.Call(node.op, [operand(arg) for arg in node.args], node.attrs, ret_ty=node.ty)
        return None

    in_index = _keeping_indices(explicit)
    return map_nodes(value, explicit)


def _without_zero_offsets(value: tirx.Expr) -> tirx.Expr:
    """`value` without the additions of an immediate 0 (`explicit_offsets`' that no member of a group varies)."""
    def bare(node) -> Optional[tirx.Expr]:
        if isinstance(node, tirx.Add) and isinstance(node.b, tirx.IntImm) and int(node.b.value) == 0:
            return map_nodes(node.a, bare)
        return None

    return map_nodes(value, bare)


def _with_immediates(func: tirx.PrimFunc, replace: Callable[[int, tirx.IntImm], tirx.Expr],
                     offsets: bool = False) -> tirx.PrimFunc:
    """`func` with its k-th variable immediate (`variable_immediates`' order: in each stored value, its offsets
    explicit (`explicit_offsets`), in pre-order) replaced by `replace(k, imm)`.

    The immediates of a load's indices stay, except under a narrowing cast (`_narrowing`: a lookup table's index
    `(int8)(value) + 128`, whose range does not depend on them) and, with `offsets`, each int32 index's own offset
    (its c in x + c, 0 where it has none; x keeps its immediates): the one position a template of index offsets
    varies (`constant_groups`), which index_checks bounds by the range of the values the calls pass (a constant
    operand's, CONSTANT_RANGES_ATTR: each bound then one member's own access)."""
    count = [0]

    def rewrite(node) -> Optional[tirx.Expr]:
        if isinstance(node, tvm.ir.TensorLoad):
            if not offsets:
                return in_index(node)
            return tirx.BufferLoad(node.source, [offset_index(index) for index in node.indices])
        if isinstance(node, tirx.IntImm) and str(node.ty.dtype) == "int32":
            count[0] += 1
            return replace(count[0] - 1, node)
        if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name in _SHIFT_KEPT:
            acc, multiplier, shift = node.args
            return tvm.ir.Call(node.op, [map_nodes(acc, rewrite), map_nodes(multiplier, rewrite), shift], node.attrs,
                               ret_ty=node.ty)
        return None

    def offset_index(index: tirx.Expr) -> tirx.Expr:
        dtype = str(index.ty.dtype)
        x, c = _index_offset(index)
        if dtype not in ("int32", "int64") or not INT32_MIN < c < 2**31:
            return map_nodes(index, in_index)
        term = rewrite(tirx.IntImm("int32", c))
        if isinstance(term, tirx.IntImm):
            term = tirx.IntImm(dtype, int(term.value))
        elif dtype != "int32":
            term = tirx.Cast(dtype, term)
        return term if x is None else tirx.Add(map_nodes(x, in_index), term)

    in_index = _keeping_indices(rewrite)
    return func.with_body(_map_stores(func.body, lambda value: map_nodes(explicit_offsets(value), rewrite), offsets))


def _index_offset(index: tirx.Expr) -> tuple[Optional[tirx.Expr], int]:
    """(x, c) where `index` is x + c or x - (-c) of an integer immediate c, (None, c) where it is c, else
    (index, 0)."""
    if isinstance(index, tirx.IntImm):
        return None, int(index.value)
    if isinstance(index, (tirx.Add, tirx.Sub)) and isinstance(index.b, tirx.IntImm):
        return index.a, int(index.b.value) if isinstance(index, tirx.Add) else -int(index.b.value)
    return index, 0


def variable_immediates(func: tirx.PrimFunc, offsets: bool = False) -> tuple[tirx.PrimFunc, tuple[int, ...]]:
    """(`func`'s template, the values of its variable immediates in order): every int32 immediate of a stored
    value but an index's (with `offsets`, each index's own offset too: `_with_immediates`) and a requantization's
    shift; the template holds each as 0."""
    values: list[int] = []

    def masked(k: int, imm: tirx.IntImm) -> tirx.Expr:
        values.append(int(imm.value))
        return tirx.IntImm("int32", 0)

    return _with_immediates(func, masked, offsets), tuple(values)


def _valued(stmt) -> bool:
    """Whether `stmt` is a store or a helper call with value arguments: a statement whose immediates vary
    (`_map_stores`)."""
    return isinstance(stmt, tirx.BufferStore) or (isinstance(stmt, tirx.Evaluate)
                                                  and bool(helper_value_arguments(stmt.value)))


def kernel_bytes(func: tirx.PrimFunc, code: KernelCode = THUMB2_KERNEL_CODE) -> int:
    """`func`'s code in bytes, an estimate for the core of `code` (a backend's `KernelSchedules.kernel_code`):
    `code.bytes_per_node` for each expression node of its stored values and helper calls (`_valued`) and for each
    such statement, `code.loop_bytes` a loop, `code.function_bytes`."""
    nodes = sum(1 + sum(1 for _ in walk(node.value)) for node in walk(func.body) if _valued(node))
    loops = sum(1 for node in walk(func.body) if isinstance(node, tirx.For))
    return nodes * code.bytes_per_node + loops * code.loop_bytes + code.function_bytes


def constant_loads(shared: tirx.PrimFunc) -> int:
    """The loads of `shared`'s constants one call runs: each store's or helper call's (`_valued`) loads of the
    CONSTANTS_ROLE buffer, and each local value loaded from it (`_loaded_once`), times the iterations of the loops
    around it (constant extents; a loop of another extent counted once)."""
    def count(stmt, iterations: int) -> int:
        if isinstance(stmt, tirx.Bind) and isinstance(stmt.value, tvm.ir.TensorLoad) \
                and stmt.value.source.name == CONSTANTS_ROLE:
            return iterations
        if _valued(stmt):
            return iterations * sum(1 for node in walk(stmt.value)
                                    if isinstance(node, tvm.ir.TensorLoad) and node.source.name == CONSTANTS_ROLE)
        if isinstance(stmt, tirx.For) and isinstance(stmt.extent, tirx.IntImm):
            iterations *= int(stmt.extent.value)
        return sum(count(child, iterations) for child in children(stmt) if isinstance(child, tirx.Stmt))

    return count(shared.body, 1)


def constants_across_loops(shared: tirx.PrimFunc) -> int:
    """The most registers one loop of `shared` (a kernel of constants loaded at its entry, `_loaded_once`) holds
    across its passes: the constants' local values its body reads, and its own (each buffer it reads or writes, a
    pointer; its and its outer loops' counters); loops of one pass are none. 0 where no loop reads a constant."""
    loaded = [node.var for node in walk(shared.body) if isinstance(node, tirx.Bind)
              and isinstance(node.value, tvm.ir.TensorLoad) and node.value.source.name == CONSTANTS_ROLE]

    def held(stmt, counters: int) -> int:
        if isinstance(stmt, tirx.For) and not (isinstance(stmt.extent, tirx.IntImm) and int(stmt.extent.value) == 1):
            counters += 1
            nodes = list(walk(stmt.body))
            constants = {k for node in nodes if isinstance(node, tirx.Var) for k, var in enumerate(loaded)
                         if node.same_as(var)}
            buffers = {node.buffer.name for node in nodes if isinstance(node, tirx.BufferStore)} \
                | {node.source.name for node in nodes if isinstance(node, tvm.ir.TensorLoad)}
            own = len(constants) + len(buffers) + counters if constants else 0
            return max([own, *(held(child, counters) for child in children(stmt) if isinstance(child, tirx.Stmt))])
        return max([0, *(held(child, counters) for child in children(stmt) if isinstance(child, tirx.Stmt))])

    return held(shared.body, 0)


@dataclass(frozen=True)
class Group:
    """Kernels (GlobalVar names, call order) equal but for some immediates of their templates: `slot_of` maps
    each such position to its slot in the constants' array (positions whose values agree in every member share
    one), `values[name]` is each member's array (one value a slot)."""

    names: tuple[str, ...]
    slot_of: dict
    values: dict
    offsets: bool = False
    """Whether the template's positions include its loads' index offsets (`variable_immediates`)."""

    @property
    def slots(self) -> int:
        """The length of each call's array of constants."""
        return len(self.values[self.names[0]])

    def pays(self, kernel_bytes: int, loads: int, calls: int) -> bool:
        """Whether one shared kernel (`kernel_bytes` of code, `loads` loads of its constants a call) for the
        group's `calls` calls in all pays at the code price (`INSTRUCTIONS_PER_BYTE`): the code of the members
        but one, less each member's array (4 B a value; calls of one member pass one array) and each call's extra
        argument, is worth more than the loads (an instruction each) of every call."""
        saved = (len(self.names) - 1) * kernel_bytes - len(self.names) * 4 * self.slots - calls * CALL_ARGUMENT_BYTES
        return saved > 0 and saved * INSTRUCTIONS_PER_BYTE > calls * loads


def constant_groups(funcs: dict[str, tirx.PrimFunc], offsets: bool = False) -> list[Group]:
    """The groups of two or more of `funcs` (name -> PrimFunc, call order) whose templates (with `offsets`, their
    loads' index offsets among their positions: `variable_immediates`) are structurally equal and whose immediates
    differ somewhere (kernels equal outright are unique_kernels' to merge). A group of index offsets has one slot:
    the range of its one value over the calls then bounds each index by a member's own (`_with_immediates`)."""
    buckets: dict[int, list[list]] = {}
    for name, func in funcs.items():
        template, values = variable_immediates(func, offsets)
        key = tvm_ffi.structural_hash(template)
        same = next((b for b in buckets.get(key, []) if tvm_ffi.structural_equal(b[0], template)), None)
        if same is None:
            buckets.setdefault(key, []).append([template, [(name, values)]])
        else:
            same[1].append((name, values))
    groups = []
    for bucket in (b for entries in buckets.values() for b in entries):
        members = bucket[1]
        if len(members) < 2:
            continue
        columns = list(zip(*(values for _, values in members)))
        distinct = list(dict.fromkeys(column for column in columns if len(set(column)) > 1))
        if distinct and not (offsets and len(distinct) > 1):
            slot_of = {k: distinct.index(column) for k, column in enumerate(columns) if column in distinct}
            groups.append(Group(tuple(n for n, _ in members), slot_of,
                                {n: tuple(column[i] for column in distinct) for i, (n, _) in enumerate(members)},
                                offsets))
    return groups


def in_first_read_order(func: tirx.PrimFunc, num_inputs: int) -> tuple[tirx.PrimFunc, tuple[int, ...]]:
    """(`func` with its `num_inputs` inputs in the order its body first reads them, that order as the inputs'
    original positions): one order for kernels of equal arithmetic whose fusion listed their inputs in another
    order (an unrolled GRU's gate chain fused as mul_sub in some steps and sub_mul in others), so that their
    templates are structurally equal. Inputs never read keep their order, last; the outputs stay where they are. A
    kernel whose attributes name its operands by position (`_OPERAND_INDEX_ATTRS`) keeps its order."""
    if any(attr in (func.attrs or {}) for attr in _OPERAND_INDEX_ATTRS):
        return func, tuple(range(num_inputs))
    inputs = list(func.params[:num_inputs])
    first = {}
    for position, node in enumerate(walk(func.body)):
        for k, param in enumerate(inputs):
            if k not in first and node.same_as(param):
                first[k] = position
    order = tuple(sorted(range(num_inputs), key=lambda k: (first.get(k, float("inf")), k)))
    if order == tuple(range(num_inputs)):
        return func, order
    reordered = tirx.PrimFunc([*(inputs[k] for k in order), *func.params[num_inputs:]], func.body, func.ret_type,
                              func.attrs)
    roles = (func.attrs or {}).get(OPERAND_ROLES_ATTR)
    if roles is not None and len(roles) == num_inputs:
        reordered = reordered.with_attr(OPERAND_ROLES_ATTR, [roles[k] for k in order])
    return reordered, order


def shared_kernel(func: tirx.PrimFunc, group: Group, roles: Sequence[str], at_entry: bool = False) -> tirx.PrimFunc:
    """`func` (a member of `group`) with its immediates at the group's positions read from a new input buffer
    CONSTANTS_ROLE (int32, one element a slot, after its inputs, whose roles (OPERAND_ROLES_ATTR) are `roles`):
    the C parameter `constants` (tvm_ext.codegen.codegen_c names it by its role); with `at_entry`, each loaded once
    at the kernel's entry (`_loaded_once`; not a group of index offsets)."""
    buffer = tirx.decl_buffer((group.slots,), "int32", name=CONSTANTS_ROLE)

    def replace(k: int, imm: tirx.IntImm) -> tirx.Expr:
        slot = group.slot_of.get(k)
        return imm if slot is None else tirx.BufferLoad(buffer, [tirx.IntImm("int64", slot)])

    body = _map_stores(_with_immediates(func, replace, group.offsets).body, _without_zero_offsets)
    if at_entry and not group.offsets:
        body = _loaded_once(body, buffer)
    num_inputs = len(roles)
    params = [*func.params[:num_inputs], buffer, *func.params[num_inputs:]]
    shared = tirx.PrimFunc(params, body, func.ret_type, func.attrs)
    return shared.with_attr(OPERAND_ROLES_ATTR, [*roles, CONSTANTS_ROLE])


def _entry_or_use(func: tirx.PrimFunc, group: Group, roles: Sequence[str], code: KernelCode) -> tirx.PrimFunc:
    """The shared kernel of `group` (`shared_kernel`) for the core of `code`: its constants loaded once at its entry
    where every loop's values fit in the core's registers (`constants_across_loops` against `code.registers`), else
    where used. kws_gru_40x16_int8's GRU gate chain on cortex-m55, 33 constants in one loop over 48 elements: at its
    entry, code 6,884 -> 6,992 B and instructions 408,794 -> 416,828 (spilled)."""
    kernel = shared_kernel(func, group, roles, at_entry=code.registers > 0)
    return kernel if constants_across_loops(kernel) <= code.registers else shared_kernel(func, group, roles)


def _loaded_once(body: tirx.Stmt, buffer: tirx.Buffer) -> tirx.Stmt:
    """`body` with each slot of the constants ``buffer`` its stored values and helper calls read loaded once, into a
    local value at the kernel's entry (inside its root block): an int8 store may alias the constants (C's character
    types alias anything), so gcc reloaded each one at every element where the shared kernel's loops read it. Not
    for index offsets (`Group.offsets`: index_checks bounds an index by the constants' loads)."""
    values: dict[int, tirx.Var] = {}

    def local(node) -> Optional[tirx.Expr]:
        if isinstance(node, tvm.ir.TensorLoad) and node.source.same_as(buffer):
            slot = int(node.indices[0])
            return values.setdefault(slot, tirx.Var(f"{CONSTANTS_ROLE}_{slot}", "int32"))
        return None

    mapped = _map_stores(body, lambda value: map_nodes(value, local))

    def bound(stmt: tirx.Stmt) -> tirx.Stmt:
        if not values:
            return stmt
        return tirx.SeqStmt([*(tirx.Bind(values[slot], tirx.BufferLoad(buffer, [tirx.IntImm("int64", slot)]))
                               for slot in sorted(values)), stmt])

    if isinstance(mapped, s_tir.SBlockRealize) and not mapped.block.iter_vars:
        block = mapped.block
        return s_tir.SBlockRealize(mapped.iter_values, mapped.predicate, s_tir.SBlock(
            block.iter_vars, block.reads, block.writes, block.name_hint, bound(block.body), block.init,
            block.alloc_buffers, block.match_buffers, block.annotations))
    return bound(mapped)


def input_roles(func: tirx.PrimFunc, operands: Sequence[relax.Expr]) -> list[str]:
    """The roles of `func`'s inputs (`operands`, a call's): its OPERAND_ROLES_ATTR, else those the plan would
    give it (`constant_roles`: weight and bias of a MAC kernel), else "data" each."""
    roles = (func.attrs or {}).get(OPERAND_ROLES_ATTR)
    if roles is not None and len(roles) == len(operands):
        return [str(role) for role in roles]
    constant = [isinstance(operand, tvm.ir.expr.Constant) for operand in operands]
    return constant_roles(func, len(operands), constant) or ["data"] * len(operands)


def _calls(main: relax.Function):
    """main's call_tir bindings, in order."""
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR):
                yield binding


def _paying_groups(mod: tvm.IRModule, code: KernelCode) \
        -> tuple[list[tuple[Group, tirx.PrimFunc]], dict[str, tuple[int, ...]]]:
    """Each paying group of the kernels `main` calls (`constant_groups` of their inputs in first-read order,
    `in_first_read_order`, then of the kernels left with their index offsets too; `Group.pays` priced for all the
    calls of its members, their code estimated for the core of `code`: `kernel_bytes`) with its shared kernel
    (`_entry_or_use`), and each kernel's input order."""
    main = mod["main"]
    funcs, orders, operands_of = {}, {}, {}
    for binding in _calls(main):
        gvar = binding.value.args[0]
        if gvar.name_hint not in funcs:
            operands_of[gvar.name_hint] = list(binding.value.args[1].fields)
            funcs[gvar.name_hint], orders[gvar.name_hint] = in_first_read_order(
                mod[gvar], len(operands_of[gvar.name_hint]))
    calls = Counter(binding.value.args[0].name_hint for binding in _calls(main))
    shared: list[tuple[Group, tirx.PrimFunc]] = []
    for offsets in (False, True):
        left = {name: func for name, func in funcs.items() if not any(name in g.names for g, _ in shared)}
        for group in constant_groups(left, offsets):
            first = group.names[0]
            if len({len(orders[n]) for n in group.names}) != 1:
                continue
            kernel = _entry_or_use(funcs[first], group, input_roles(
                funcs[first], [operands_of[first][k] for k in orders[first]]), code)
            if group.pays(kernel_bytes(funcs[first], code), constant_loads(kernel), sum(calls[n] for n in group.names)):
                shared.append((group, kernel))
    return shared, orders


def shared_groups(mod: tvm.IRModule, code: KernelCode = THUMB2_KERNEL_CODE) -> list[tuple[str, ...]]:
    """The kernels (PrimFunc names, call order) of each group `share_constant_variants` would make of `mod`'s for
    the core of `code`: for a choice made per kernel (a backend's `bundle_choice`) to see each such group as the one
    kernel it becomes."""
    return [group.names for group, _ in _paying_groups(mod, code)[0]]


def share_constant_variants(mod: tvm.IRModule, code: KernelCode = THUMB2_KERNEL_CODE) -> tvm.IRModule:
    """`mod` with each paying group of kernels `main` calls (`_paying_groups`) replaced by one shared kernel
    (`shared_kernel`, named after the group's first), each call passing its operands in that order and its
    constants' array; `code` estimates a kernel's code for the bundle's core (its backend's
    `KernelSchedules.kernel_code`)."""
    main = mod["main"]
    shared, orders = _paying_groups(mod, code)
    if not shared:
        return mod
    group_of = {name: group for group, _ in shared for name in group.names}
    dropped = {name for group, _ in shared for name in group.names[1:]}
    mod = tvm.IRModule({gvar: func for gvar, func in mod.functions.items() if gvar.name_hint not in dropped},
                       attrs=mod.attrs)
    for group, kernel in shared:
        mod[mod.get_global_var(group.names[0])] = kernel
    blocks = []
    for block in main.body.blocks:
        bindings = []
        for binding in block.bindings:
            value = binding.value
            name = value.args[0].name_hint if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR) else None
            group = group_of.get(name)
            if group is not None:
                constants = relax.const(np.array(group.values[name], dtype="int32"))
                operands = [value.args[1].fields[k] for k in orders[name]]
                value = relax.call_tir(mod.get_global_var(group.names[0]),
                                       relax.Tuple([*operands, constants]), binding.var.ty)
                binding = relax.VarBinding(binding.var, value)
            bindings.append(binding)
        blocks.append(type(block)(bindings))
    mod["main"] = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty, main.is_pure,
                                 main.attrs)
    return mod
