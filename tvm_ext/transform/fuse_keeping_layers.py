"""FuseOpsKeepingLayers: TVM's FuseOps, remembering which model layers each fused function implements.

Precondition: LegalizeOps and AnnotateTIROpPattern have run; `main` binds each model layer's result to a var
named `layer<N>` (tvm_ext.frontend) and carries the attribute `tvm_ext.layers` (the layer names).
Postcondition: as FuseOps, and `main` carries the attribute `tvm_ext.binding_layers`: for each binding of
`main`, in order, the names of the model layers it implements, in model order. FuseTIR rewrites each call
of a fused function into one call_tir in place, so the list still holds after it.

How: before fusion every binding of `main` is given a layer (a `layer<N>` var is layer N; other vars belong
to the next `layer<N>` var, since a frontend binds an operator's inner values before its result). FuseOps
keeps the vars of the bindings it does not fuse; a call of a fused function of K bindings replaces the next
K pre-fusion bindings not yet accounted for (FuseOps groups runs of consecutive bindings and emits the
groups in order; it may share one function between identical groups, so inner vars cannot be used).
"""

from __future__ import annotations

import re

import tvm
from tvm import relax

from tvm_ext.frontend import LAYER_VAR_PREFIX

_LAYER_VAR = re.compile(rf"{LAYER_VAR_PREFIX}(\d+)$")


def _binding_layers(main: relax.Function) -> dict[relax.Var, int]:
    """The layer index of every binding var of `main`, by the rule in the module docstring."""
    layer_of: dict[relax.Var, int] = {}
    pending: list[relax.Var] = []
    last = 0
    for block in main.body.blocks:
        for binding in block.bindings:
            match = _LAYER_VAR.match(binding.var.name)
            if match is None:
                pending.append(binding.var)
                continue
            last = int(match.group(1))
            for var in pending + [binding.var]:
                layer_of[var] = last
            pending = []
    for var in pending:
        layer_of[var] = last
    return layer_of


@tvm.transform.module_pass(opt_level=0, name="FuseOpsKeepingLayers")
class FuseOpsKeepingLayers:
    """FuseOps that records `tvm_ext.binding_layers` on `main` (see the module docstring)."""

    def transform_module(self, mod: tvm.IRModule, ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        names = [str(n) for n in (main.attrs or {}).get("tvm_ext.layers", [])]
        layer_of = _binding_layers(main)
        fused = relax.transform.FuseOps()(mod)
        pending = list(layer_of)  # pre-fusion binding vars not yet attributed, in binding order
        binding_layers = []
        for block in fused["main"].body.blocks:
            for binding in block.bindings:
                if binding.var in layer_of:
                    taken = [binding.var]
                else:
                    taken = pending[: _fused_size(fused, binding.value)]
                pending = [var for var in pending if not any(var.same_as(t) for t in taken)]
                indices = sorted({layer_of[var] for var in taken})
                binding_layers.append([names[i] for i in indices if i < len(names)])
        fused["main"] = fused["main"].with_attr("tvm_ext.binding_layers", binding_layers)
        return fused


def _fused_size(mod: tvm.IRModule, value: relax.Expr) -> int:
    """How many pre-fusion bindings a binding of fused `main` replaces."""
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
        func = mod[value.op]
        if isinstance(func, relax.Function):
            return sum(len(block.bindings) for block in func.body.blocks)
    return 1
