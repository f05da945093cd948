"""A float model's main in TFLite's form, the one the quantizer reads, whatever framework wrote it.

TFLite's quantized kernels, and so our integer pipeline, are channels-last: an int8 CONV_2D reads NHWC data
and a HWIO (depthwise: HWOI) weight, and an int8 FULLY_CONNECTED stores its weight (out, in), which the
frontend makes (in, out) with a `permute_dims`. A TFLite float model arrives in that form. An ONNX one
(PyTorch's export among them) arrives channels-first, NCHW data and OIHW weights, and a MatMul's or a
Gemm's (transB = 0) weight arrives (in, out) as a plain constant. `quantizable_form(mod, profile)` rewrites
main into the TFLite form, numerically the same function:
- a model with a channels-first convolution or pooling is converted to NHWC by the float pipeline's own
  layout pass (ConvertLayoutPerSubgraph, every subgraph forced to NHWC), and the weights it permutes are
  folded into constants; the `permute_dims` left at the model's borders and before a flatten's reshape then
  run on the quantized tensors (data movement keeps a quantization);
- an inference BatchNormalization of a convolution's result is folded into its weight and bias;
- a matmul of a 2-D constant weight W reads it as `permute_dims(W^T)`, so that it is quantized per output
  channel and stored as TFLite stores it; a depthwise convolution (groups = input channels), which the layout
  pass leaves HWIO (KH, KW, 1, C*M), reads the same values as HWOI (KH, KW, C*M, 1), as TFLite's
  DEPTHWISE_CONV_2D is imported;
- a per-channel bias add or a ReLU or clip that alone reads a convolution's or matmul's result (an ONNX
  Relu node after a Conv, an Add after a MatMul) joins that MAC's layer, as TFLite's converter fuses them:
  one requantization, clamped, instead of more int8 passes over the tensor.
A model already in that form is returned unchanged (the same object).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.dpl import TupleGetItemPattern, is_const, is_op, rewrite_call, wildcard

from target.profile import Profile
from tvm_ext.layers import Layers, bindings_of, keeping_layers, vars_read, with_layers
from tvm_ext.transform import ConvertLayoutPerSubgraph
from tvm_ext.transform.layout_per_subgraph import choose_layouts

_MATMUL = tvm.ir.Op.get("relax.matmul")
_CONV2D = tvm.ir.Op.get("relax.nn.conv2d")
_BATCH_NORM = tvm.ir.Op.get("relax.nn.batch_norm")
_ACTIVATIONS = frozenset({"relax.nn.relu", "relax.clip"})
_CHANNELS_FIRST = "NCHW"
_LAYOUT_ATTR = {"relax.nn.conv2d": "data_layout", "relax.nn.max_pool2d": "layout", "relax.nn.avg_pool2d": "layout"}


def quantizable_form(mod: tvm.IRModule, profile: Profile) -> tvm.IRModule:
    """`mod` with main channels-last and its weights stored as TFLite stores them (see the module docstring);
    `profile`'s subgraphs are the units the layout pass converts."""
    if _channels_first(mod["main"]):
        converted = ConvertLayoutPerSubgraph(choose_layouts(mod["main"], profile, "NHWC"))(mod)
        mod = keeping_layers(relax.transform.FoldConstant())(converted)
    if any(isinstance(b.value, relax.Call) and b.value.op.same_as(_BATCH_NORM) for b in bindings_of(mod["main"])):
        mod = keeping_layers(_FoldedBatchNorms())(mod)
    if any(_reads_weight_unlike_tflite(b.value) for b in bindings_of(mod["main"])):
        mod = keeping_layers(_TFLiteWeights())(mod)
    fused = _with_fused_epilogues(mod["main"])
    return mod if fused is None else _with_main(mod, fused)


def _with_main(mod: tvm.IRModule, main: relax.Function) -> tvm.IRModule:
    """`mod` with `main` in place of its main function."""
    return tvm.IRModule({**dict(mod.functions.items()), mod.get_global_var("main"): main})


def _with_fused_epilogues(main: relax.Function) -> relax.Function | None:
    """`main` with each bias add and activation that alone reads a convolution's or matmul's result in that
    MAC's layer, as TFLite fuses them (FULLY_CONNECTED's bias, a fused ReLU: one requantization, clamped,
    instead of more int8 passes); their bindings then carry the records of every layer joined. None when
    none is a layer of its own."""
    bindings = bindings_of(main)
    layers = Layers.of(main)
    layer_of = [tuple(layers.bindings[i]) if i < len(layers.bindings) else () for i in range(len(bindings))]
    position_of = {binding.var: position for position, binding in enumerate(bindings)}
    readers = Counter(arg for binding in bindings for arg in vars_read(binding.value))
    readers.update([main.body.body])
    value_of = {binding.var: binding.value for binding in bindings}
    fused = False
    for position, binding in enumerate(bindings):
        source = _epilogue_operand(binding.value, value_of)
        if source is None or readers[source] != 1:
            continue
        mac_layer, epilogue_layer = layer_of[position_of[source]], layer_of[position]
        if not mac_layer or mac_layer == epilogue_layer:
            continue
        joined = tuple(sorted({*mac_layer, *epilogue_layer}))
        layer_of = [joined if layer in (mac_layer, epilogue_layer) else layer for layer in layer_of]
        fused = True
    return with_layers(main, layers.records, layer_of, layers.constants) if fused else None


def _epilogue_operand(value: relax.Expr, value_of: dict[relax.Var, relax.Expr]) -> relax.Var | None:
    """The MAC result `value` finishes as TFLite fuses it, or None: the conv2d or matmul result a per-channel
    constant bias is added to, or the result (biased or not) a ReLU or clip reads."""
    if not isinstance(value, relax.Call) or not value.args or value.args[0] not in value_of:
        return None
    source = value.args[0]
    producer = value_of[source]
    if value.op.name == "relax.add":
        bias = value.args[1]
        channels = int(producer.ty.shape[-1]) if _is_mac(producer) else None
        return source if isinstance(bias, Constant) and math.prod(bias.value.shape) == channels else None
    if value.op.name in _ACTIVATIONS:
        biased = isinstance(producer, relax.Call) and _epilogue_operand(producer, value_of) is not None \
            and producer.op.name == "relax.add"
        return source if _is_mac(producer) or biased else None
    return None


def _is_mac(value: relax.Expr) -> bool:
    return isinstance(value, relax.Call) and (value.op.same_as(_CONV2D) or value.op.same_as(_MATMUL))


@tvm.transform.module_pass(opt_level=0, name="FoldedBatchNorms")
class _FoldedBatchNorms:
    """main with each inference batch_norm of an NHWC conv2d's result (with or without its constant bias)
    folded into the convolution's HWIO weight and bias, as TFLite's converter folds it (TVM's own
    FoldBatchnormToConv2D takes an OIHW convolution without bias only)."""

    def __init__(self) -> None:
        self.weight, self.bias = is_const(), is_const()
        self.conv = is_op("relax.nn.conv2d")(wildcard(), self.weight)
        self.biased = is_op("relax.add")(self.conv, self.bias)
        self.statistics = [is_const() for _ in range(4)]  # gamma, beta, moving mean, moving variance
        self.batch_norm = is_op("relax.nn.batch_norm")(self.biased | self.conv, *self.statistics)
        self.pattern = TupleGetItemPattern(self.batch_norm, 0)

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        return _with_main(mod, rewrite_call(self.pattern, self._folded, mod["main"]))

    def _folded(self, expr: relax.Expr, matches: dict) -> relax.Expr:
        conv, norm = matches[self.conv], matches[self.batch_norm]
        if (str(conv.attrs.kernel_layout) != "HWIO" or str(conv.attrs.out_layout) != "NHWC"
                or int(norm.attrs.axis) not in (3, -1)):
            return expr
        gamma, beta, mean, variance = (matches[p].value.numpy().astype(np.float64) for p in self.statistics)
        gamma = gamma if bool(norm.attrs.scale) else np.ones_like(gamma)
        beta = beta if bool(norm.attrs.center) else np.zeros_like(beta)
        scale = gamma / np.sqrt(variance + float(norm.attrs.epsilon))
        weight = (matches[self.weight].value.numpy() * scale).astype(np.float32)
        bias = matches[self.bias].value.numpy().reshape(-1) if self.biased in matches else 0.0
        shift = ((bias - mean) * scale + beta).astype(np.float32).reshape(1, 1, 1, -1)
        return relax.op.add(relax.Call(conv.op, [conv.args[0], relax.const(weight)], conv.attrs),
                            relax.const(shift))


def _channels_first(main: relax.Function) -> bool:
    """Whether a convolution or pooling of `main` reads NCHW data."""
    for binding in bindings_of(main):
        value = binding.value
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in _LAYOUT_ATTR:
            if str(getattr(value.attrs, _LAYOUT_ATTR[value.op.name])) == _CHANNELS_FIRST:
                return True
    return False


def _reads_weight_unlike_tflite(value: relax.Expr) -> bool:
    """Whether `value` is a MAC reading its constant weight otherwise than TFLite stores it: a matmul of a 2-D
    constant, or a depthwise NHWC conv2d (groups = input channels) of an HWIO constant."""
    if not (isinstance(value, relax.Call) and _is_mac(value) and isinstance(value.args[1], Constant)):
        return False
    if value.op.same_as(_MATMUL):
        return len(value.args[1].value.shape) == 2
    attrs, data = value.attrs, value.args[0]
    return (str(attrs.kernel_layout) == "HWIO" and str(attrs.data_layout) == "NHWC" and int(attrs.groups) != 1
            and int(attrs.groups) == int(data.ty.shape[3]))


@relax.expr_functor.mutator
class _TFLiteWeightReader(relax.PyExprMutator):
    """Rewrites each MAC `_reads_weight_unlike_tflite` finds: a matmul of W reads permute_dims(W^T) (a binding
    of its own), a depthwise conv2d's HWIO (KH, KW, 1, C*M) weight becomes the HWOI (KH, KW, C*M, 1) one; the
    same values in the same order."""

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        if not _reads_weight_unlike_tflite(call):
            return call
        data, weight = call.args[0], call.args[1].value.numpy()
        if call.op.same_as(_MATMUL):
            stored = self.builder_.emit(relax.op.permute_dims(relax.const(np.ascontiguousarray(weight.T)), [1, 0]))
            return relax.Call(call.op, [data, stored], call.attrs, call.ty_args)
        attrs = call.attrs
        kh, kw, _, outputs = weight.shape
        return relax.op.nn.conv2d(data, relax.const(weight.reshape(kh, kw, outputs, 1)), attrs.strides,
                                  attrs.padding, attrs.dilation, attrs.groups, attrs.data_layout, "HWOI",
                                  attrs.out_layout, attrs.out_dtype)


@tvm.transform.module_pass(opt_level=0, name="TFLiteWeights")
class _TFLiteWeights:
    """main with each MAC reading its constant weight as TFLite stores it (`_TFLiteWeightReader`)."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        reader = _TFLiteWeightReader(mod)
        reader.builder_.update_func(mod.get_global_var("main"), reader.visit_expr(mod["main"]))
        return reader.builder_.get()
