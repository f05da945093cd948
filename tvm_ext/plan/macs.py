"""Multiply-accumulates of a kernel, counted in its TIR before any schedule, and kept as a PrimFunc attribute.

A MAC is one iteration of a reduction block whose update adds a product to its accumulator
(`acc = acc + a * b`, casts allowed around the product): the convolutions, depthwise convolutions, fully
connected layers, matrix multiplies of a model, and the products a TE extern kernel writes as such blocks
(`tvm_ext.kernels.extern_mac`: an LSTM's gates, an SVDF's feature product). Sums without a product (pooling, softmax, mean) count no
MACs. Padded taps count, as TFLite's own MAC formula (output elements x kernel taps) counts them. A kernel whose
helper calls do its MACs without a reduction block (Helium's pointwise QLinearConv) carries them as
DECLARED_MACS_ATTR, set by its lowering.

The count is taken on the kernel as the Relax pipeline leaves it (TE's blocks under one loop per iteration
variable), before the per-core schedules split, tile or tensorize its loops, and travels with the kernel as
the MACS_ATTR attribute (read by extract_plan into the plan).
"""

from __future__ import annotations

import tvm
from tvm import ir, s_tir, tirx
from tvm.ir.prim import expr as prim

from tvm_ext.layers import DECLARED_MACS_ATTR, MACS_ATTR
from tvm_ext.tir.tir_walk import children

_REDUCTION = tirx.IterVar.CommReduce


def count_macs(func: tirx.PrimFunc) -> int:
    """The MACs one call of `func` performs (see the module's definition; a kernel whose helper calls do them, as
    its lowering declares them: DECLARED_MACS_ATTR); loop extents must be constants."""
    if func.attrs is not None and DECLARED_MACS_ATTR in func.attrs:
        return int(func.attrs[DECLARED_MACS_ATTR])
    return _macs_under(func.body, 1)


def with_mac_count(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` carrying its MAC count as MACS_ATTR (call before scheduling it); a kernel whose lowering set its
    layer's count keeps it (a FULLY_CONNECTED padded to whole tiles: its layer's MACs, not its zero rows')."""
    if func.attrs is not None and MACS_ATTR in func.attrs:
        return func
    return func.with_attr(MACS_ATTR, tvm.tirx.IntImm("int64", count_macs(func)))


def with_mac_counts(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` with every PrimFunc carrying its MAC count (`with_mac_count`)."""
    return tvm.IRModule({gvar: with_mac_count(func) if isinstance(func, tirx.PrimFunc) else func
                         for gvar, func in mod.functions.items()}, attrs=mod.attrs)


def mac_count_of(func: tirx.PrimFunc) -> int:
    """The MAC count `with_mac_count` put on `func`; RuntimeError (our bug) when it has none."""
    if func.attrs is None or MACS_ATTR not in func.attrs:
        raise RuntimeError("a kernel reached the plan without its MAC count (tvm_ext.plan.macs.with_mac_count)")
    return int(func.attrs[MACS_ATTR])


def _macs_under(stmt: tirx.Stmt, trips: int) -> int:
    """MACs of `stmt` run `trips` times."""
    if isinstance(stmt, tirx.For):
        if not isinstance(stmt.extent, prim.IntImm):
            raise ValueError(f"cannot count MACs under a loop of extent {stmt.extent}")
        return _macs_under(stmt.body, trips * int(stmt.extent.value))
    if isinstance(stmt, s_tir.SBlockRealize) and _accumulates_products(stmt.block):
        return trips
    return sum(_macs_under(child, trips) for child in children(stmt) if isinstance(child, tirx.Stmt))


def _accumulates_products(block: s_tir.SBlock) -> bool:
    """Whether `block` reduces over some iteration variable by `out = out + product` (either order)."""
    if not any(iv.iter_type == _REDUCTION for iv in block.iter_vars):
        return False
    body = block.body
    if not isinstance(body, tirx.BufferStore) or not isinstance(body.value, prim.Add):
        return False
    terms = (body.value.a, body.value.b)
    reads_accumulator = [isinstance(t, ir.TensorLoad) and t.source.same_as(body.buffer) for t in terms]
    return any(reads_accumulator[i] and _is_product(terms[1 - i]) for i in range(2))


def _is_product(expr) -> bool:
    """A multiplication, possibly under casts."""
    while isinstance(expr, prim.Cast):
        expr = expr.value
    return isinstance(expr, prim.Mul)
