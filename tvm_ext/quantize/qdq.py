"""A float Relax main -> the QDQ form of the same model quantized to int8 (or 16x8: int16 activations and
int8 weights), as TVM's TFLite frontend imports a quantized TFLite model (``dequantize -> float op ->
quantize``), so that LowerQuantizedToInteger lowers it to TFLite's integer kernels unchanged.

Quantization (TFLite's post-training full-integer scheme):
- weights of conv2d (NHWC; HWIO or depthwise HWOI kernels) and of matmul (``permute_dims`` of a constant):
  int8, symmetric, one scale per output channel, max |w| / 127;
- the bias added to such a call: int32 (int64 in 16x8, as TFLite's converter writes it) with scale input_scale
  x weight_scale[channel], zero point 0; a channel whose int32 bias would reach half the int32 range gets a
  wider weight scale instead, as TFLite's quantizer does (`bias_range`); a MAC named in `bias_shifts` has that
  amount subtracted from its float bias first (empirical bias correction, `bias_correction`);
- every activation that leaves a layer (and each model input): per tensor, from its calibrated range
  (`ranges.ActivationQuant`): int8 asymmetric, or int16 symmetric, one type for the whole model (TFLite
  Micro's 16x8 kernels read and write int16 only); SOFTMAX outputs 1/256 and -128 (int8) or 1/32768 and 0
  (int16), LOGISTIC 1/256 and -128, TANH 1/128 and 0 (int8), both 2^-15 and 0 (int16) as TFLite requires;
  RESHAPE, TRANSPOSE (permute_dims) and pooling run on the integer tensor and keep their input's quantization,
  as TFLite's converter does;
- a layer named in `float_layers` (mixed precision) keeps its float weights and arithmetic: its integer
  inputs are dequantized, its output quantized, so it runs as float kernels between the integer ones.
The quantized main takes and returns integer tensors (the quantization of each is in `QuantizedGraph`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.kernels.quant_params import INT16_SIGMOID_OUTPUT_POWER
from tvm_ext.layers import Layers, bindings_of, vars_read, with_layers
from tvm_ext.transform.int8.logistic import LOGISTIC_OUTPUT, TANH_OUTPUT
from tvm_ext.transform.int8.softmax import SOFTMAX_OUTPUT_SCALE, SOFTMAX_OUTPUT_ZERO_POINT
from tvm_ext.transform.int8.softmax_int16 import OUTPUT_SCALE as SOFTMAX_INT16_OUTPUT_SCALE

from .bias_range import least_weight_scales
from .ranges import ActivationQuant, with_taps
from .weight_rounding import WeightRounding, round_to_int8_weight

DATA_MOVEMENT = frozenset({"relax.reshape", "relax.permute_dims"})
PASSTHROUGH = DATA_MOVEMENT | {"relax.nn.max_pool2d", "relax.nn.avg_pool2d"}
SOFTMAX = "relax.nn.softmax"
# The output quantization TFLite fixes for an operator, by activation type, as the integer lowerings that check
# it hold it; every other layer output's comes from its calibrated range.
FIXED_OUTPUT_QUANTS = {
    SOFTMAX: {"int8": ActivationQuant(SOFTMAX_OUTPUT_SCALE, SOFTMAX_OUTPUT_ZERO_POINT),
              "int16": ActivationQuant(np.float32(SOFTMAX_INT16_OUTPUT_SCALE), 0, "int16")},
    "relax.sigmoid": {"int8": ActivationQuant(LOGISTIC_OUTPUT.scale, LOGISTIC_OUTPUT.zero_point),
                      "int16": ActivationQuant(np.float32(2.0**INT16_SIGMOID_OUTPUT_POWER), 0, "int16")},
    "relax.tanh": {"int8": ActivationQuant(TANH_OUTPUT.scale, TANH_OUTPUT.zero_point),
                   "int16": ActivationQuant(np.float32(2.0**INT16_SIGMOID_OUTPUT_POWER), 0, "int16")},
}
_MAC = frozenset({"relax.nn.conv2d", "relax.matmul"})
_ELEMENTWISE = frozenset({"relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.maximum",
                          "relax.minimum"})


class QuantizeError(Exception):
    """The float model has something the quantizer does not handle; one line naming the layer and operator."""


@dataclass(frozen=True)
class QuantizedGraph:
    """The QDQ module, and the quantization of its inputs and outputs (in main's order); `activations` maps
    each input and layer output var of the float main to its integer var in the QDQ main and quantization."""

    mod: tvm.IRModule
    inputs: list[ActivationQuant]
    outputs: list[ActivationQuant]
    activations: dict[relax.Var, "QuantizedValue"]
    weight_errors: dict[relax.Var, np.ndarray]  # each int8 MAC var of the float main -> dequantized int8 - float
    # weight, float32, in the layout of the MAC's weight operand (HWIO/HWOI for conv2d, (in, out) for matmul)

    def on_host(self, float_vars: list[relax.Var]) -> tvm.IRModule:
        """The QDQ module whose main returns its output, then the integer values of `float_vars` (inputs and
        layer output vars of the float main), as the integer kernels compute them, for the Relax VM: TVM's
        avg_pool2d truncates an int32 mean toward zero where TFLite's AVERAGE_POOL_2D rounds it half away from
        zero, so each integer average pool runs in float64, rounded (the lowering reads `mod`, unchanged)."""
        return with_taps(self.mod, [self.activations[var].var for var in float_vars], _emit_rounding_pools)


def _emit_rounding_pools(bb: relax.BlockBuilder, _var: relax.Var, value: relax.Expr) -> relax.Expr:
    """`value` emitted, an avg_pool2d of int32 values as TFLite's rounding mean of them (int32)."""
    if not (isinstance(value, relax.Call) and value.op.name == "relax.nn.avg_pool2d"
            and str(value.args[0].ty.dtype) == "int32"):
        return bb.emit(value)
    mean = bb.emit(relax.Call(value.op, [bb.emit(relax.op.astype(value.args[0], "float64"))], value.attrs))
    half_up = relax.op.floor(relax.op.add(relax.op.abs(mean), relax.const(0.5, "float64")))
    return bb.emit(relax.op.astype(relax.op.multiply(relax.op.sign(mean), half_up), "int32"))


def layer_outputs(main: relax.Function) -> list[relax.Var]:
    """main's vars read by a binding of another layer or returned: the tensors that leave a layer (the
    activations to quantize), in binding order. Aliases (``v = w``) are looked through."""
    bindings = bindings_of(main)
    layer_of = layer_of_vars(main)
    alias = {b.var: b.value for b in bindings if isinstance(b.value, relax.Var)}
    leaving: list[relax.Var] = []

    def mark(var: relax.Var) -> None:
        while var in alias:
            var = alias[var]
        if var in layer_of and var not in leaving:
            leaving.append(var)

    for binding in bindings:
        for arg in vars_read(binding.value):
            if isinstance(arg, relax.Var) and arg in layer_of and layer_of[arg] != layer_of[binding.var]:
                mark(arg)
    mark(main.body.body)
    return sorted(leaving, key=[b.var for b in bindings].index)


def layer_of_vars(main: relax.Function) -> dict[relax.Var, tuple[int, ...]]:
    """Each binding var of main -> its layer (the indices of its layer records; () for none)."""
    layers = Layers.of(main)
    return {binding.var: layers.bindings[position] if position < len(layers.bindings) else ()
            for position, binding in enumerate(bindings_of(main))}


def quantize_graph(mod: tvm.IRModule, input_quants: list[ActivationQuant],
                   quant_of: dict[relax.Var, ActivationQuant], model_name: str,
                   float_layers: frozenset[relax.Var] = frozenset(),
                   bias_shifts: Mapping[relax.Var, np.ndarray] | None = None,
                   roundings: Mapping[relax.Var, WeightRounding] | None = None) -> QuantizedGraph:
    """The QDQ module of `mod`'s float main with int8 inputs quantized as `input_quants` and each layer
    output var quantized as `quant_of` says (softmax and pass-through outputs get their fixed rule); the
    layers of the output vars in `float_layers` keep float weights and arithmetic. The input and layer
    output quantizations are of one type: int8, or int16 (16x8). `bias_shifts` maps a MAC
    var of main (conv2d or matmul) to what is subtracted from its float bias, per output channel, before the
    bias is quantized (the bias range rule still reads the bias as the model stores it). `roundings` maps
    the var that holds a MAC's weight (the conv2d itself, the permute_dims of a matmul's stored weight) to
    how its scaled weights become int8 values (`weight_rounding`), round to nearest for the others."""
    layer_of = layer_of_vars(mod["main"])
    kept = frozenset(layer_of[var] for var in float_layers)
    return _Rewriter(mod["main"], input_quants, quant_of, model_name, kept, dict(bias_shifts or {}),
                     dict(roundings or {})).run()


@dataclass
class QuantizedValue:
    """An integer tensor of the quantized main and its quantization."""

    var: relax.Expr
    quant: ActivationQuant


@dataclass
class _Rewriter:
    main: relax.Function
    input_quants: list[ActivationQuant]
    quant_of: dict[relax.Var, ActivationQuant]
    model_name: str
    float_layers: frozenset  # the layers (binding record tuples) that keep float weights and arithmetic
    bias_shifts: dict  # MAC var of the old main -> float amount subtracted from its bias, per output channel
    roundings: dict  # weight owner var of the old main -> its WeightRounding
    bb: relax.BlockBuilder = field(default_factory=relax.BlockBuilder)
    quantized: dict = field(default_factory=dict)  # float var of the old main -> QuantizedValue
    floats: dict = field(default_factory=dict)  # float var of the old main (inside its layer) -> new expr
    mac_scales: dict = field(default_factory=dict)  # new var of a MAC call -> its accumulator scales (float64)
    weight_scales: dict = field(default_factory=dict)  # new dequantized-weight var -> per-channel scales
    weight_deltas: dict = field(default_factory=dict)  # new dequantized-weight var -> dequantized - float weight
    weight_errors: dict = field(default_factory=dict)  # MAC var of the old main -> its weight's weight_deltas
    binding_records: list = field(default_factory=list)
    mac_biases: dict = field(default_factory=dict)  # weight owner var (_mac_biases) -> (MAC's data, bias)
    value_of: dict = field(default_factory=dict)  # binding var of the old main -> its value
    dequantized: dict = field(default_factory=dict)  # (layer output var, reading layer) -> its dequantize
    readers: dict = field(default_factory=dict)  # var of the old main -> the binding vars that read it
    leaving: set = field(default_factory=set)  # the old main's layer outputs (layer_outputs)

    @property
    def dtype(self) -> str:
        """The activations' integer type: every input's and layer output's quantization has it."""
        return self.input_quants[0].dtype if self.input_quants else "int8"

    def run(self) -> QuantizedGraph:
        types = {quant.dtype for quant in [*self.input_quants, *self.quant_of.values()]}
        if len(types) > 1:
            raise QuantizeError(f"{self.model_name}: activations of several types ({', '.join(sorted(types))})")
        layers = Layers.of(self.main)
        self.value_of = {b.var: b.value for b in bindings_of(self.main)}
        for binding in bindings_of(self.main):
            for read in vars_read(binding.value):
                self.readers.setdefault(read, []).append(binding.var)
        self.mac_biases = _mac_biases(self.main)
        params = [relax.Var(p.name, relax.TensorType(p.ty.shape, quant.dtype))
                  for p, quant in zip(self.main.params, self.input_quants)]
        for old, new, quant in zip(self.main.params, params, self.input_quants):
            self.quantized[old] = QuantizedValue(new, quant)
        self.leaving = set(layer_outputs(self.main))
        alias = {}
        with self.bb.function("main", params):
            with self.bb.dataflow():
                for position, binding in enumerate(bindings_of(self.main)):
                    indices = layers.bindings[position] if position < len(layers.bindings) else ()
                    if isinstance(binding.value, relax.Var):
                        alias[binding.var] = alias.get(binding.value, binding.value)
                        continue
                    self._binding(binding, indices, binding.var in self.leaving)
                returned = self.main.body.body
                result = self.quantized[alias.get(returned, returned)]
                out = self.bb.emit_output(result.var)
                self.binding_records.append(self.binding_records[-1] if self.binding_records else ())
            self.bb.emit_func_output(out)
        func = with_layers(self.bb.get()["main"], layers.records, self.binding_records)
        return QuantizedGraph(tvm.IRModule({"main": func}), list(self.input_quants), [result.quant],
                              dict(self.quantized), dict(self.weight_errors))

    def _emit(self, expr: relax.Expr, indices) -> relax.Var:
        self.binding_records.append(tuple(indices))
        return self.bb.emit(expr)

    def _binding(self, binding: relax.VarBinding, indices, leaves_layer: bool) -> None:
        value = binding.value
        if not isinstance(value, relax.Call):
            raise self._error(binding, f"a {type(value).__name__} binding")
        op = value.op.name
        if op in ("relax.quantize", "relax.dequantize"):
            raise self._error(binding, f"an already quantized tensor ({op})")
        floating = tuple(indices) in self.float_layers
        if op == "relax.permute_dims" and _is_matmul_weight(value) and not floating:
            self.floats[binding.var] = self._matmul_weight(value.args[0], self._least_scales(binding.var),
                                                           self.roundings.get(binding.var), indices)
            return
        if op in PASSTHROUGH and value.args[0] in self.quantized and not floating:
            self._passthrough(binding, indices, leaves_layer)
            return
        if op in DATA_MOVEMENT and leaves_layer and value.args[0] in self.floats and not floating:
            self._moved_after_quantize(binding, indices)
            return
        args = [self._operand(binding, position, arg, indices, floating) for position, arg in enumerate(value.args)]
        new = self._emit(relax.Call(value.op, args, value.attrs, value.ty_args), indices)
        if op in _MAC and not floating:
            self.mac_scales[new] = self._accumulator_scales(binding, args)
            self.weight_errors[binding.var] = self.weight_deltas[args[1]]
        if leaves_layer:
            quant = self._output_quant(binding.var, value)
            self.quantized[binding.var] = QuantizedValue(self._emit(_quantize(new, quant), indices), quant)
        else:
            self.floats[binding.var] = new

    def _passthrough(self, binding: relax.VarBinding, indices, leaves_layer: bool) -> None:
        """reshape, permute_dims, max_pool2d or avg_pool2d of an integer tensor: on the integer values, the
        same quantization (avg_pool2d widened to int32 and narrowed back, the form the integer pass lowers).
        Data movement may also start a layer (tflite_form's permute_dims before a convolution or a
        flatten); a pooling must be a layer's output."""
        value, source = binding.value, self.quantized[binding.value.args[0]]
        if not leaves_layer and value.op.name not in DATA_MOVEMENT:
            raise self._error(binding, "a pooling inside a layer")
        if value.op.name == "relax.nn.avg_pool2d":
            wide = self._emit(relax.op.astype(source.var, "int32"), indices)
            pooled = self._emit(relax.Call(value.op, [wide], value.attrs, value.ty_args), indices)
            new = self._emit(relax.op.astype(pooled, source.quant.dtype), indices)
        else:
            new = self._emit(relax.Call(value.op, [source.var, *value.args[1:]], value.attrs, value.ty_args),
                             indices)
        self.quantized[binding.var] = QuantizedValue(new, source.quant)

    def _output_quant(self, var: relax.Var, value: relax.Call) -> ActivationQuant:
        """The quantization of layer output `var`, computed by `value` (of the old main): the one TFLite fixes
        for its operator; its input's for a clip of an integer tensor (TFLite Micro's RELU6 clamps in its
        input's units and rescales nothing, so TFLite's converter gives it its input's quantization); else
        the one of `var`'s calibrated range."""
        fixed = FIXED_OUTPUT_QUANTS.get(value.op.name, {}).get(self.dtype)
        if fixed is not None:
            return fixed
        if value.op.name == "relax.clip" and value.args[0] in self.quantized:
            return self.quantized[value.args[0]].quant
        return self.quant_of[var]

    def _moved_after_quantize(self, binding: relax.VarBinding, indices) -> None:
        """A layer that ends in data movement (tflite_form's permute_dims back to the model's layout before an
        output): its float result is quantized first, with the quantization the operator before the move
        fixes or the range the moved tensor has, and moved as an integer tensor (TRANSPOSE, RESHAPE keep a
        quantization), so that the integer lowerings find the operator's own quantize."""
        value = binding.value
        quant = self._output_quant(binding.var, self.value_of[value.args[0]])
        quantized = self._emit(_quantize(self.floats[value.args[0]], quant), indices)
        moved = self._emit(relax.Call(value.op, [quantized, *value.args[1:]], value.attrs, value.ty_args), indices)
        self.quantized[binding.var] = QuantizedValue(moved, quant)

    def _operand(self, binding: relax.VarBinding, position: int, arg: relax.Expr, indices,
                 floating: bool) -> relax.Expr:
        """Operand `position` of `binding` in the QDQ graph: a layer output dequantized, a value of the same
        layer, a weight or bias quantized; a constant of an elementwise operator quantized to int8 when the
        operator is its layer alone (TFLite's constant operand: MUL by a scalar), kept float when it is a
        scalar of a layer's float function (HARD_SWISH's 3 and 6, matched whole by the integer pass)."""
        if isinstance(arg, relax.Tuple):  # a concatenation's pieces
            return relax.Tuple([self._operand(binding, position, field, indices, floating) for field in arg.fields])
        if isinstance(arg, relax.Var) and arg in self.floats:
            return self.floats[arg]
        if isinstance(arg, relax.Var) and arg in self.quantized:  # one dequantize per layer reading it
            key = (arg, tuple(indices))
            if key not in self.dequantized:
                value = self.quantized[arg]
                self.dequantized[key] = self._emit(_dequantize(value.var, value.quant), indices)
            return self.dequantized[key]
        op = binding.value.op.name
        if not isinstance(arg, Constant) or (op == "relax.clip" and position > 0) or floating:
            return arg  # a shape, a clip's bound, a float layer's constant or another non-tensor operand
        if op == "relax.nn.conv2d" and position == 1:
            return self._conv_weight(binding, arg, indices)
        if op == "relax.add" and position == 1 and binding.value.args[0] in self.floats:
            scales = self.mac_scales.get(self.floats[binding.value.args[0]])
            if scales is not None:
                return self._bias(arg, self.bias_shifts.get(binding.value.args[0]), scales, indices)
        others = [other for index, other in enumerate(binding.value.args) if index != position]
        if (op in _ELEMENTWISE and self.dtype == "int8" and all(o in self.quantized for o in others)
                and self._ends_layer(binding.var)):
            return self._elementwise_constant(arg, indices)
        if op in _ELEMENTWISE and arg.value.numpy().size == 1:
            return arg
        raise self._error(binding, f"a constant operand {position} of {op}")

    def _ends_layer(self, var: relax.Var) -> bool:
        """Whether `var` (of the old main) is its layer's result: it leaves the layer, or only a data movement
        that leaves it reads it (tflite_form's transpose back to the model's layout)."""
        if var in self.leaving:
            return True
        readers = self.readers.get(var, [])
        return (len(readers) == 1 and readers[0] in self.leaving
                and self.value_of[readers[0]].op.name in DATA_MOVEMENT)

    def _elementwise_constant(self, constant: Constant, indices) -> relax.Expr:
        """`constant` as TFLite's converter stores an elementwise operator's constant operand: int8, per
        tensor, from its own range (widened to hold 0), dequantized."""
        values = constant.value.numpy()
        quant = ActivationQuant.of_range(float(values.min()), float(values.max()))
        return self._emit(_dequantize(relax.const(quant.quantize(values)), quant), indices)

    def _conv_weight(self, binding: relax.VarBinding, weight: Constant, indices) -> relax.Expr:
        attrs = binding.value.attrs
        axis = {"HWIO": 3, "HWOI": 2}.get(str(attrs.kernel_layout))
        if axis is None or str(attrs.data_layout) != "NHWC":
            raise self._error(binding, f"a conv2d with {attrs.data_layout}/{attrs.kernel_layout} layouts")
        values, scales = _per_channel_int8(weight.value.numpy(), axis, self._least_scales(binding.var),
                                           self.roundings.get(binding.var))
        new = self._emit(_dequantize_per_channel(relax.const(values), scales, axis), indices)
        self.weight_scales[new] = scales
        self.weight_deltas[new] = _dequantized(values, scales, axis) - weight.value.numpy()
        return new

    def _matmul_weight(self, weight: Constant, least_scales: np.ndarray | None,
                       rounding: WeightRounding | None, indices) -> relax.Expr:
        """The (out, in) weight a FULLY_CONNECTED stores, per output channel (axis 0); made (in, out)
        by permute_dims, then dequantized, as the frontend imports an int8 FULLY_CONNECTED."""
        values, scales = _per_channel_int8(weight.value.numpy(), 0, least_scales, rounding)
        permuted = self._emit(relax.op.permute_dims(relax.const(values), [1, 0]), indices)
        new = self._emit(_dequantize_per_channel(permuted, scales, 1), indices)
        self.weight_scales[new] = scales
        self.weight_deltas[new] = (_dequantized(values, scales, 0) - weight.value.numpy()).T
        return new

    def _least_scales(self, owner: relax.Var) -> np.ndarray | None:
        """The least weight scales the bias of the MAC whose weight `owner` holds allows (`bias_range`), or
        None: no bias, or an input not quantized yet (the MAC then is refused by _accumulator_scales)."""
        data, bias = self.mac_biases.get(owner, (None, None))
        if data not in self.quantized or self.dtype != "int8":  # a 16x8 MAC's int64 bias has room
            return None
        return least_weight_scales(bias.value.numpy(), self.quantized[data].quant.scale)

    def _accumulator_scales(self, binding: relax.VarBinding, args: list[relax.Expr]) -> np.ndarray:
        data = binding.value.args[0]
        if data not in self.quantized:
            raise self._error(binding, f"a {binding.value.op.name} whose input is computed inside its layer")
        return float(self.quantized[data].quant.scale) * self.weight_scales[args[1]].astype(np.float64)

    def _bias(self, bias: Constant, shift: np.ndarray | None, scales: np.ndarray, indices) -> relax.Expr:
        values = bias.value.numpy().astype(np.float64).reshape(-1)
        if shift is not None:
            values = values - np.asarray(shift, np.float64).reshape(-1)
        if values.size != scales.size:
            raise QuantizeError(f"{self.model_name}: a bias of {values.size} values for {scales.size} channels")
        bias_type = np.int32 if self.dtype == "int8" else np.int64  # 16x8: the int64 bias TFLite's converter writes
        limit = 2.0 ** (np.iinfo(bias_type).bits - 1)
        quantized = np.clip(np.round(values / scales), -limit, np.nextafter(limit, 0.0)).astype(bias_type)
        if bias_type is np.int64:  # relax.dequantize refuses int64; the frontend's form of a 16x8 bias, one
            # binding per call (each binding gets one layer record)
            wide = self._emit(relax.op.astype(relax.const(tvm.runtime.tensor(quantized)), "float32"), indices)
            return self._emit(relax.op.multiply(wide, relax.const(scales.astype(np.float32))), indices)
        return self._emit(_dequantize_per_channel(relax.const(quantized), scales, 0), indices)

    def _error(self, binding: relax.VarBinding, what: str) -> QuantizeError:
        layers = Layers.of(self.main)
        position = [b.var for b in bindings_of(self.main)].index(binding.var)
        names = ", ".join(r.label for r in layers.of_binding(position)) or "(unnamed)"
        return QuantizeError(f"{self.model_name}: cannot quantize {what} at layer {names}")


def _quantize(value: relax.Expr, quant: ActivationQuant) -> relax.Expr:
    """The quantize of float `value` to `quant`'s integer type, per tensor."""
    return relax.op.quantize(value, relax.const(quant.scale), relax.const(quant.zero_point, "int32"), -1,
                             quant.dtype)


def _dequantize(value: relax.Expr, quant: ActivationQuant) -> relax.Expr:
    """The float32 dequantize of integer `value`, quantized per tensor as `quant` says."""
    return relax.op.dequantize(value, relax.const(quant.scale), relax.const(quant.zero_point, "int32"), -1,
                               "float32")


def _dequantize_per_channel(values: relax.Expr, scales: np.ndarray, axis: int) -> relax.Expr:
    """The float32 dequantize of symmetric integer `values` (zero points 0), one scale per index of `axis`."""
    return relax.op.dequantize(values, relax.const(scales.astype(np.float32)),
                               relax.const(np.zeros(scales.size, np.int32)), axis, "float32")


def _mac_biases(main: relax.Function) -> dict[relax.Var, tuple[relax.Expr, Constant]]:
    """Each MAC of main with a constant added to its result -> (its data operand, that bias constant), keyed
    by the var that holds the MAC's weight: the conv2d binding itself, or the permute_dims of a matmul's."""
    bindings = bindings_of(main)
    value_of = {b.var: b.value for b in bindings}
    biases = {}
    for binding in bindings:
        add = binding.value
        if not (isinstance(add, relax.Call) and add.op.name == "relax.add" and isinstance(add.args[1], Constant)):
            continue
        mac = value_of.get(add.args[0])
        if not isinstance(mac, relax.Call) or mac.op.name not in _MAC:
            continue
        owner = add.args[0] if mac.op.name == "relax.nn.conv2d" else mac.args[1]
        biases[owner] = (mac.args[0], add.args[1])
    return biases


def _is_matmul_weight(permute: relax.Call) -> bool:
    return isinstance(permute.args[0], Constant) and len(permute.args[0].value.shape) == 2


def _dequantized(values: np.ndarray, scales: np.ndarray, axis: int) -> np.ndarray:
    """The float32 weight the QDQ graph's dequantize of int8 `values` (per-channel `scales` along `axis`)
    computes."""
    shape = [1] * values.ndim
    shape[axis] = -1
    return values.astype(np.float32) * scales.reshape(shape)


def _per_channel_int8(weight: np.ndarray, axis: int, least_scales: np.ndarray | None = None,
                      rounding: WeightRounding | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per channel along `axis`: scale = max |w| / 127 (1.0 for an all-zero channel), or
    the channel's `least_scales` entry where that is larger (`bias_range`); values rounded half away
    from zero, clamped to [-127, 127], or by `rounding` from the weight divided by the scales."""
    moved = np.moveaxis(weight.astype(np.float64), axis, 0)
    peak = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0)
    if least_scales is not None and least_scales.size == scales.size:
        scales = np.maximum(scales, least_scales)
    scales = scales.astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    scaled = weight / scales.astype(np.float64).reshape(shape)
    values = rounding(scaled) if rounding is not None else round_to_int8_weight(scaled).astype(np.int8)
    return values, scales
