"""FuseOpsKeepingLayers: TVM's FuseOps, carrying which model layers each binding of `main` implements.

Precondition: LegalizeOps and AnnotateTIROpPattern have run; `main` carries layer records (tvm_ext.layers).
Postcondition: as FuseOps, and each binding of `main` names the records of every binding fused into it, in
model order (`tvm_ext.layers.carry_layers`: FuseOps keeps the var of a group's result, and the bindings it
fused away are found through the dataflow from that result, never by position). FuseTIR rewrites each call of
a fused function into one call_tir in place, so the records still hold after it.
"""

from __future__ import annotations

import tvm
from tvm import relax

from tvm_ext.layers import keeping_layers


def FuseOpsKeepingLayers() -> tvm.transform.Pass:  # noqa: N802 - a pass constructor, named like TVM's
    """FuseOps that carries main's layer records (see the module docstring)."""
    return keeping_layers(relax.transform.FuseOps())
