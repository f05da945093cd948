"""Relax rewrite: a 1-D convolution network's sequences [1, T, C] as images of T rows of one column, [1, T, 1, C].

TFLite's converter writes a Conv1D (a TCN's causal dilated convolutions) as PAD of the sequence [1, T, C] on its
time axis, RESHAPE to [1, 1, T', C] (time as the columns of a one-row image), CONV_2D (a 1 x K kernel, dilation
1 x d, no padding), RESHAPE back to [1, T, C']; the residual ADDs, the activations and a MEAN over time work on
the sequences. The streamed bands of `tvm_ext.transform.patch_prefix` split the rows of NHWC images, so
`sequences_as_rows` gives such a network the one form they stream: time along the rows.

Rules (each on the bindings of `main` in order, from a sequence that a 1-D convolution reads):
- a sequence [1, T, C] and its reshapes [1, 1, T, C] and [1, T, 1, C] are one tensor [1, T, 1, C] (a view: no
  binding); the first (a model input, say) is reshaped to it once;
- elementwise operators (quantize, dequantize, clips, activations, casts; add, subtract, multiply, maximum,
  minimum of two such tensors, or of one and a per-channel constant) compute it as they computed the sequence,
  a per-channel (de)quantize's axis moved to the channels;
- a convolution of the one-row image [1, 1, T, C] becomes the convolution of [1, T, 1, C] with the rows and
  columns of its kernel, strides, dilation and padding swapped (the weight reshaped: a 1 x K kernel is K x 1 in
  the same element order); one of [1, T, 1, C] stays as it is;
- a PAD of the time axis only, with the zero point of the dequantize that alone reads it (through its reshape)
  for the convolution that alone reads that: folded into the convolution's padding (a padded tap of the int8
  convolution holds the input zero point, which is what the PAD wrote: bit for bit the same sums); any other
  PAD of the time axis pads the rows;
- a MEAN over the time axis (and the one-element axis), not keeping its axes, is the MEAN over the rows and
  columns ([1, C] either way).
Any other reader of such a tensor reads it reshaped back to its own shape. The function is returned unchanged
(the same object) when no 1-D convolution reads a sequence. Each new binding keeps the layer records of the
bindings it stands for (a folded PAD's with its convolution's input).

Where: on the imported graph, before a streamed or patch plan (`tvm_ext.transform.patch_prefix`) is found and
run; the default compile does not take it, so its bundles are those of the graph as imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.layers import Layers, bindings_of, carry_layers, vars_read, with_layers

_ELEMENTWISE_UNARY = ("relax.dequantize", "relax.quantize", "relax.clip", "relax.nn.relu", "relax.nn.leakyrelu",
                      "relax.astype", "relax.sigmoid", "relax.tanh")
_ELEMENTWISE_BINARY = ("relax.add", "relax.subtract", "relax.multiply", "relax.maximum", "relax.minimum")
_QUANTIZE_OPS = ("relax.dequantize", "relax.quantize")


@dataclass(frozen=True)
class _Sequence:
    """How a tensor of the original graph lies in its [1, T, 1, C] form: its own shape and which of its axes
    holds time (1 of [1, T, C] or of [1, T, 1, C]; 2 of [1, 1, T, C])."""

    shape: tuple[int, ...]

    @property
    def time_axis(self) -> int:
        return 2 if len(self.shape) == 4 and self.shape[1] == 1 and self.shape[2] != 1 else 1

    @property
    def steps(self) -> int:
        return self.shape[self.time_axis]

    @property
    def channels(self) -> int:
        return self.shape[-1]

    @property
    def rows_shape(self) -> tuple[int, int, int, int]:
        return 1, self.steps, 1, self.channels

    @property
    def columns_are_time(self) -> bool:
        """Whether the tensor is a one-row image [1, 1, T, C] (a 1-D convolution of time along the columns)."""
        return len(self.shape) == 4 and self.time_axis == 2

    def axis_in_rows(self, axis: int) -> int:
        """Axis `axis` of the tensor (negative from the end) as an axis of [1, T, 1, C], negative when it was."""
        rank = len(self.shape)
        own = axis % rank
        new = 0 if own == 0 else 3 if own == rank - 1 else 1 if own == self.time_axis else 2
        return new - 4 if axis < 0 else new


def sequence_of(expr: relax.Expr) -> _Sequence | None:
    """The sequence form of `expr`: a tensor [1, T, C], [1, 1, T, C] or [1, T, 1, C] of static shape (T > 1)."""
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return None
    if not all(isinstance(d, tvm.tirx.IntImm) for d in ty.shape.values):
        return None
    shape = tuple(int(d) for d in ty.shape.values)
    if len(shape) == 3 and shape[0] == 1 and shape[1] > 1:
        return _Sequence(shape)
    if len(shape) == 4 and shape[0] == 1 and 1 in shape[1:3] and max(shape[1:3]) > 1:
        return _Sequence(shape)
    return None


def sequences_as_rows(func: relax.Function) -> relax.Function:
    """`func` with its 1-D convolution network in rows (see the module); `func` itself when it has none."""
    plan = _plan(func)
    if not plan.actions:
        return func
    mod = tvm.IRModule({"main": func})
    rewriter = _Rewriter(mod, plan)
    after = rewriter.visit_expr(func)
    main = carry_layers(func, after)
    layers = Layers.of(main)
    if layers.records:
        before = Layers.of(func)
        position = {b.var: i for i, b in enumerate(bindings_of(func))}
        own = {new: sorted({r for old in olds for r in (before.bindings[position[old]]
                                                        if position[old] < len(before.bindings) else ())})
               for new, olds in rewriter.stands_for.items()}
        main = with_layers(main, layers.records, [own.get(b.var, layers.bindings[i])
                                                  for i, b in enumerate(bindings_of(main))], layers.constants)
    return main


def dataflow_of(func: relax.Function, vars_in: Callable[[relax.Expr], list[relax.Var]] = vars_read
                ) -> tuple[dict[relax.Var, list[relax.Binding]], set[relax.Var], set[relax.Var]]:
    """Of `func`'s bindings: each var's readers (in order), the vars its result reads, and the vars computed from
    its inputs (the others from constants alone); `vars_in` finds the vars an expression reads."""
    bindings = bindings_of(func)
    readers: dict[relax.Var, list[relax.Binding]] = {}
    for binding in bindings:
        for var in vars_in(binding.value):
            readers.setdefault(var, []).append(binding)
    computed = set(func.params)
    for binding in bindings:
        if any(var in computed for var in vars_in(binding.value)):
            computed.add(binding.var)
    return readers, set(vars_in(func.body.body)), computed


# The rewrite of a binding (`_Plan.actions`): a view (no binding), a folded binding (no binding: its
# convolution computes it), or one computed on the rows (elementwise, pad, conv, mean).
VIEW, FOLDED, ELEMENTWISE, PAD, CONV, MEAN = "view", "folded", "elementwise", "pad", "conv", "mean"


@dataclass
class _Plan:
    """What becomes of each binding (its var -> an action above), each tensor's sequence form (`forms`), and the
    PAD folded into each convolution (the conv's var -> the PAD's binding)."""

    actions: dict
    forms: dict
    folded_pads: dict


def _plan(func: relax.Function) -> _Plan:
    """The actions of the rewrite, forward over `func`'s bindings (see the module's rules). A sequence enters the
    rows where a 1-D convolution reads it (`seeds`); from there each binding that reads one in a way a rule
    takes follows it."""
    bindings = bindings_of(func)
    readers, outputs, computed = dataflow_of(func)
    forms: dict[relax.Var, _Sequence] = {}  # the tensors in rows: original var -> its form
    actions: dict[relax.Var, str] = {}
    folded_pads: dict[relax.Var, relax.Binding] = {}

    def only_reader(var: relax.Var) -> relax.Binding | None:
        found = readers.get(var, [])
        return found[0] if len(found) == 1 and var not in outputs else None

    def convolved(var: relax.Var, alone: bool) -> relax.Binding | None:
        """The convolution that reads `var` (a 4-D sequence) as its data, directly or dequantized, and can take
        the rows; `alone`: only if it is `var`'s only reader (and the dequantize's)."""
        for reader in [only_reader(var)] if alone else readers.get(var, []):
            data = var
            if (reader is not None and _is_call(reader.value, ("relax.dequantize",))
                    and reader.value.args[0].same_as(var)):
                data = reader.var
                inner = [only_reader(data)] if alone else readers.get(data, [])
                reader = next((r for r in inner if r is not None and _is_call(r.value, ("relax.nn.conv2d",))), None)
            if (reader is not None and _is_call(reader.value, ("relax.nn.conv2d",))
                    and reader.value.args[0].same_as(data) and _convertible_conv(reader.value)):
                return reader
        return None

    def as_image(binding: relax.Binding) -> bool:
        """Whether `binding` reshapes a sequence into a one-row or one-column image a 1-D convolution reads."""
        form = sequence_of(binding.var)
        return (_is_call(binding.value, ("relax.reshape",)) and form is not None and len(form.shape) == 4
                and sequence_of(binding.value.args[0]) is not None
                and sequence_of(binding.value.args[0]).rows_shape == form.rows_shape
                and convolved(binding.var, False) is not None)

    def seeds(var: relax.Var) -> bool:
        """Whether a 1-D convolution reads sequence `var` (through a reshape into an image, after a time-axis
        PAD or not)."""
        if sequence_of(var) is None or var in outputs:
            return False
        for reader in readers.get(var, []):
            if _is_call(reader.value, ("relax.nn.pad",)) and _pads_time(reader.value, var):
                if any(as_image(r) for r in readers.get(reader.var, [])):
                    return True
            elif as_image(reader):
                return True
        return False

    def foldable(pad: relax.Binding) -> relax.Binding | None:
        """The convolution PAD `pad` folds into: it alone reads, through a dequantize of the PAD's value as zero
        point, the reshape that alone reads the PAD."""
        reshape = only_reader(pad.var)
        if reshape is None or not _is_call(reshape.value, ("relax.reshape",)) or sequence_of(reshape.var) is None:
            return None
        dequantize = only_reader(reshape.var)
        if dequantize is None or not _is_call(dequantize.value, ("relax.dequantize",)):
            return None
        zero_point = _scalar(dequantize.value.args[2])
        if zero_point is None or float(pad.value.attrs.pad_value) != zero_point:
            return None
        return convolved(reshape.var, True)

    for var in func.params:
        if seeds(var):
            forms[var] = sequence_of(var)
    for binding in bindings:
        value, var = binding.value, binding.var
        if var in actions or var in outputs or not isinstance(value, relax.Call) or not value.args:
            continue  # (in actions: the reshape and dequantize of a PAD folded ahead)
        data = value.args[0]
        form = sequence_of(var)
        if data not in forms:
            pass
        elif _is_call(value, ("relax.reshape",)) and form is not None and forms[data].rows_shape == form.rows_shape:
            actions[var] = VIEW
            forms[var] = form
        elif _is_call(value, ("relax.nn.pad",)) and form is not None and _pads_time(value, data):
            forms[var] = form
            conv = foldable(binding)
            if conv is None:
                actions[var] = PAD
            else:
                reshape = only_reader(var)
                dequantize = only_reader(reshape.var)
                actions[var] = actions[reshape.var] = actions[dequantize.var] = FOLDED
                forms[reshape.var], forms[dequantize.var] = sequence_of(reshape.var), sequence_of(dequantize.var)
                folded_pads[conv.var] = binding
        elif _is_call(value, ("relax.nn.conv2d",)) and _convertible_conv(value):
            actions[var] = CONV
            forms[var] = form
        elif _is_call(value, ("relax.mean",)) and _means_time(value, forms[data]):
            actions[var] = MEAN
        elif form is not None and form.shape == forms[data].shape and _elementwise(value, forms, computed):
            actions[var] = ELEMENTWISE
            forms[var] = form
        if var not in forms and seeds(var):
            forms[var] = sequence_of(var)
    return _Plan(actions, forms, folded_pads)


def _pads_time(pad: relax.Call, data: relax.Var) -> bool:
    """Whether `pad` is a constant padding of `data`'s time axis alone."""
    form = sequence_of(data)
    widths = [int(w) for w in pad.attrs.pad_width]
    return str(pad.attrs.pad_mode) == "constant" and form is not None and all(
        w == 0 for axis in range(len(form.shape)) if axis != form.time_axis for w in widths[2 * axis:2 * axis + 2])


def _convertible_conv(conv: relax.Call) -> bool:
    """Whether `conv` (NHWC) reads a sequence image and can take the rows: one of [1, T, 1, C] as it is, one of
    [1, 1, T, C] (time along the columns) with a kernel of one row, stride 1 and no padding of rows."""
    attrs = conv.attrs
    form = sequence_of(conv.args[0])
    if form is None or len(form.shape) != 4 or attrs.data_layout != "NHWC" or attrs.out_layout != "NHWC":
        return False
    if not form.columns_are_time:
        return True
    layout = str(attrs.kernel_layout)
    shape = [int(d) for d in conv.args[1].ty.shape.values]
    return ("H" in layout and "W" in layout and shape[layout.index("H")] == 1 and int(attrs.strides[0]) == 1
            and int(attrs.padding[0]) == 0 and int(attrs.padding[2]) == 0)


def _means_time(mean: relax.Call, form: _Sequence) -> bool:
    """Whether `mean` averages the time axis (and the one-element axis of an image), not keeping its axes."""
    axes = mean.attrs.axis
    if axes is None or bool(mean.attrs.keepdims):
        return False
    own = {int(a) % len(form.shape) for a in axes}
    return form.time_axis in own and own <= {1, 2} and (len(form.shape) == 4 or own == {1})


def _elementwise(value: relax.Call, forms: dict, computed: set) -> bool:
    """Whether `value` is elementwise in its first operand (a sequence), its other operands the same sequence
    form or constants of one value per channel (or one for all), a (de)quantize's parameters per tensor or
    per channel."""
    data = value.args[0]
    others = value.args[1:]
    if _is_call(value, _QUANTIZE_OPS):
        axis_in_rows = forms[data].axis_in_rows(int(value.attrs.axis)) % 4
        return axis_in_rows == 3 or all(_elements(arg) == 1 for arg in others)
    if _is_call(value, _ELEMENTWISE_UNARY):
        return all(not isinstance(arg, relax.Var) or arg not in computed for arg in others)
    if _is_call(value, _ELEMENTWISE_BINARY) and len(others) == 1:
        other = others[0]
        if isinstance(other, relax.Var) and other in forms:
            return forms[other].shape == forms[data].shape
        if isinstance(other, relax.Var) and other in computed:
            return False
        ty = other.ty
        if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
            return False
        shape = [int(d) for d in ty.shape.values]
        return len(shape) <= len(forms[data].shape) and all(d == 1 for d in shape[:-1])
    return False


@relax.expr_functor.mutator
class _Rewriter(relax.PyExprMutator):
    """Emits each binding as `_Plan.actions` says; `stands_for` maps each var it emits to the original vars whose
    layer records it carries."""

    def __init__(self, mod: tvm.IRModule, plan: _Plan) -> None:
        super().__init__(mod)
        self.plan = plan
        self.rows: dict[relax.Var, relax.Expr] = {}  # original var -> its [1, T, 1, C] tensor
        self.back: set[relax.Var] = set()  # original vars an ordinary reader reads: reshaped back, or a start
        self.stands_for: dict[relax.Var, list[relax.Var]] = {}
        self.value_of = {b.var: b.value for b in bindings_of(mod["main"])}

    def _emit(self, value: relax.Expr, name: str, *originals: relax.Var) -> relax.Var:
        var = self.builder_.emit(value, name_hint=name)
        self.stands_for[var] = list(originals)
        return var

    def _rows_of(self, var: relax.Expr, reader: relax.Var) -> relax.Expr:
        """`var` in rows: its rewritten tensor, or (a sequence the rewrite starts at) its reshape."""
        if var in self.rows:
            return self.rows[var]
        form = sequence_of(var)
        rows = self._emit(relax.op.reshape(self.visit_expr(var), form.rows_shape), f"{var.name}_rows", reader)
        self.rows[var] = rows
        self.back.add(var)  # a sequence the rewrite starts at: its other readers read it as it is
        return rows

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        var, value = binding.var, binding.value
        action = self.plan.actions.get(var)
        if action is None:
            for read in vars_read(value):  # an ordinary reader: the tensor back in its own shape
                if read in self.rows and read not in self.back:
                    shape = [int(d) for d in read.ty.shape.values]
                    self.set_var_remap(read, self._emit(relax.op.reshape(self.rows[read], shape), read.name,
                                                        read))
                    self.back.add(read)
            super().visit_var_binding_(binding)
            return
        if action == FOLDED:
            return
        data = value.args[0]
        if action == VIEW:
            self.rows[var] = self._rows_of(data, var)
            return
        if action == CONV:
            self.rows[var] = self._emit(self._conv(binding), var.name, var)
            return
        rows = self._rows_of(data, var)
        if action == PAD:
            form = sequence_of(data)
            widths = [int(w) for w in value.attrs.pad_width]
            before, after = widths[2 * form.time_axis:2 * form.time_axis + 2]
            new = relax.op.nn.pad(rows, [0, 0, before, after, 0, 0, 0, 0], str(value.attrs.pad_mode),
                                  float(value.attrs.pad_value))
        elif action == MEAN:  # no longer a sequence: its readers read it as it is
            self.set_var_remap(var, self._emit(relax.op.mean(rows, [1, 2], False), var.name, var))
            return
        else:
            new = self._elementwise(var, value, rows)
        self.rows[var] = self._emit(new, var.name, var)

    def _elementwise(self, var: relax.Var, value: relax.Call, rows: relax.Expr) -> relax.Expr:
        others = [self._rows_of(a, var) if a in self.plan.forms else self.visit_expr(a) for a in value.args[1:]]
        if _is_call(value, _QUANTIZE_OPS):
            axis = self.plan.forms[value.args[0]].axis_in_rows(int(value.attrs.axis))
            make = relax.op.quantize if value.op.name == "relax.quantize" else relax.op.dequantize
            return make(rows, others[0], others[1], axis, str(value.attrs.out_dtype))
        return relax.Call(value.op, [rows, *others], value.attrs)

    def _conv(self, binding: relax.VarBinding) -> relax.Expr:
        """The convolution on the rows: a one-row image's with its rows and columns swapped, a folded PAD's
        widths added to its padding of rows (its dequantize emitted here, of the PAD's input)."""
        conv = binding.value
        attrs = conv.attrs
        data, weight = conv.args[0], self.visit_expr(conv.args[1])
        form = sequence_of(data)
        strides, padding, dilation = ([int(v) for v in attrs.strides], [int(v) for v in attrs.padding],
                                      [int(v) for v in attrs.dilation])
        if form.columns_are_time:
            strides, dilation = strides[::-1], dilation[::-1]
            padding = [padding[1], padding[0], padding[3], padding[2]]
            layout = str(attrs.kernel_layout)
            shape = [int(d) for d in conv.args[1].ty.shape.values]
            h, w = layout.index("H"), layout.index("W")
            shape[h], shape[w] = shape[w], shape[h]
            weight = self._emit(relax.op.reshape(weight, shape), f"{getattr(conv.args[1], 'name', 'kernel')}_rows",
                                binding.var)
        pad = self.plan.folded_pads.get(binding.var)
        if pad is None:
            operand = self.rows[data]
        else:
            source = pad.value.args[0]
            widths = [int(w) for w in pad.value.attrs.pad_width]
            time = sequence_of(source).time_axis
            padding[0] += widths[2 * time]
            padding[2] += widths[2 * time + 1]
            dequantize = self.value_of[data]
            reshape = dequantize.args[0]
            operand = self._emit(relax.op.dequantize(self._rows_of(source, pad.var),
                                                     *(self.visit_expr(a) for a in dequantize.args[1:]),
                                                     sequence_of(data).axis_in_rows(int(dequantize.attrs.axis)),
                                                     str(dequantize.attrs.out_dtype)),
                                 data.name, pad.var, reshape, data)
        return relax.op.nn.conv2d(operand, weight, strides, padding, dilation, int(attrs.groups), "NHWC",
                                  str(attrs.kernel_layout), "NHWC", attrs.out_dtype)


def _is_call(value: relax.Expr, ops: tuple[str, ...]) -> bool:
    return isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in ops


def _scalar(expr: relax.Expr) -> float | None:
    """The value of a one-element constant, else None."""
    if isinstance(expr, Constant):
        values = expr.value.numpy().reshape(-1)
        return float(values[0]) if values.size == 1 else None
    return None


def _elements(expr: relax.Expr) -> int:
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return -1
    return int(np.prod([int(d) for d in ty.shape.values]))
