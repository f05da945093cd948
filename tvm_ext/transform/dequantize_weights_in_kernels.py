"""DequantizeWeightsInKernels: a float Conv, MatMul or Gemm of a quantized ONNX model keeps its int8 weights.

Why: onnxruntime keeps some weighted operators of a QDQ model float (a Conv whose bias scale is not x_scale *
w_scale: tvm_ext/frontend/onnx_ops/qdq_fusion.py) and feeds them DequantizeLinear of int8 weights. Folded at
compile time, those weights would be float32 in flash, four times their int8 size (torchvision SqueezeNet 1.1:
2.7 MB, over lowpower's 2 MiB). Here each such operator becomes one kernel that reads the int8 weights, their
scales and zero points and dequantizes each weight where it multiplies it, as DequantizeLinear computes it
(one float32 rounding of ``(q - zero_point) * scale``, per channel): the same floats as the folded weights, so
the same results.

Precondition: LowerQuantizedToInteger has run (each DequantizeLinear is a ``call_tir`` of
`tvm_ext.kernels.onnx_qlinear.dequantize_linear`), no folding yet. Postcondition: each operator of
WEIGHTED_OPERATORS whose weight (its second operand) is such a call on constants alone is a ``call_tir`` of
one PrimFunc, TVM's legalization of the operator with the dequantize as its first block (the scheduler inlines
it into the multiply-accumulate: tvm_ext.schedule.kernel_schedule); the dequantizes, now unused, are removed.
Models without ONNX_QUANTIZATION_ATTR pass unchanged.
"""

from __future__ import annotations

import tvm
from tvm import relax, s_tir, tirx
from tvm.ir import Op
from tvm.ir.expr import Constant

from tvm_ext.layers import ONNX_QUANTIZATION_ATTR, bindings_of
from tvm_ext.tir.tir_walk import walk

# The operators whose second operand is a weight that MLAS's float kernels multiply: onnxruntime's float Conv,
# MatMul and Gemm (imported as matmul, its transposed weight a permute_dims that folds: not taken here).
WEIGHTED_OPERATORS = ("relax.nn.conv1d", "relax.nn.conv2d", "relax.matmul")
DEQUANTIZE_KERNEL = "dequantize_linear"  # the compute name of tvm_ext.kernels.onnx_qlinear.dequantize_linear
_CALL_TIR = Op.get("relax.call_tir")


def _constant_dequantize(value: relax.Expr, mod: tvm.IRModule) -> relax.Call | None:
    """`value` when it is a ``call_tir`` of the DequantizeLinear kernel on constants alone, else None."""
    if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
        return None
    args = value.args[1].fields
    if not all(isinstance(arg, Constant) for arg in args):
        return None
    func = mod[value.args[0]]
    blocks = [node.name_hint for node in walk(func.body) if isinstance(node, s_tir.SBlock) and node.name_hint != "root"]
    return value if blocks == [DEQUANTIZE_KERNEL] else None


def _fused_function(call: relax.Call, dequantize: relax.Call, mod: tvm.IRModule) -> relax.Function:
    """A primitive Relax function of `call`'s other operands and the dequantize's constants that dequantizes the
    weight (a call of the dequantize's kernel, the same GlobalVar as in `mod`) and computes `call` on it."""
    constants = list(dequantize.args[1].fields)
    data = [relax.Var(f"operand{i}", arg.ty) for i, arg in enumerate(call.args) if i != 1]
    quantized = [relax.Var(f"quantized{i}", c.ty) for i, c in enumerate(constants)]
    builder = relax.BlockBuilder(tvm.IRModule({dequantize.args[0]: mod[dequantize.args[0]]}))
    with builder.function("fused", data + quantized, {"Primitive": True}, private=True):
        with builder.dataflow():
            weight = builder.emit(relax.call_tir(dequantize.args[0], quantized, dequantize.ty))
            operands = data[:1] + [weight] + data[1:]
            output = builder.emit_output(relax.Call(call.op, operands, call.attrs, call.ty_args))
        builder.emit_func_output(output)
    return builder.get()["fused"]


def _fused_kernels(pairs: list[tuple[relax.Call, relax.Call]], mod: tvm.IRModule) -> list[tirx.PrimFunc]:
    """For each (call, dequantize) of `pairs` one PrimFunc computing `call` (its weight the result of
    `dequantize`) from its other operands and the dequantize's: TVM's legalization of `call` and the dequantize
    kernel, fused by FuseTIR. One scratch module holds them all, legalized and fused at once."""
    builder = relax.BlockBuilder(tvm.IRModule({dequantize.args[0]: mod[dequantize.args[0]] for _, dequantize in pairs}))
    calls = []
    for call, dequantize in pairs:
        fused = _fused_function(call, dequantize, mod)
        calls.append((builder.add_func(fused, "fused"), [relax.Var(v.name, v.ty) for v in fused.params]))
    with builder.function("main", [param for _, params in calls for param in params]):
        with builder.dataflow():
            outputs = [builder.emit(relax.Call(fused, params)) for fused, params in calls]
            output = builder.emit_output(relax.Tuple(outputs))
        builder.emit_func_output(output)
    scratch = relax.transform.FuseTIR()(relax.transform.LegalizeOps()(builder.get()))
    kernel_calls = [b.value for b in bindings_of(scratch["main"])
                    if isinstance(b.value, relax.Call) and b.value.op.same_as(_CALL_TIR)]
    return [scratch[kernel_call.args[0]] for kernel_call in kernel_calls]


def _weighted_calls(main: relax.Function, mod: tvm.IRModule) -> list[tuple[relax.Call, relax.Call]]:
    """Each call in `main` of an operator of WEIGHTED_OPERATORS whose weight is a constant dequantize, with that
    dequantize (_constant_dequantize)."""
    values = {b.var: b.value for b in bindings_of(main)}
    pairs = []
    for value in values.values():
        if (isinstance(value, relax.Call) and isinstance(value.op, Op) and value.op.name in WEIGHTED_OPERATORS
                and isinstance(value.args[1], relax.Var)):
            dequantize = _constant_dequantize(values.get(value.args[1]), mod)
            if dequantize is not None:
                pairs.append((value, dequantize))
    return pairs


@relax.expr_functor.mutator
class _WeightDequantizer(relax.PyExprMutator):
    """main with each weighted operator on a constant dequantize one kernel call (the module docstring)."""

    def __init__(self, mod: tvm.IRModule, pairs: list[tuple[relax.Call, relax.Call]]) -> None:
        super().__init__(mod)
        self.pairs = {call: dequantize for call, dequantize in pairs}
        self.kernels = dict(zip((call for call, _ in pairs), _fused_kernels(pairs, mod))) if pairs else {}

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        kernel = self.kernels.get(call)
        if kernel is None:
            return super().visit_call_(call)
        dequantize = self.pairs[call]
        name = self.builder_.add_func(kernel, call.op.name.split(".")[-1])
        operands = [self.visit_expr(arg) for i, arg in enumerate(call.args) if i != 1]
        return relax.call_tir(name, operands + list(dequantize.args[1].fields), call.ty)


@tvm.transform.module_pass(opt_level=0, name="DequantizeWeightsInKernels")
class DequantizeWeightsInKernels:
    """See the module docstring."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        if ONNX_QUANTIZATION_ATTR not in (main.attrs or {}):
            return mod
        pairs = _weighted_calls(main, mod)
        if not pairs:
            return mod
        rewriter = _WeightDequantizer(mod, pairs)
        rewritten = rewriter.visit_expr(main)
        result = rewriter.builder_.get()
        result["main"] = rewritten
        # The dequantizes now unused: FoldConstant would compute each on the host (SqueezeNet 1.1: 3.5 s of CPU).
        return relax.transform.DeadCodeElimination()(result)
