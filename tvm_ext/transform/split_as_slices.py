"""A split as one strided slice per piece: every ``relax.split`` whose pieces are read only through
``TupleGetItem`` becomes one ``relax.strided_slice`` per piece, each read where its ``TupleGetItem`` was.

TVM legalizes a split into one kernel returning a tuple of tensors, which no kernel of ours does (the plan
refuses "a non-tensor result"): a float ONNX Split (ShuffleNetV2's channel split as PyTorch's exporter writes
it) or one that onnxruntime runs on the quantized tensor could not compile. A slice per piece is the same
computation with one tensor each. A split read in another way (the whole tuple) is left as it is.
"""

from __future__ import annotations

import tvm
from tvm import relax, tirx

_SPLIT = tvm.ir.Op.get("relax.split")


def _boundaries(call: relax.Call) -> list[int] | None:
    """Where each piece of the split ``call`` starts along its axis, then the axis' extent; None when the shape
    is not static."""
    ty = call.args[0].ty
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return None
    dims = ty.shape.values
    axis = int(call.attrs.axis) % len(dims)
    if not isinstance(dims[axis], tirx.IntImm):
        return None
    extent = int(dims[axis].value)
    sections = call.attrs.indices_or_sections
    if isinstance(sections, tirx.IntImm) or isinstance(sections, int):
        count = int(sections)
        chunk = -(-extent // count)
        return [min(i * chunk, extent) for i in range(count)] + [extent]
    return [0, *(min(int(i), extent) for i in sections), extent]


@relax.expr_functor.mutator
class _SplitRewriter(relax.PyExprMutator):
    def __init__(self, mod: tvm.IRModule, splits: set[relax.Var]) -> None:
        super().__init__(mod)
        self.splits = splits  # the split results read only through TupleGetItem
        self.pieces: dict[relax.Var, list[relax.Var]] = {}

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        value = binding.value
        if binding.var in self.splits:
            data = self.visit_expr(value.args[0])
            bounds = _boundaries(value)
            axis = int(value.attrs.axis) % len(value.args[0].ty.shape.values)
            self.pieces[binding.var] = [self.builder_.emit(relax.op.strided_slice(data, [axis], [start], [end]))
                                        for start, end in zip(bounds, bounds[1:])]
            return
        if isinstance(value, relax.TupleGetItem) and value.tuple_value in self.pieces:
            self.set_var_remap(binding.var, self.pieces[value.tuple_value][value.index])
            return
        super().visit_var_binding_(binding)


def _rewritable_splits(func: relax.Function) -> set[relax.Var]:
    """The vars bound to a split with static boundaries that only TupleGetItem bindings read."""
    splits, other_reads = set(), set()
    bindings = [b for block in func.body.blocks for b in block.bindings]
    for binding in bindings:
        value = binding.value
        if isinstance(value, relax.Call) and value.op.same_as(_SPLIT) and _boundaries(value) is not None:
            splits.add(binding.var)

    def count(expr: relax.Expr) -> None:
        if isinstance(expr, relax.Var):
            other_reads.add(expr)

    for binding in bindings:
        value = binding.value
        if isinstance(value, relax.TupleGetItem) and value.tuple_value in splits:
            continue
        relax.analysis.post_order_visit(value, count)
    relax.analysis.post_order_visit(func.body.body, count)
    return splits - other_reads


@tvm.transform.module_pass(opt_level=0, name="SplitAsSlices")
class SplitAsSlices:
    """Every Relax function of the module with its splits as strided slices (see the module docstring)."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        for gvar, func in list(mod.functions.items()):
            if isinstance(func, relax.Function):
                splits = _rewritable_splits(func)
                if splits:
                    rewriter = _SplitRewriter(mod, splits)
                    rewriter.builder_.update_func(gvar, rewriter.visit_expr(func))
                    mod = rewriter.builder_.get()
        return mod
