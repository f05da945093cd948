"""Relax pass: rewrite the QDQ form of a quantized TFLite model into TFLite's integer kernels.

TVM's TFLite frontend imports each int8 operator as ``dequantize -> float op -> quantize``. This pass
recognises those patterns in ``main`` and replaces each by one ``R.call_tir`` to a TE kernel of
``tvm_ext.kernels`` with TFLite Micro's exact integer semantics. Quantization parameters are read from
the QDQ constants of the Relax graph itself (float32 scales and int32 zero points, exactly as stored in
the flatbuffer); weights stay int8 and biases int32 Relax constants.

A quantized ONNX model (main carries ONNX_QUANTIZATION_ATTR) is lowered binding by binding instead, as
onnxruntime runs it (``_OnnxMainRewriter``): its QLinear markers as onnxruntime's kernels, its quantize and
dequantize as ONNX's QuantizeLinear and DequantizeLinear, every other operator as written; no TFLite lowering.

Each operator's lowering is a module of ``tvm_ext.transform.int8``, registered in its ``LOWERINGS``
table; this module is the driver: it walks main's bindings, asks the table which lowering completes each,
emits the matched kernel call (folding a following int8 clip) and sends what no lowering matches to the
float fallback or to UnsupportedOperatorError. A kernel the frontend made itself (a ``call_tir``: TFLite
Micro's signal operators, which compute on raw integers) is kept as it is, with its layer.

Each lowering's module states the pattern it recognises (``int8/conv.py``, ``int8/softmax.py``, ...).

Input: an IRModule whose ``main`` is the frontend's QDQ graph (run this before LegalizeOps and before
FoldConstant). Output: ``main`` holds only ``R.call_tir`` calls to TE PrimFuncs (plus the re-emitted float
ops of layers that took the float fallback); int8 tensors flow between kernels; weights are int8 and
biases int32 Relax constants; per-channel requantization adds an int32 multiplier and an int8 shift
constant per output channel (per-tensor values are immediates in the kernel).
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Optional, Union

import tvm
import tvm_ffi
from tvm import relax
from tvm.ir import Op

from ..frontend.tflite_ops.quantized import QUANTIZED_MODEL_ATTR
from ..kernels import Rounding
from ..layers import (FALLBACK_ATTR, ONNX_QUANTIZATION_ATTR, PLAIN_MAC_KERNELS_ATTR, LayerRecord, bindings_of,
                      constant_bytes, with_layers)
from ..model_check.operator_support import TFLITE_16X8_OPS
from .int8 import LOWERINGS, data_movement, edges, onnx_qlinear, pool
from .int8.emit import KernelEmitter
from .int8.graph_macs import graph_macs
from .int8.graph import Graph, describe, is_call_to
from .int8.lowering import FlashBudget, LoweringContext, Mismatch, Site

if TYPE_CHECKING:  # annotations only
    from backends.backend import KernelSchedules

# The operators lowered exactly with an int16 result: TFLite Micro's 16x8 kernels we match, SVDF (its int16
# activation and state forms, bit-exact with TFLite Micro), the QUANTIZE edge to int16, and the copies of
# stored values. Every other lowering's kernel is int8 only (a RELU's clamps to int8), so it does not take an
# operator whose result is int16.
INT16_OPERATORS = TFLITE_16X8_OPS | {"SVDF", "QUANTIZE", "RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS"}
_CALL_TIR = Op.get("relax.call_tir")


@tvm_ffi.register_error
class UnsupportedOperatorError(RuntimeError):
    """An operator of a quantized model that the pass cannot lower to exact integer arithmetic.

    The pass runs behind TVM's FFI, which re-creates the exception from its message alone: the one-line
    message (model, operator, layer) is the contract; build it with ``at``.
    """

    @classmethod
    def at(cls, model: str, operator: str, layer: str) -> "UnsupportedOperatorError":
        return cls(
            f"{model}: operator {operator} at layer {layer} has no exact integer lowering "
            "(allow_float_fallback=True keeps it on the float path)"
        )


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
    schedules: the backend's ``backends.backend.KernelSchedules`` of the profile's core, or None (the generic
        kernels, TFLite's weight layouts). The lowering reads the backend's choices from it by name: each field
        ``tvm_ext.transform.int8.lowering.LoweringContext`` declares as well (paired or stacked weights, runs of
        MAX_POOL_2D and PAD, the backend's own kernels of ADD, SOFTMAX and QLinearConv, ...), so a new choice is
        declared in both records, not threaded through this pass.
    integer_requantization: onnxruntime's QLinearConv and QLinearMatMul requantize in integers (the profile has no
        floating-point unit: ``tvm_ext.kernels.onnx_qlinear``).
    flash_bytes: the profile's flash (bytes); where ``schedules`` pairs weights, weights are paired only where twice
        the model's constants (``tvm_ext.layers.constant_bytes``: the int8 weights and the rest)
        fit it, as a paired layer's weights take twice their bytes; where it widens depthwise weights to int16,
        layer after layer while the flash beyond the constants holds their extra bytes (None: no limit).

    Output: main's calls are ``R.call_tir`` to TE PrimFuncs (identical kernels are shared, so a PrimFunc
    is not a layer). Main carries layer records (tvm_ext.layers): one per kernel call in call order, the
    frontend's record of its TFLite operator with the kernel's kind (see ``KernelEmitter``), then the
    frontend's records of the layers that took the float fallback; each binding names its record. A
    module with no quantize/dequantize (a float model) is returned unchanged.
    """

    def __init__(
        self,
        rounding: Union[str, Rounding] = Rounding.DOUBLE,
        allow_float_fallback: bool = False,
        model_name: str = "model",
        schedules: Optional[KernelSchedules] = None,
        flash_bytes: Optional[int] = None,
        integer_requantization: bool = False,
    ) -> None:
        self.rounding = Rounding(rounding)
        self.schedules = schedules
        self.flash_bytes = flash_bytes
        self.integer_requantization = integer_requantization
        self.allow_float_fallback = allow_float_fallback
        self.model_name = model_name
        self.float_fallback_layers: list[str] = []

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        if not _is_quantized(mod["main"]):
            return mod  # a float model: nothing to lower
        if _lowered_with_float_layers(mod["main"]):
            return mod  # already lowered, its float layers kept by choice (tvm_ext.quantize: mixed precision)
        onnx = mod["main"].attrs is not None and ONNX_QUANTIZATION_ATTR in mod["main"].attrs
        rewriter = (_OnnxMainRewriter if onnx else _MainRewriter)(self, mod["main"], mod)
        new_mod = rewriter.run()
        self.float_fallback_layers = rewriter.fallback_layers
        return new_mod


def _backend_choices(schedules: Optional[KernelSchedules]) -> dict[str, Any]:
    """The backend's choices of the lowering: each field of `schedules` that ``LoweringContext`` declares as well,
    by name (none for None: the generic kernels)."""
    if schedules is None:
        return {}
    return {f.name: getattr(schedules, f.name) for f in fields(LoweringContext) if hasattr(schedules, f.name)}


def _is_kernel_call(value) -> bool:
    """Whether `value` is a ``call_tir``: a kernel the frontend made itself."""
    return isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)


def _is_quantized(func: relax.Function) -> bool:
    """Whether `func` quantizes or dequantizes anything (the QDQ form of a quantized model), holds an ONNX
    QLinear operator (``int8.onnx_qlinear``), or is marked quantized by the frontend (a quantized model
    without any QDQ, e.g. pools alone: tvm_ext/frontend/tflite_ops/quantized.py)."""
    if func.attrs is not None and QUANTIZED_MODEL_ATTR in func.attrs:
        return True
    qdq = (Op.get("relax.quantize"), Op.get("relax.dequantize"))
    return any(
        isinstance(b.value, relax.Call)
        and (any(b.value.op.same_as(op) for op in qdq) or onnx_qlinear.marker_of(b.value) is not None)
        for block in func.body.blocks
        for b in block.bindings
    )


def _lowered_with_float_layers(func: relax.Function) -> bool:
    """Whether `func` is this pass's own output that kept float-fallback layers: its quantize/dequantize
    around them are not a QDQ model to lower (an all-integer output has none and passes as a float model)."""
    return func.attrs is not None and FALLBACK_ATTR in func.attrs


class _MainRewriter:
    """Builds the integer main with a BlockBuilder, one kernel call per operator a lowering matches."""

    def __init__(self, options: LowerQuantizedToInteger, func: relax.Function, mod: tvm.IRModule) -> None:
        self.options = options
        self.func = func
        self.mod = mod  # the PrimFuncs of the frontend's own kernels
        self.graph = Graph(func)
        self.bb = relax.BlockBuilder()
        self.lowered: dict[relax.Var, relax.Expr] = {param: param for param in func.params}
        choices = _backend_choices(options.schedules)
        # a model of fewer MACs than the backend's MAC helpers pay for: plain MAC kernels, no paired weights (a model
        # whose MACs are not all counted never)
        macs = graph_macs(func) if options.schedules is not None and options.schedules.helper_min_macs else None
        self.plain = macs is not None and macs < options.schedules.helper_min_macs
        if self.plain:  # no helper reads re-laid-out weights
            choices["paired_weights"] = choices["tiled_rows"] = choices["widened_16x8_weights"] = False
        if options.flash_bytes is not None:
            constants = constant_bytes(func)
            if choices.get("paired_weights"):
                choices["paired_weights"] = 2 * constants <= options.flash_bytes
            choices["flash_budget"] = FlashBudget(options.flash_bytes - constants)
        self.context = LoweringContext(self.graph, self.lowered, options.rounding,
                                       integer_requantization=options.integer_requantization, **choices)
        self.emitter = KernelEmitter(self.bb, self.graph)
        self.fallback_layers: list[str] = []
        self.fallback_records: dict[relax.Var, LayerRecord] = {}  # a re-emitted float binding -> its layer
        self.kept_records: dict[relax.Var, LayerRecord] = {}  # a frontend kernel's call or result field -> its layer

    def run(self) -> tvm.IRModule:
        with self.bb.function("main", list(self.func.params)):
            with self.bb.dataflow():
                for binding in self.graph.bindings:
                    if binding.var not in self.lowered:
                        self._lower_binding(binding)
                output = self.bb.emit_output(self._output(self.func.body.body))
            self.bb.emit_func_output(output)
        # Kept: the number of inputs, and that the model is ONNX's (its float kernels then round as onnxruntime's).
        attrs = {key: self.func.attrs[key] for key in ("num_input", ONNX_QUANTIZATION_ATTR) if key in self.func.attrs}
        if self.fallback_layers:
            attrs[FALLBACK_ATTR] = self.fallback_layers
        if self.plain:
            attrs[PLAIN_MAC_KERNELS_ATTR] = True
        new_mod = self.bb.get()
        main = new_mod["main"]
        for key, value in attrs.items():
            main = main.with_attr(key, value)
        new_mod["main"] = self._with_layer_records(main)
        return new_mod

    def _with_layer_records(self, main: relax.Function) -> relax.Function:
        """``main`` carrying the kernel calls' records, then the float fallback's, each binding its own."""
        records = list(self.emitter.records)
        position_of = dict(self.emitter.records_of_var)
        for var, record in {**self.kept_records, **self.fallback_records}.items():
            if record not in records:
                records.append(record)
            position_of[var] = records.index(record)
        per_binding = [[position_of[b.var]] if b.var in position_of else [] for b in bindings_of(main)]
        return with_layers(main, records, per_binding)

    def _lower(self, var: relax.Var, value: relax.Expr, site: Site) -> Optional[Union[relax.Var, Mismatch]]:
        """The lowered result of the operator ``value`` completes (at ``var``); the first Mismatch when the
        lowerings responsible for it match none, or when the one that matches has no int16 kernel for an int16
        ``var``; None when it completes no operator (a pattern's part)."""
        mismatch = None
        int16 = isinstance(var.ty, relax.TensorType) and var.ty.dtype == "int16"
        for lowering in LOWERINGS:
            if lowering.site is not site or not lowering.completes(value, self.context):
                continue
            result = lowering.match(value, self.context)
            if isinstance(result, Mismatch):
                mismatch = mismatch or result
            elif int16 and not lowering.operators & INT16_OPERATORS:
                return Mismatch(f"{'/'.join(sorted(lowering.operators))} of int16 activations (16x8)")
            else:
                return self.emitter.emit_match(var, result, self.lowered)
        return mismatch

    def _lower_binding(self, binding: relax.Binding) -> None:
        value = binding.value
        if isinstance(value, relax.Var) and value in self.lowered:
            self.lowered[binding.var] = self.lowered[value]
            return
        if _is_kernel_call(value) or (isinstance(value, relax.TupleGetItem) and _is_kernel_call(
                self.graph.producer.get(value.tuple_value))):
            self._keep(binding)
            return
        result = self._lower(binding.var, value, Site.BINDING)
        if isinstance(result, Mismatch):
            self._fallback(binding, result.found)
        elif result is not None:
            self.lowered[binding.var] = result

    def _output(self, expr: relax.Expr) -> relax.Expr:
        """Main's output on the lowered graph: a model output still in float gets a DEQUANTIZE kernel."""
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._output(field) for field in expr.fields])
        if expr in self.lowered:
            return self.lowered[expr]
        value = self.graph.value_of(expr)
        if isinstance(value, relax.Tuple):  # the frontend binds a model's several outputs to one var
            return self._output(value)
        result = self._lower(expr, value, Site.MODEL_OUTPUT)
        if isinstance(result, relax.Var):
            return result
        operator = result.found if isinstance(result, Mismatch) else describe(value)
        raise UnsupportedOperatorError.at(self.options.model_name, operator, self._layer(value, expr))

    def _keep(self, binding: relax.Binding) -> None:
        """Emit the frontend's own kernel call (or a field of its results) as it is, on the new graph's
        variables, its PrimFunc copied into the new module."""
        value, records = binding.value, self.graph.records_of(binding.value)
        if isinstance(value, relax.TupleGetItem):
            kept = relax.TupleGetItem(self._reemit(value.tuple_value, records), value.index)
        else:
            function = self.bb.add_func(self.mod[value.args[0]], value.args[0].name_hint)
            operands = relax.Tuple([self._reemit(arg, records) for arg in value.args[1].fields])
            kept = relax.call_tir(function, operands, value.ty_args[0])
        self.lowered[binding.var] = self.bb.emit(kept)
        if records:
            self.kept_records[self.lowered[binding.var]] = records[0]

    def _fallback(self, binding: relax.Binding, operator: str) -> None:
        if not self.options.allow_float_fallback:
            raise UnsupportedOperatorError.at(self.options.model_name, operator, self._layer(binding.value, binding.var))
        self.fallback_layers.append(f"{operator} {binding.var.name}")
        self.lowered[binding.var] = self._reemit(binding.var, self.graph.records_of(binding.value))

    def _layer(self, value: relax.Expr, var: relax.Var) -> str:
        """The layer ``value`` (bound to ``var``) implements, for messages: the model's (`case0_out (SOFTMAX)`),
        else the var's name (a module without layer records)."""
        records = self.graph.records_of(value)
        return records[0].label if records else var.name

    def _reemit(self, expr: relax.Expr, records: tuple[LayerRecord, ...]) -> relax.Expr:
        """Re-emit the original float QDQ expression producing expr, on the new graph's variables."""
        if isinstance(expr, relax.Var):
            if expr in self.lowered:
                return self.lowered[expr]
            value = self.graph.producer[expr]
            new_var = self.bb.emit(self._reemit(value, records))
            self.lowered[expr] = new_var
            if records:
                self.fallback_records[new_var] = records[0]
            return new_var
        if isinstance(expr, relax.Call):
            return relax.Call(expr.op, [self._reemit(arg, records) for arg in expr.args], expr.attrs, expr.ty_args)
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._reemit(field, records) for field in expr.fields])
        return expr


class _OnnxMainRewriter(_MainRewriter):
    """A quantized ONNX model as onnxruntime runs it, binding by binding: each QLinear marker (the groups
    onnxruntime fuses, ``tvm_ext.frontend.onnx_ops.qdq_fusion``) as its kernel, each quantize and dequantize as
    ONNX's QuantizeLinear and DequantizeLinear, computed as onnxruntime computes them, and every other operator
    as the graph writes it on the lowered tensors: in float between a DequantizeLinear and a QuantizeLinear that
    onnxruntime does not fuse (its float kernels: Add, Mul, Concat, Relu, ... of the dequantized values), on the
    integers where it runs on the quantized tensor (Reshape, MaxPool, ...). No TFLite lowering applies: their
    integer arithmetic is not ONNX's."""

    def _lower_binding(self, binding: relax.Binding) -> None:
        value = binding.value
        if isinstance(value, relax.Var) and value in self.lowered:
            self.lowered[binding.var] = self.lowered[value]
            return
        if onnx_qlinear.marker_of(value) is not None:
            result = onnx_qlinear.LOWERING.match(value, self.context)
        elif self._integer_max_pool(value):
            result = pool.MAX_POOL.match(value, self.context)
        elif self._integer_pad(value):
            result = data_movement.PAD.match(value, self.context)
        elif any(is_call_to(value, op) for op in ("relax.quantize", "relax.dequantize")):
            kind = "QUANTIZE" if is_call_to(value, "relax.quantize") else "DEQUANTIZE"
            result = edges.onnx_edge(kind, value, self.context)
        else:
            var = self.bb.emit(self._on_lowered(value))
            records = self.graph.records_of(value)
            if records:
                self.fallback_records[var] = records[0]
            self.lowered[binding.var] = var
            return
        if isinstance(result, Mismatch):
            raise UnsupportedOperatorError.at(self.options.model_name, result.found,
                                              self._layer(value, binding.var))
        self.lowered[binding.var] = self.emitter.emit_match(binding.var, result, self.lowered)

    def _integer_max_pool(self, value: relax.Expr) -> bool:
        """Whether ``value`` is a MaxPool of quantized data (onnxruntime runs it on the integers) that the int8 pool
        kernel takes (``tvm_ext.transform.int8.pool``: NCHW, ceil mode too, no dilation); as written, TVM's
        generic loop kept a running maximum in the output, 5-8 instructions per input byte on cortex-m4f."""
        if not is_call_to(value, "relax.nn.max_pool2d") or not self._integer(value.args[0]):
            return False
        attrs = value.attrs
        return attrs.layout == "NCHW" and attrs.out_layout == "NCHW" and all(int(d) == 1 for d in attrs.dilation)

    def _integer_pad(self, value: relax.Expr) -> bool:
        """Whether ``value`` pads integer data with a constant (the padded copy of a depthwise QLinearConv's input,
        ``tvm_ext.transform.qlinear_depthwise_padded``): TFLite's PAD kernel (``tvm_ext.transform.int8.data_movement``,
        rows copied whole where the backend asks for copy runs), its own layer of the data movement kind."""
        return is_call_to(value, "relax.nn.pad") and str(value.attrs.pad_mode) == "constant" \
            and self._integer(value.args[0])

    def _integer(self, tensor: relax.Expr) -> bool:
        """Whether ``tensor`` is lowered to an int8 or uint8 tensor."""
        lowered = self.lowered.get(tensor) if isinstance(tensor, relax.Var) else None
        return lowered is not None and str(getattr(lowered.ty, "dtype", "")) in ("int8", "uint8")

    def _on_lowered(self, expr: relax.Expr) -> relax.Expr:
        """``expr`` (a binding's value) reading the lowered tensors; a kernel the frontend made itself (TVM's
        ``call_tir`` of a Pad) calls its PrimFunc copied into the new module."""
        if isinstance(expr, relax.Var):
            return self.lowered[expr]
        if isinstance(expr, tvm.ir.GlobalVar):
            return self.bb.add_func(self.mod[expr], expr.name_hint)
        if isinstance(expr, relax.Call):
            return relax.Call(expr.op, [self._on_lowered(arg) for arg in expr.args], expr.attrs, expr.ty_args)
        if isinstance(expr, relax.Tuple):
            return relax.Tuple([self._on_lowered(field) for field in expr.fields])
        if isinstance(expr, relax.TupleGetItem):
            return relax.TupleGetItem(self._on_lowered(expr.tuple_value), expr.index)
        return expr
