"""FoldLookupsIntoHelpers: a table lookup after a kernel that one backend helper call computes, stored by that helper.

A kernel written as one call of a backend's helper (a TE extern stage: the DSP cores' few-channel convolution,
`backends.cortex_m.schedules.window1_conv`) is opaque to FuseOps, so the int8 table lookup of an activation after it
(LEAKY_RELU: `tvm_ext.transform.int8.tables.lookup_call`) stays a kernel of its own, one more pass over the tensor
and one more tensor (yolo_tiny_80_int8's 80x80x12 stem on cortex-m4f: 499,694 instructions). Where the helper's op has a
form storing each output looked up in a table (`tvm_ext.tir.helper_calls.register_lookup_form`), this pass replaces
the lookup's call by one call of a copy of the kernel whose helper call is that form, the table its last operand, and
drops the kernel's own call, whose result nothing else reads.

Precondition: LegalizeOps has run (the kernels are call_tir of PrimFuncs). Postcondition: each call of a kernel
marked ELEMENTWISE_LOOKUP_ATTR whose data is the only use of such a helper kernel's result is gone, its var bound to
the folded kernel's call instead, with both bindings' layer records; every other binding is as it was.
"""

from __future__ import annotations

from typing import Optional

import tvm
from tvm import relax, s_tir, tirx
from tvm.ir import TensorLoad
from tvm.ir.expr import Constant

from tvm_ext.layers import ELEMENTWISE_LOOKUP_ATTR, OPERAND_ROLES_ATTR, Layers, bindings_of, with_layers
from tvm_ext.tir.helper_calls import LUT_ENTRIES, lookup_form
from tvm_ext.tir.tir_walk import map_nodes, walk

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_ADDRESS_OF = tvm.ir.Op.get("tirx.address_of")


def _kernel(mod: tvm.IRModule, value: relax.Expr) -> Optional[tuple[tvm.ir.GlobalVar, tirx.PrimFunc]]:
    """(the GlobalVar, the PrimFunc) of a call_tir, else None."""
    if not isinstance(value, relax.Call) or not value.op.same_as(_CALL_TIR):
        return None
    func = mod[value.args[0]]
    return (value.args[0], func) if isinstance(func, tirx.PrimFunc) else None


def _helper_call(func: tirx.PrimFunc) -> Optional[tvm.ir.Call]:
    """The one helper call of a kernel whose body is that call (around its own scratch) and which has a form with a
    lookup table, writing the kernel's one output from its element 0 (its first argument); else None."""
    calls = [node for node in walk(func.body)
             if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op)]
    helpers = [call for call in calls if lookup_form(call.op.name) is not None]
    if len(helpers) != 1 or any(isinstance(node, (tirx.For, tirx.BufferStore)) for node in walk(func.body)):
        return None
    out = func.params[-1]
    first = helpers[0].args[0]
    if not (isinstance(first, tvm.ir.Call) and first.op.same_as(_ADDRESS_OF)
            and isinstance(first.args[0], TensorLoad) and first.args[0].source.same_as(out)
            and all(isinstance(i, tirx.IntImm) and i.value == 0 for i in first.args[0].indices)):
        return None
    return helpers[0]


def _is_table(expr: relax.Expr) -> bool:
    """Whether `expr` is a constant table of LUT_ENTRIES int8 entries."""
    ty = expr.ty
    return (isinstance(expr, Constant) and isinstance(ty, relax.TensorType) and str(ty.dtype) == "int8"
            and [int(d) for d in ty.shape.values] == [LUT_ENTRIES])


def with_lookup_table(func: tirx.PrimFunc, call: tvm.ir.Call) -> tirx.PrimFunc:
    """`func` (one helper call, `_helper_call`) with a table parameter before its output, its call the helper's form
    storing each output looked up in that table (the table's address its last argument)."""
    index = str(func.params[0].shape[0].ty.dtype)
    table = tirx.decl_buffer((tirx.IntImm(index, LUT_ENTRIES),), "int8", name="table")
    address = tirx.address_of(tirx.BufferLoad(table, [tirx.const(0, index)]))
    folded = tirx.call_intrin("int32", lookup_form(call.op.name), *call.args, address)

    def replace(node):
        # blocks, which map_nodes does not rebuild, rebuilt here around the call
        if isinstance(node, s_tir.SBlockRealize) and any(c.same_as(call) for c in walk(node.block.body)):
            return s_tir.SBlockRealize(node.iter_values, node.predicate, replace(node.block))
        if isinstance(node, s_tir.SBlock) and any(c.same_as(call) for c in walk(node.body)):
            return s_tir.SBlock(node.iter_vars, node.reads, node.writes, node.name_hint, map_nodes(node.body, replace),
                                node.init, node.alloc_buffers, node.match_buffers, node.annotations)
        return folded if isinstance(node, tvm.ir.Call) and node.same_as(call) else None

    body = map_nodes(func.body, replace)
    params = [*func.params[:-1], table, func.params[-1]]
    attrs = dict(func.attrs) if func.attrs is not None else {}
    if OPERAND_ROLES_ATTR in attrs:
        attrs[OPERAND_ROLES_ATTR] = [*attrs[OPERAND_ROLES_ATTR], "table"]
    return tirx.PrimFunc(params, body, func.ret_type, tvm.ir.make_node("ir.DictAttrs", **attrs))


@tvm.transform.module_pass(opt_level=0, name="FoldLookupsIntoHelpers")
class FoldLookupsIntoHelpers:
    """`main` with each table lookup after a helper kernel whose helper has a lookup form folded into that kernel
    (module docstring)."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        bindings = bindings_of(main)
        uses: dict[relax.Var, int] = {}

        def count(expr: relax.Expr) -> None:
            if isinstance(expr, relax.Var):
                uses[expr] = uses.get(expr, 0) + 1

        for binding in bindings:
            relax.analysis.post_order_visit(binding.value, count)
        relax.analysis.post_order_visit(main.body.body, count)
        value_of = {binding.var: binding.value for binding in bindings}
        builder = relax.BlockBuilder(mod.clone())
        folded_funcs: dict[tvm.ir.GlobalVar, tvm.ir.GlobalVar] = {}
        replaced: dict[relax.Var, relax.Expr] = {}
        dropped: dict[relax.Var, relax.Var] = {}  # a folded kernel's result -> the lookup's, which it joins
        for binding in bindings:
            lookup = _kernel(mod, binding.value)
            if lookup is None or lookup[1].attrs is None or ELEMENTWISE_LOOKUP_ATTR not in lookup[1].attrs:
                continue
            data, table = binding.value.args[1].fields
            producer = _kernel(mod, value_of.get(data)) if isinstance(data, relax.Var) else None
            if producer is None or uses.get(data) != 1 or not _is_table(table):
                continue
            call = _helper_call(producer[1])
            if call is None:
                continue
            gvar = producer[0]
            if gvar not in folded_funcs:
                folded_funcs[gvar] = builder.add_func(with_lookup_table(producer[1], call),
                                                      f"{gvar.name_hint}_{lookup[0].name_hint}")
            kernel_call = value_of[data]
            replaced[binding.var] = builder.normalize(relax.call_tir(  # its type inferred: FuseOps reads it
                folded_funcs[gvar], relax.Tuple([*kernel_call.args[1].fields, table]), binding.value.ty_args[0]))
            dropped[data] = binding.var
        if not replaced:
            return mod
        blocks = []
        for block in main.body.blocks:
            kept = [relax.VarBinding(b.var, replaced.get(b.var, b.value)) for b in block.bindings
                    if b.var not in dropped]
            blocks.append(relax.DataflowBlock(kept) if isinstance(block, relax.DataflowBlock)
                          else relax.BindingBlock(kept))
        folded = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty, main.is_pure,
                                main.attrs, main.span)
        result = builder.get().clone()  # not the builder's own module, which its de-duplication map describes
        result["main"] = _with_records_moved(main, folded, dropped)
        return relax.transform.Normalize()(result)  # the rebuilt body's types inferred


def _with_records_moved(before: relax.Function, after: relax.Function,
                        dropped: dict[relax.Var, relax.Var]) -> relax.Function:
    """`after` (`before` without the bindings `dropped` names, each folded into the binding of the var it maps to)
    carrying `before`'s layer records, a dropped binding's records added to the binding it was folded into."""
    layers = Layers.of(before)
    if not layers.records:
        return after
    old = bindings_of(before)
    records = {b.var: set(layers.bindings[i]) if i < len(layers.bindings) else set() for i, b in enumerate(old)}
    for var, into in dropped.items():
        records[into] |= records[var]
    return with_layers(after, layers.records, [records[b.var] for b in bindings_of(after)], layers.constants)
