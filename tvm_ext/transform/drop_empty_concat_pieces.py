"""Drop the pieces with no elements from every concatenation (an ONNX Concat with an empty initializer).

An empty piece contributes nothing, yet TVM's concatenate kernel keeps it as a parameter that the generated C
never reads: an unused parameter, an error under -Werror, and a zero-size constant among the weights. A
concatenation whose pieces are all empty is left as it is.
"""

from __future__ import annotations

import tvm
from tvm import relax, tirx

_CONCAT = tvm.ir.Op.get("relax.concat")


def _has_no_elements(expr: relax.Expr) -> bool:
    """Whether `expr` is a tensor whose static shape has a zero dimension."""
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return False
    return any(isinstance(dim, tirx.IntImm) and dim.value == 0 for dim in ty.shape.values)


@relax.expr_functor.mutator
class _EmptyPieceDropper(relax.PyExprMutator):
    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if not call.op.same_as(_CONCAT) or not isinstance(call.args[0], relax.Tuple):
            return call
        pieces = list(call.args[0].fields)
        kept = [piece for piece in pieces if not _has_no_elements(piece)]
        if not kept or len(kept) == len(pieces):
            return call
        return relax.op.concat(kept, axis=call.attrs.axis)


@tvm.transform.module_pass(opt_level=0, name="DropEmptyConcatPieces")
class DropEmptyConcatPieces:
    """Every Relax function of the module with the empty pieces of its concatenations dropped."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        dropper = _EmptyPieceDropper(mod)
        for gvar, func in mod.functions.items():
            if isinstance(func, relax.Function):
                dropper.builder_.update_func(gvar, dropper.visit_expr(func))
        return dropper.builder_.get()
