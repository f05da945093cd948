"""float32 x * y + z rounded once (C99's fmaf) as one TIR call: the bundle's exact C helper in its C
(`packager.fixed_point_c`: one instruction where the core has it), the C library's ``fmaf`` elsewhere (the
host's, when the compiler folds a constant kernel)."""

from __future__ import annotations

from tvm import tirx
from tvm.ir.expr import Expr as PrimExpr

from packager.fixed_point_c import FUSED_MULTIPLY_ADD

from .fixed_point import register_helper_op

FUSED_MULTIPLY_ADD_OP = "tvm_ext.fused_multiply_add"
register_helper_op(FUSED_MULTIPLY_ADD_OP, FUSED_MULTIPLY_ADD,
                   lambda call: tirx.call_pure_extern("float32", "fmaf", *call.args))


def fused_multiply_add(x: PrimExpr, y: PrimExpr, z: PrimExpr) -> PrimExpr:
    """x * y + z of float32 values, rounded to float32 once."""
    return tirx.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x, y, z)
