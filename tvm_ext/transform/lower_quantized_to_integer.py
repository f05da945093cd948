"""Relax pass: rewrite the QDQ form of a quantized TFLite model into TFLite's integer kernels.

TVM's TFLite frontend imports each int8 operator as ``dequantize -> float op -> quantize``. This pass
recognises those patterns in ``main`` and replaces each by one ``R.call_tir`` to a TE kernel of
``tvm_ext.kernels`` with TFLite Micro's exact integer semantics. Quantization parameters are read from
the QDQ constants of the Relax graph itself (float32 scales and int32 zero points, exactly as stored in
the flatbuffer); weights stay int8 and biases int32 Relax constants.

Recognised patterns (``dq`` = dequantize, ``q`` = quantize, ``[act]`` = optional float relu/clip):
  CONV_2D / DEPTHWISE_CONV_2D  q([act](add(conv2d(dq(x), dq(W)), dq(b)))) [-> clip]
  FULLY_CONNECTED              q([act](add(matmul(dq(x), dq(W^T)), dq(b)))) [-> clip]
  ADD                          q([act](add(dq(a), dq(b)))) [-> clip]
  SOFTMAX                      q(softmax(dq(x)))   (the frontend drops beta: beta = 1)
  AVERAGE_POOL_2D              astype_i8(avg_pool2d(astype_i32(x))) [-> clip]
  MAX_POOL_2D                  max_pool2d(x) [-> clip]
  RESHAPE                      reshape(x) on int8
  QUANTIZE / DEQUANTIZE        q(float model input), dq(x) as a model output

Input: an IRModule whose ``main`` is the frontend's QDQ graph (run this before LegalizeOps and before
FoldConstant). Output: ``main`` holds only ``R.call_tir`` calls to TE PrimFuncs (plus the re-emitted float
ops of layers that took the float fallback); int8 tensors flow between kernels; weights are int8 and
biases int32 Relax constants; per-channel requantization adds an int32 multiplier and an int8 shift
constant per output channel (per-tensor values are immediates in the kernel).
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, tirx, topi
from tvm.ir import Op
from tvm.ir.expr import Constant

from tvm_ext.frontend import LAYER_VAR_PREFIX

from ..kernels import (
    OutputStage,
    Rounding,
    add_int8,
    average_pool2d_int8,
    conv2d_int8,
    depthwise_conv2d_int8,
    dequantize_int8,
    fully_connected_int8,
    max_pool2d_int8,
    quantize_int8,
    softmax_int8,
)
from ..kernels.quant_params import (
    ActivationRange,
    add_params,
    conv_multipliers,
    fully_connected_multiplier,
    softmax_params,
)

LAYERS_ATTR = "tvm_ext.layers"
OPERATOR_INDICES_ATTR = "tvm_ext.operator_indices"
FALLBACK_ATTR = "tvm_ext.float_fallback_layers"
# Relax ops that are the computation of exactly one TFLite operator in the frontend's QDQ output.
CORE_OPS = frozenset({"relax.nn.conv2d", "relax.matmul", "relax.nn.softmax", "relax.nn.avg_pool2d",
                      "relax.nn.max_pool2d"})


@tvm_ffi.register_error
class UnsupportedOperatorError(RuntimeError):
    """An operator of a quantized model that the pass cannot lower to exact integer arithmetic.

    The pass runs behind TVM's FFI, which re-creates the exception from its message alone: the one-line
    message (model, operator, layer) is the contract; build it with ``at``.
    """

    @classmethod
    def at(cls, model: str, operator: str, layer: str) -> "UnsupportedOperatorError":
        return cls(
            f"{model}: operator {operator} at layer {layer} has no exact int8 lowering "
            "(allow_float_fallback=True keeps it on the float path)"
        )


class _NoMatch(Exception):
    """The expression is not the pattern being tried; carries the operator found instead."""

    def __init__(self, operator: str) -> None:
        super().__init__(operator)
        self.operator = operator


@dataclass(frozen=True)
class _Quant:
    """Per-tensor quantization of an int8 activation: float32 scale and int32 zero point."""

    scale: np.float32
    zero_point: int


class _Graph:
    """Read-only view of main's bindings: producer lookup and use counts."""

    def __init__(self, func: relax.Function) -> None:
        self.bindings = [b for block in func.body.blocks for b in block.bindings]
        self.producer = {b.var: b.value for b in self.bindings}
        self.params = set(func.params)
        self._position = {b.value: i for i, b in enumerate(self.bindings)}
        self._core_positions = [i for i, b in enumerate(self.bindings) if self._is_operator_core(b.value)]
        self.uses: Counter = Counter()
        for binding in self.bindings:
            relax.analysis.post_order_visit(binding.value, self._count)
        relax.analysis.post_order_visit(func.body.body, self._count)

    def _is_operator_core(self, value: relax.Expr) -> bool:
        """Whether ``value`` is the computation of one TFLite operator (the frontend emits these in order)."""
        if not (isinstance(value, relax.Call) and isinstance(value.op, Op)):
            return False
        name = value.op.name
        if name in CORE_OPS:
            return True
        if name == "relax.add":  # ADD, not a bias add: no operand is a dequantized constant
            return all(not isinstance(self.value_of(self.dequantized_source(arg)), Constant) for arg in value.args)
        if name == "relax.reshape":  # RESHAPE of an int8 activation, not of dequantized weights
            return str(value.ty.dtype) == "int8" and not isinstance(self.value_of(value.args[0]), Constant)
        return name == "relax.quantize" and value.args[0] in self.params  # QUANTIZE of a float model input

    def dequantized_source(self, expr: relax.Expr) -> relax.Expr:
        """The first argument of the dequantize producing expr, else expr."""
        dequantize = self.maybe_call(expr, "relax.dequantize")
        return dequantize.args[0] if dequantize is not None else expr

    def operator_index(self, core: relax.Call) -> int:
        """TFLite operator index of the operator whose computation is ``core``.

        An output DEQUANTIZE, not a binding of its own kind, gets the index after every operator before it.
        """
        position = self._position.get(core, len(self.bindings))
        return bisect.bisect_left(self._core_positions, position)

    def _count(self, expr: relax.Expr) -> None:
        if isinstance(expr, relax.Var):
            self.uses[expr] += 1

    def value_of(self, expr: relax.Expr) -> relax.Expr:
        """The expression bound to ``expr``, following ``a = b`` aliases (expr itself if unbound)."""
        while isinstance(expr, relax.Var) and expr in self.producer:
            expr = self.producer[expr]
        return expr

    def call(self, expr: relax.Expr, op_name: str) -> relax.Call:
        """The call to ``op_name`` that produces ``expr``; raises _NoMatch naming what produces it."""
        value = self.value_of(expr)
        if isinstance(value, relax.Call) and isinstance(value.op, Op) and value.op.name == op_name:
            return value
        raise _NoMatch(_describe(value))

    def maybe_call(self, expr: relax.Expr, op_name: str) -> Optional[relax.Call]:
        try:
            return self.call(expr, op_name)
        except _NoMatch:
            return None

    def constant(self, expr: relax.Expr) -> np.ndarray:
        value = self.value_of(expr)
        if isinstance(value, Constant):
            return value.value.numpy()
        raise _NoMatch(_describe(value))

    def single_user(self, var: relax.Var, op_name: str) -> Optional[relax.Binding]:
        """The binding that is var's only use, if it is a call to ``op_name``."""
        if self.uses[var] != 1:
            return None
        for binding in self.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and isinstance(value.op, Op) and value.op.name == op_name:
                if any(arg.same_as(var) for arg in value.args):
                    return binding
        return None


def _describe(value: relax.Expr) -> str:
    if isinstance(value, relax.Call) and isinstance(value.op, Op):
        return value.op.name
    return type(value).__name__


def _kernel_key(kind: str, kernel: Callable, static: dict, operands: Sequence[relax.Expr]) -> Optional[tuple]:
    """What makes two kernel calls the same PrimFunc: the operator, the TE kernel, its compile-time
    parameters and each operand's shape and dtype; None when a parameter cannot be compared (no reuse)."""
    types = []
    for operand in operands:
        ty = operand.ty if isinstance(operand, relax.Expr) else None
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            return None
        types.append((tuple(int(d) for d in ty.shape.values), str(ty.dtype)))
    parameters = tuple(
        (name, tuple(value) if isinstance(value, list) else value) for name, value in sorted(static.items())
    )
    key = (kind, kernel, parameters, tuple(types))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _narrowest_lossless(bias: np.ndarray) -> np.ndarray:
    """int32 bias stored as int16 when every value fits (exactly the same integers, half the flash)."""
    fits = bias.size == 0 or (bias.min() >= np.iinfo(np.int16).min and bias.max() <= np.iinfo(np.int16).max)
    return bias.astype(np.int16) if fits else bias


def _ints(values) -> list[int]:
    return [int(v) for v in values]


@tvm.transform.module_pass(opt_level=0, name="LowerQuantizedToInteger")
class LowerQuantizedToInteger:
    """Rewrite main's QDQ int8 patterns into integer TE kernels with TFLite Micro's semantics.

    Parameters
    ----------
    rounding: "double" (TFLite's default, what TFLM's reference kernels do) or "single"
        (TFLITE_SINGLE_ROUNDING / CMSIS-NN); a target profile passes its own.
    allow_float_fallback: keep an operator without an exact lowering on the float QDQ path instead of
        raising UnsupportedOperatorError; the layers that took it are listed in main's
        ``tvm_ext.float_fallback_layers`` attribute and in ``self.float_fallback_layers``.
    model_name: named in errors.
    layer_names: optional name per TFLite operator index (e.g. each operator's output tensor name).

    Output: main's calls are ``R.call_tir`` to TE PrimFuncs (identical kernels are shared, so a PrimFunc
    is not a layer). The result Var of call N is named ``layer<N>``; main's ``tvm_ext.layers`` attribute
    lists "<name> (<KIND>)" (or "<KIND> #<operator index>") and ``tvm_ext.operator_indices`` the TFLite
    operator index, per kernel call in call order. A
    module with no quantize/dequantize (a float model) is returned unchanged.
    """

    def __init__(
        self,
        rounding: Union[str, Rounding] = Rounding.DOUBLE,
        allow_float_fallback: bool = False,
        model_name: str = "model",
        layer_names: Optional[Sequence[str]] = None,
    ) -> None:
        self.rounding = Rounding(rounding)
        self.allow_float_fallback = allow_float_fallback
        self.model_name = model_name
        self.layer_names = list(layer_names) if layer_names is not None else None
        self.float_fallback_layers: list[str] = []

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        if not _is_quantized(mod["main"]):
            return mod  # a float model: nothing to lower
        rewriter = _MainRewriter(self, mod["main"])
        new_mod = rewriter.run()
        self.float_fallback_layers = rewriter.fallback_layers
        return new_mod


def _is_quantized(func: relax.Function) -> bool:
    """Whether `func` quantizes or dequantizes anything (the QDQ form of a quantized model)."""
    qdq = (Op.get("relax.quantize"), Op.get("relax.dequantize"))
    return any(
        isinstance(b.value, relax.Call) and any(b.value.op.same_as(op) for op in qdq)
        for block in func.body.blocks
        for b in block.bindings
    )


class _MainRewriter:
    """Builds the integer main with a BlockBuilder, one kernel call per recognised TFLite operator."""

    def __init__(self, options: LowerQuantizedToInteger, func: relax.Function) -> None:
        self.options = options
        self.func = func
        self.graph = _Graph(func)
        self.bb = relax.BlockBuilder()
        self.var_map: dict = {}
        self.layers: list[str] = []
        self.operator_indices: list[int] = []
        self.fallback_layers: list[str] = []
        self.kernels: dict[tuple, tuple[tvm.ir.GlobalVar, relax.TensorType]] = {}  # see _kernel_key

    # ----------------------------------------------------------------------------------- driver
    def run(self) -> tvm.IRModule:
        params = list(self.func.params)
        for param in params:
            self.var_map[param] = param
        with self.bb.function("main", params):
            with self.bb.dataflow():
                for binding in self.graph.bindings:
                    if binding.var not in self.var_map:
                        self._lower_binding(binding)
                output = self.bb.emit_output(self._output(self.func.body.body))
            attrs = {"num_input": self.func.attrs["num_input"]} if "num_input" in self.func.attrs else {}
            attrs[LAYERS_ATTR] = self.layers
            attrs[OPERATOR_INDICES_ATTR] = self.operator_indices
            if self.fallback_layers:
                attrs[FALLBACK_ATTR] = self.fallback_layers
            self.bb.emit_func_output(output)
        new_mod = self.bb.get()
        main = new_mod["main"]
        for key, value in attrs.items():
            main = main.with_attr(key, value)
        new_mod["main"] = main
        return new_mod

    def _output(self, expr: relax.Expr) -> relax.Expr:
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._output(field) for field in expr.fields])
        if expr in self.var_map:
            return self.var_map[expr]
        dequantize = self.graph.call(expr, "relax.dequantize")
        source = self.var_map[dequantize.args[0]]
        q = self._quant(dequantize.args[1], dequantize.args[2])
        return self._emit("DEQUANTIZE", dequantize, dequantize_int8, source, scale=float(q.scale), zero_point=q.zero_point)

    def _lower_binding(self, binding: relax.Binding) -> None:
        """Lower the binding if it ends a TFLite operator; other bindings are parts of patterns."""
        value = binding.value
        if isinstance(value, relax.Var) and value in self.var_map:
            self._set(binding.var, self.var_map[value])
            return
        lowering = self._lowering_for(value)
        if lowering is None:
            return
        try:
            self._set(binding.var, lowering(binding.var, value))
        except _NoMatch as missing:
            self._fallback(binding, missing.operator)

    def _lowering_for(self, value: relax.Expr) -> Optional[Callable[[relax.Var, relax.Call], relax.Var]]:
        """The lowering of the operator that ``value`` completes, or None if it completes none."""
        if not (isinstance(value, relax.Call) and isinstance(value.op, Op)):
            return None
        name = value.op.name
        if name == "relax.quantize":
            return self.lower_quantize_edge if value.args[0] in self.var_map else self.lower_quantize
        if name == "relax.astype" and str(value.attrs.dtype) == "int8":
            pooled = self.graph.maybe_call(value.args[0], "relax.nn.avg_pool2d") is not None
            return self.lower_average_pool if pooled else None
        if name == "relax.nn.max_pool2d" and value.args[0] in self.var_map:
            return self.lower_max_pool
        if name == "relax.reshape" and value.args[0] in self.var_map:
            return self.lower_reshape
        return None

    def _set(self, var: relax.Var, new_var: relax.Var) -> None:
        self.var_map[var] = new_var

    # ---------------------------------------------------------------------------------- helpers
    def _quant(self, scale: relax.Expr, zero_point: relax.Expr) -> _Quant:
        scales = self.graph.constant(scale).astype(np.float32).reshape(-1)
        zero_points = self.graph.constant(zero_point).reshape(-1)
        if scales.size != 1 or np.any(zero_points != zero_points[0]):
            raise _NoMatch("per-channel activation quantization")
        return _Quant(np.float32(scales[0]), int(zero_points[0]))

    def _int8_input(self, expr: relax.Expr) -> tuple[relax.Var, _Quant]:
        """An int8 activation seen through its dequantize: (new var, its quantization)."""
        dequantize = self.graph.call(expr, "relax.dequantize")
        if dequantize.args[0] not in self.var_map:
            raise _NoMatch(_describe(self.graph.producer.get(dequantize.args[0], dequantize.args[0])))
        return self.var_map[dequantize.args[0]], self._quant(dequantize.args[1], dequantize.args[2])

    def _emit(self, kind: str, core: relax.Call, kernel: Callable, *args, **kwargs) -> relax.Var:
        """Emit the kernel of the TFLite operator computed by ``core``; the result Var is layer<N>."""
        index = self.graph.operator_index(core)
        self.operator_indices.append(index)
        names = self.options.layer_names
        self.layers.append(f"{names[index]} ({kind})" if names is not None and index < len(names) else f"{kind} #{index}")
        tensors = {key: value for key, value in kwargs.items() if isinstance(value, relax.Expr)}
        static = {key: value for key, value in kwargs.items() if key not in tensors}
        # Named `layer<N>`, N indexing main's `tvm_ext.layers`: the convention of tvm_ext.frontend, which
        # FuseOpsKeepingLayers reads to name each fused kernel's layers.
        name_hint = f"{LAYER_VAR_PREFIX}{len(self.layers) - 1}"
        operands = [*args, *tensors.values()]
        key = _kernel_key(kind, kernel, static, operands)
        if key in self.kernels:
            # The same kernel on other data (a repeated layer): TE would build an identical PrimFunc again,
            # the pass's costliest step (about 0.5 s per int8 convolution).
            function, out_ty = self.kernels[key]
            return self.bb.emit(relax.call_tir(function, relax.Tuple(operands), out_ty), name_hint=name_hint)
        var = self.bb.emit_te(functools.partial(kernel, **static), *args, primfunc_name_hint=kind.lower(),
                              name_hint=name_hint, **tensors)
        call = self.bb.lookup_binding(var)
        if key is not None and all(a.same_as(b) for a, b in zip(call.args[1].fields, operands, strict=True)):
            self.kernels[key] = (call.args[0], call.ty_args[0])
        return var

    def _emit_with_clip(self, var: relax.Var, emit: Callable[[ActivationRange], relax.Var],
                        activation: ActivationRange) -> relax.Var:
        """Emit a kernel, folding a following int8 clip (the frontend's fused RELU/RELU6) into it."""
        clip = self.graph.single_user(var, "relax.clip")
        if clip is None or str(clip.value.ty.dtype) != "int8":
            return emit(activation)
        low, high = (int(float(arg.value)) for arg in clip.value.args[1:3])
        result = emit(activation.intersect(low, high))
        self._set(clip.var, result)
        return result

    def _float_activation(self, expr: relax.Expr, out: _Quant) -> tuple[relax.Expr, ActivationRange]:
        """Peel a float relu/clip between the operator and its quantize (e.g. ADD's fused RELU)."""
        relu = self.graph.maybe_call(expr, "relax.nn.relu")
        if relu is not None:
            return relu.args[0], ActivationRange().with_float_clip(0.0, float("inf"), out.scale, out.zero_point)
        clip = self.graph.maybe_call(expr, "relax.clip")
        if clip is not None:
            low, high = (float(arg.value) for arg in clip.args[1:3])
            return clip.args[0], ActivationRange().with_float_clip(low, high, out.scale, out.zero_point)
        return expr, ActivationRange()

    def _output_stage(self, out: _Quant, activation: ActivationRange, multiplier: int, shift: int) -> OutputStage:
        return OutputStage(multiplier, shift, out.zero_point, activation, self.options.rounding)

    def _channel_params(self, multipliers: np.ndarray, shifts: np.ndarray):
        """Per-tensor ints when all channels agree, else (multiplier int32[C], shift int8[C]) constants."""
        if np.all(multipliers == multipliers[0]) and np.all(shifts == shifts[0]):
            return int(multipliers[0]), int(shifts[0]), {}
        tensors = {"multiplier": relax.const(multipliers.astype(np.int32)), "shift": relax.const(shifts.astype(np.int8))}
        return 0, 0, tensors

    def _fallback(self, binding: relax.Binding, operator: str) -> None:
        layer = binding.var.name
        if not self.options.allow_float_fallback:
            raise UnsupportedOperatorError.at(self.options.model_name, operator, layer)
        self.fallback_layers.append(f"{operator} {layer}")
        self._set(binding.var, self._reemit(binding.var))

    def _reemit(self, expr: relax.Expr) -> relax.Expr:
        """Re-emit the original float QDQ expression producing expr, on the new graph's variables."""
        if isinstance(expr, relax.Var):
            if expr in self.var_map:
                return self.var_map[expr]
            value = self.graph.producer[expr]
            new_var = self.bb.emit(self._reemit(value))
            self.var_map[expr] = new_var
            return new_var
        if isinstance(expr, relax.Call):
            return relax.Call(expr.op, [self._reemit(arg) for arg in expr.args], expr.attrs, expr.ty_args)
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._reemit(field) for field in expr.fields])
        return expr

    # ------------------------------------------------------------------------------- lowerings
    def lower_quantize_edge(self, _var: relax.Var, call: relax.Call) -> relax.Var:
        q = self._quant(call.args[1], call.args[2])
        return self._emit("QUANTIZE", call, quantize_int8, self.var_map[call.args[0]], scale=float(q.scale), zero_point=q.zero_point)

    def lower_quantize(self, var: relax.Var, call: relax.Call) -> relax.Var:
        out = self._quant(call.args[1], call.args[2])
        operand, activation = self._float_activation(call.args[0], out)
        for pattern in (self._convolution_or_dense, self._add, self._softmax):
            try:
                return pattern(var, operand, out, activation)
            except _NoMatch:
                continue
        raise _NoMatch(_describe(self.graph.producer.get(operand, operand)))

    def _convolution_or_dense(self, var, operand, out: _Quant, activation: ActivationRange):
        add = self.graph.maybe_call(operand, "relax.add")
        bias_expr = None
        core = operand
        if add is not None:
            core, bias_expr = add.args
        conv = self.graph.maybe_call(core, "relax.nn.conv2d")
        if conv is not None:
            return self._convolution(var, conv, bias_expr, out, activation)
        matmul = self.graph.call(core, "relax.matmul")
        return self._fully_connected(var, matmul, bias_expr, out, activation)

    def _bias(self, expr: Optional[relax.Expr]) -> Optional[relax.Expr]:
        if expr is None:
            return None
        dequantize = self.graph.call(expr, "relax.dequantize")
        bias = self.graph.constant(dequantize.args[0])
        if bias.dtype != np.int32:
            raise _NoMatch(f"bias of type {bias.dtype}")
        return relax.const(_narrowest_lossless(bias.reshape(-1)))

    def _weight(self, expr: relax.Expr) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """int8 weight constant behind dequantize, its per-channel scales, and the transforms after it."""
        transforms = []
        reshape = self.graph.maybe_call(expr, "relax.reshape")
        if reshape is not None:
            transforms.append("reshape")
            expr = reshape.args[0]
        dequantize = self.graph.call(expr, "relax.dequantize")
        source = dequantize.args[0]
        permute = self.graph.maybe_call(source, "relax.permute_dims")
        if permute is not None:
            transforms.insert(0, "permute")
            source = permute.args[0]
        weight = self.graph.constant(source)
        if weight.dtype != np.int8 or np.any(self.graph.constant(dequantize.args[2]) != 0):
            raise _NoMatch("weights that are not symmetric int8")
        return weight, self.graph.constant(dequantize.args[1]).astype(np.float32).reshape(-1), transforms

    def _convolution(self, var, conv: relax.Call, bias_expr, out: _Quant, activation: ActivationRange):
        attrs = conv.attrs
        if attrs.data_layout != "NHWC" or attrs.out_layout != "NHWC":
            raise _NoMatch("relax.nn.conv2d (layout)")
        data, data_q = self._int8_input(conv.args[0])
        weight, filter_scales, _ = self._weight(conv.args[1])
        bias = self._bias(bias_expr)
        in_channels = int(conv.args[0].ty.shape[3])
        groups = int(attrs.groups)
        geometry = dict(strides=_ints(attrs.strides), padding=_ints(attrs.padding), dilation=_ints(attrs.dilation))
        if groups == 1 and attrs.kernel_layout == "HWIO":
            kind, kernel, weight_const = "CONV_2D", conv2d_int8, weight
        elif groups == in_channels and attrs.kernel_layout == "HWOI":
            out_channels = int(conv.ty.shape[3])
            kind, kernel = "DEPTHWISE_CONV_2D", depthwise_conv2d_int8
            weight_const = weight.reshape(weight.shape[-3], weight.shape[-2], out_channels)
        else:
            raise _NoMatch(f"relax.nn.conv2d (groups={groups}, kernel_layout={attrs.kernel_layout})")
        multipliers, shifts = conv_multipliers(data_q.scale, filter_scales, out.scale, self.options.rounding)
        return self._mac_kernel(var, conv, kind, kernel, data, weight_const, bias, data_q, out, activation,
                                multipliers, shifts, geometry)

    def _fully_connected(self, var, matmul: relax.Call, bias_expr, out: _Quant, activation: ActivationRange):
        data, data_q = self._int8_input(matmul.args[0])
        if len(matmul.args[0].ty.shape) != 2:
            raise _NoMatch("relax.matmul (input rank != 2)")
        weight, filter_scales, transforms = self._weight(matmul.args[1])
        weight_const = weight if transforms == ["permute"] else np.ascontiguousarray(weight.T)
        bias = self._bias(bias_expr)
        if filter_scales.size == 1:
            m, s = fully_connected_multiplier(data_q.scale, filter_scales[0], out.scale, self.options.rounding)
            multipliers, shifts = np.array([m]), np.array([s])
        else:
            multipliers, shifts = conv_multipliers(data_q.scale, filter_scales, out.scale, self.options.rounding)
        return self._mac_kernel(var, matmul, "FULLY_CONNECTED", fully_connected_int8, data, weight_const, bias, data_q,
                                out, activation, multipliers, shifts, {})

    def _mac_kernel(self, var, core, kind, kernel, data, weight, bias, data_q, out, activation, multipliers, shifts,
                    geometry):
        multiplier, shift, channel_tensors = self._channel_params(multipliers, shifts)

        def emit(final_activation: ActivationRange) -> relax.Var:
            stage = self._output_stage(out, final_activation, multiplier, shift)
            return self._emit(kind, core, kernel, data, relax.const(weight), bias, input_zero_point=data_q.zero_point,
                              output=stage, **geometry, **channel_tensors)

        return self._emit_with_clip(var, emit, activation)

    def _add(self, var, operand, out: _Quant, activation: ActivationRange):
        add = self.graph.call(operand, "relax.add")
        lhs, lhs_q = self._int8_input(add.args[0])
        rhs, rhs_q = self._int8_input(add.args[1])
        params = add_params(lhs_q.scale, rhs_q.scale, out.scale, self.options.rounding)

        def emit(final_activation: ActivationRange) -> relax.Var:
            return self._emit("ADD", add, add_int8, lhs, rhs, lhs_zero_point=lhs_q.zero_point,
                              rhs_zero_point=rhs_q.zero_point, output_zero_point=out.zero_point, params=params,
                              activation=final_activation, rounding=self.options.rounding)

        return self._emit_with_clip(var, emit, activation)

    def _softmax(self, var, operand, out: _Quant, activation: ActivationRange):
        softmax = self.graph.call(operand, "relax.nn.softmax")
        data, data_q = self._int8_input(softmax.args[0])
        rank = len(softmax.args[0].ty.shape)
        if int(softmax.attrs.axis) not in (-1, rank - 1) or out.zero_point != -128 or out.scale != np.float32(1 / 256):
            raise _NoMatch("relax.nn.softmax (axis or output quantization other than TFLite's)")
        params = softmax_params(1.0, data_q.scale, self.options.rounding)
        return self._emit("SOFTMAX", softmax, softmax_int8, data, params=params, rounding=self.options.rounding)

    def lower_average_pool(self, var: relax.Var, call: relax.Call) -> relax.Var:
        pool = self.graph.call(call.args[0], "relax.nn.avg_pool2d")
        widen = self.graph.call(pool.args[0], "relax.astype")
        return self._pool(var, pool, widen.args[0], average_pool2d_int8, "AVERAGE_POOL_2D")

    def lower_max_pool(self, var: relax.Var, call: relax.Call) -> relax.Var:
        return self._pool(var, call, call.args[0], max_pool2d_int8, "MAX_POOL_2D")

    def _pool(self, var: relax.Var, pool: relax.Call, source: relax.Expr, kernel, kind: str):
        attrs = pool.attrs
        if attrs.layout != "NHWC" or bool(attrs.ceil_mode) or any(int(d) != 1 for d in attrs.dilation):
            raise _NoMatch(f"{pool.op.name} (layout, ceil_mode or dilation)")
        geometry = dict(pool=_ints(attrs.pool_size), strides=_ints(attrs.strides), padding=_ints(attrs.padding))

        def emit(final_activation: ActivationRange) -> relax.Var:
            return self._emit(kind, pool, kernel, self.var_map[source], activation=final_activation, **geometry)

        return self._emit_with_clip(var, emit, ActivationRange())

    def lower_reshape(self, var: relax.Var, call: relax.Call) -> relax.Var:
        shape = _ints(call.ty.shape)
        return self._emit("RESHAPE", call, topi.reshape, self.var_map[call.args[0]], shape)
