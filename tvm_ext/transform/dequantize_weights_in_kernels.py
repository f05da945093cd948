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
it into the multiply-accumulate: tvm_ext.schedule.kernel_schedule); the dequantize, now unused, is left to
dead-code elimination. Models without ONNX_QUANTIZATION_ATTR pass unchanged.
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


def _fused_kernel(call: relax.Call, dequantize: relax.Call, mod: tvm.IRModule) -> tirx.PrimFunc:
    """One PrimFunc computing `call` (its weight the result of `dequantize`) from its other operands and the
    dequantize's: TVM's legalization of `call` and the dequantize kernel, fused by FuseTIR."""
    constants = list(dequantize.args[1].fields)
    data = [relax.Var(f"operand{i}", arg.ty) for i, arg in enumerate(call.args) if i != 1]
    quantized = [relax.Var(f"quantized{i}", c.ty) for i, c in enumerate(constants)]
    builder = relax.BlockBuilder(tvm.IRModule({dequantize.args[0]: mod[dequantize.args[0]]}))
    fused_params = data + quantized
    with builder.function("fused", fused_params, {"Primitive": True}, private=True):
        with builder.dataflow():
            weight = builder.emit(relax.call_tir(dequantize.args[0], quantized, dequantize.ty))
            operands = data[:1] + [weight] + data[1:]
            output = builder.emit_output(relax.Call(call.op, operands, call.attrs, call.ty_args))
        builder.emit_func_output(output)
    fused = builder.get().get_global_var("fused")
    main_params = [relax.Var(v.name, v.ty) for v in fused_params]
    with builder.function("main", main_params):
        with builder.dataflow():
            output = builder.emit_output(relax.Call(fused, main_params))
        builder.emit_func_output(output)
    scratch = relax.transform.FuseTIR()(relax.transform.LegalizeOps()(builder.get()))
    kernel_call = next(b.value for b in bindings_of(scratch["main"]) if isinstance(b.value, relax.Call))
    return scratch[kernel_call.args[0]]


@relax.expr_functor.mutator
class _WeightDequantizer(relax.PyExprMutator):
    """main with each weighted operator on a constant dequantize one kernel call (the module docstring)."""

    def __init__(self, mod: tvm.IRModule, main: relax.Function) -> None:
        super().__init__(mod)
        self.mod = mod
        self.values = {b.var: b.value for b in bindings_of(main)}

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if not (isinstance(call.op, Op) and call.op.name in WEIGHTED_OPERATORS and isinstance(call.args[1], relax.Var)):
            return call
        dequantize = _constant_dequantize(self.values.get(call.args[1]), self.mod)
        if dequantize is None:
            return call
        kernel = self.builder_.add_func(_fused_kernel(call, dequantize, self.mod), call.op.name.split(".")[-1])
        operands = [arg for i, arg in enumerate(call.args) if i != 1] + list(dequantize.args[1].fields)
        return relax.call_tir(kernel, operands, call.ty)


@tvm.transform.module_pass(opt_level=0, name="DequantizeWeightsInKernels")
class DequantizeWeightsInKernels:
    """See the module docstring."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        if ONNX_QUANTIZATION_ATTR not in (main.attrs or {}):
            return mod
        rewriter = _WeightDequantizer(mod, main)
        rewritten = rewriter.visit_expr(main)
        result = rewriter.builder_.get()
        result["main"] = rewritten
        return result
