"""Split `main` (after the passes: a dataflow block of `call_tir` kernels and views) into subgraphs.

A subgraph is a run of consecutive bindings of `main`, numbered 0, 1, ... in binding order. Where runs may
end is decided by two features of the graph, how they are grouped by a third:
- operator support: every kernel the passes produce runs on the profile's one compute unit (a profile names
  one core today), so support never forces a cut; a binding that is not a kernel (a view, an alias, the
  output tuple) joins the subgraph of the kernel before it.
- topology: a cut lies only before a kernel where exactly one value computed earlier (or one model input)
  is still read at or after it: the next subgraph then has one entry, and a branch or a residual join (two
  values crossing the cut) is never split.
- data volume: consecutive pieces between such cuts are kept together while the subgraph's working set
  (the bytes of its kernels' weights plus every activation they read or write) stays at most
  `Profile.subgraph_bytes`; a single piece larger than that stays one subgraph.

`partition_subgraphs(main, profile)` is a pure function of the function and the profile; the pass
`PartitionSubgraphs(profile)` records its result on `main` under BINDING_SUBGRAPHS_ATTR (one id per
binding), which the execution plan copies into each call's `subgraph`.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import tvm
from tvm import relax

from target.profile import Profile
from tvm_ext.layers import BINDING_SUBGRAPHS_ATTR

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def _bytes(ty) -> int:
    """Bytes of a tensor of static shape `ty` (0 for anything else: a tuple, a shape)."""
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return 0
    return math.prod(int(d) for d in ty.shape.values) * tvm.DataType(str(ty.dtype)).bits // 8


KernelOperands = Callable[[relax.Binding], Optional[Sequence[relax.Expr]]]
"""What counts as a kernel: the operands a binding's kernel reads, or None when the binding is no kernel."""


def call_tir_operands(binding: relax.Binding) -> Optional[Sequence[relax.Expr]]:
    """The operands of a `call_tir` binding (a kernel after the passes); None for a view, alias or tuple."""
    value = binding.value
    if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR):
        return list(value.args[1].fields)
    return None


def _working_set(binding, operands: KernelOperands) -> dict:
    """The tensors (Relax vars and constants -> bytes) the kernel of `binding` reads or writes; {} for a view."""
    read = operands(binding)
    if read is None:
        return {}
    touched = {binding.var: _bytes(binding.var.ty)}
    for arg in read:
        touched[arg] = _bytes(arg.ty)
    return touched


def _single_entry_cuts(main: relax.Function, bindings: list, operands: KernelOperands) -> list[int]:
    """The binding indices before which a cut leaves exactly one value crossing it, at kernels only."""
    defined = {param: -1 for param in main.params}
    last_use: dict[relax.Var, int] = {}
    for index, binding in enumerate(bindings):
        defined[binding.var] = index
        for var in relax.analysis.free_vars(binding.value):
            last_use[var] = index
    for var in relax.analysis.free_vars(main.body.body):
        last_use[var] = len(bindings)
    cuts = []
    for index in range(1, len(bindings)):
        crossing = sum(1 for var, used in last_use.items() if defined.get(var, -1) < index <= used)
        if crossing == 1 and operands(bindings[index]) is not None:
            cuts.append(index)
    return cuts


def partition_subgraphs(main: relax.Function, profile: Profile,
                        operands: KernelOperands = call_tir_operands) -> tuple[int, ...]:
    """The subgraph id of each binding of `main`, in binding order (see the module docstring); `operands`
    says which bindings are kernels and what they read (before the passes, tvm_ext.transform.layout_per_subgraph
    counts each operator call as one)."""
    bindings = [b for block in main.body.blocks for b in block.bindings]
    if not bindings:
        return ()
    bounds = [0, *_single_entry_cuts(main, bindings, operands), len(bindings)]
    ids: list[int] = []
    subgraph, working_set = 0, {}
    for start, stop in zip(bounds, bounds[1:]):
        piece: dict = {}
        for binding in bindings[start:stop]:
            piece.update(_working_set(binding, operands))
        merged = working_set | piece
        if working_set and sum(merged.values()) > profile.subgraph_bytes:
            subgraph, merged = subgraph + 1, piece
        working_set = merged
        ids += [subgraph] * (stop - start)
    return tuple(ids)


@tvm.transform.module_pass(opt_level=0, name="PartitionSubgraphs")
class PartitionSubgraphs:
    """`main` with BINDING_SUBGRAPHS_ATTR set to `partition_subgraphs(main, profile)`; nothing else changes."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        mod = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
        ids = partition_subgraphs(mod["main"], self.profile)
        mod["main"] = mod["main"].with_attr(BINDING_SUBGRAPHS_ATTR, list(ids))
        return mod


def binding_subgraphs(main: relax.Function) -> tuple[int, ...]:
    """The subgraph id of each binding of `main` as PartitionSubgraphs recorded it (all 0 when it did not run)."""
    recorded = (main.attrs or {}).get(BINDING_SUBGRAPHS_ATTR)
    if recorded is None:
        return tuple(0 for block in main.body.blocks for _ in block.bindings)
    return tuple(int(i) for i in recorded)
