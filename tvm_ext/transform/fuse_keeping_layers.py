"""FuseOpsKeepingLayers: TVM's FuseOps, carrying which model layers each binding of `main` implements.

Precondition: LegalizeOps and AnnotateTIROpPattern have run; `main` carries layer records (tvm_ext.layers).
Postcondition: as FuseOps, and each binding of `main` names the records of every binding fused into it, in
model order (`tvm_ext.layers.carry_layers`: the call of a fused group stands for the binding its function's
result matches, also where only other fused groups read it, and the bindings it fused away are found through the
dataflow from that result, never by position). A kernel marked
ELEMENTWISE_LOOKUP_ATTR (a table lookup) is fused as an elementwise operator, one marked BROADCAST_LOOKUP_ATTR (an
ADD's tabled rescales) as a broadcast one, one marked UNFUSED_ATTR not at all, and neither is such a kernel where a
backend wrote it as an extern stage (its operands read through their addresses: cortex-m55's tabled ADD). FuseTIR rewrites each call of
a fused function into one call_tir in place, so the records still hold after it.
"""

from __future__ import annotations

import tvm
from tvm import relax, s_tir, tirx

from tvm_ext.layers import (BROADCAST_LOOKUP_ATTR, ELEMENTWISE_LOOKUP_ATTR, OPAQUE_PATTERN, UNFUSED_ATTR,
                            keeping_layers)
from tvm_ext.tir.tir_walk import walk


def FuseOpsKeepingLayers() -> tvm.transform.Pass:  # noqa: N802 - a pass constructor, named like TVM's
    """FuseOps that carries main's layer records (see the module docstring), table lookups taken as elementwise,
    kernels marked unfused left alone."""
    return tvm.transform.Sequential([_pinned_op_patterns, keeping_layers(relax.transform.FuseOps())],
                                    name="FuseOpsKeepingLayers")


_ELEMENTWISE = 0  # TVM's OpPatternKind kElemWise
_BROADCAST = 1  # kBroadcast


@tvm.transform.module_pass(opt_level=0, name="PinnedOpPatterns")
def _pinned_op_patterns(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
    """`mod` with each PrimFunc marked ELEMENTWISE_LOOKUP_ATTR given the op pattern kElemWise, each marked
    BROADCAST_LOOKUP_ATTR kBroadcast, and each marked
    UNFUSED_ATTR kOpaque (AnnotateTIROpPattern gives a concatenation kInjective). AnnotateTIROpPattern
    calls a load at a position read from data (a table lookup: LEAKY_RELU, HARD_SWISH, LOGISTIC of int8) opaque,
    and recomputes a kElemWise set before it; so FuseOps would never fuse the lookup after the layer computing
    its input (a convolution's epilogue). Per element of that input it is elementwise: the table is a constant
    operand, read as a whole. An int8 ADD's tabled rescale is the same, and keeps the pattern of its untabled
    kernel (kBroadcast: fused into a chain of elementwise kernels, not into a convolution's epilogue)."""
    pinned = {ELEMENTWISE_LOOKUP_ATTR: _ELEMENTWISE, BROADCAST_LOOKUP_ATTR: _BROADCAST, UNFUSED_ATTR: OPAQUE_PATTERN}
    updated = {gvar: func.with_attr("op_pattern", OPAQUE_PATTERN if _is_extern_stage(func) else next(
                   pattern for attr, pattern in reversed(pinned.items()) if attr in func.attrs))
               for gvar, func in mod.functions.items()
               if isinstance(func, tirx.PrimFunc) and func.attrs is not None
               and any(attr in func.attrs for attr in pinned)}
    marked = mod.clone()  # the caller's module stays as it was
    for gvar, func in updated.items():
        marked.update_func(gvar, func)
    return marked


def _is_extern_stage(func: tirx.PrimFunc) -> bool:
    """Whether ``func`` holds a TE extern stage: a block other than the root that declares no writes (its
    statements reach its buffers through addresses). Fused after a producer, FuseTIR would inline the producer's
    value where the stage takes an address (se_resnet_odd_27x45_int8 on cortex-m55: an SE block's MUL, then the
    tabled ADD: "Inconsistent buffers", then "address_of() expects ... a TensorLoad")."""
    return any(isinstance(node, s_tir.SBlock) and node.name_hint != "root" and not node.writes
               for node in walk(func.body))
