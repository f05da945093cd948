"""ONNX RNN, GRU and LSTM (TVM 0.27 has no converter for any), unrolled over their static sequence length into
Relax's float operators (matmul, add, multiply, subtract, sigmoid, tanh, relu, clip, strided_slice, reshape,
concat), which every backend compiles with its existing float kernels.

PyTorch writes nn.RNN, nn.GRU and nn.LSTM as these operators (GRU with linear_before_reset=1); onnxruntime's
quantize_static leaves them float, between a DequantizeLinear and a QuantizeLinear. The equations are the ONNX
specification's (one gate for RNN; z, r, h for GRU; i, o, f, c for LSTM; in that order along W's and R's rows):
each time step is one product of the step's input with W^T and one of the previous hidden state with R^T. A zero
initial state (no initial_h / initial_c) is not multiplied: its products are left out, as they are zero.

Converted: any batch and (static) sequence length; directions forward, reverse and bidirectional; layout 0
(onnxruntime, the self-test's reference, runs no other); the activations Sigmoid, Tanh and Relu (the defaults:
Tanh for RNN, Sigmoid and Tanh for GRU, Sigmoid, Tanh and Tanh for LSTM); B, initial_h, initial_c, LSTM's
peepholes P; `clip` of the gates' sums (as onnxruntime clips: not LSTM's Ct before h); sequence_lens when it is
a constant equal to the sequence length for every batch entry (the model check refuses one computed from a graph
input: onnx_operands). Refused in one line (OperatorRefused): shorter constant sequence lengths, other
activations, layout 1, LSTM's input_forget=1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.frontend.tflite_ops.refusal import OperatorRefused

Activation = Callable[[relax.Expr], relax.Expr]
# ONNX activation name -> the Relax operator; those with alpha/beta parameters are not converted.
_ACTIVATIONS: dict[str, Activation] = {"Sigmoid": relax.op.sigmoid, "Tanh": relax.op.tanh, "Relu": relax.op.nn.relu}


def _text(value: Any) -> str:
    """An ONNX string attribute (bytes) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _static_shape(value: relax.Expr, what: str) -> list[int]:
    """The static dimensions of tensor `value`; OperatorRefused naming `what` when any is not static."""
    dims = value.ty.shape.values if value.ty.shape is not None else None
    if dims is None or not all(isinstance(d, int) or hasattr(d, "value") for d in dims):
        raise OperatorRefused(f"{what} has no static shape")
    return [int(d) for d in dims]


@dataclass
class _Recurrence:
    """What RNN, GRU and LSTM share: the node's sizes and attributes, and the Relax values of one direction."""

    bb: relax.BlockBuilder
    gates: int
    inputs: Sequence[relax.Expr | None]
    seq: int
    batch: int
    hidden: int
    reverse: tuple[bool, ...]  # per direction: whether it runs from the last step to the first
    clip: float | None
    activations: list[list[Activation]]  # per direction, the node's activations (f, g[, h])

    def emit(self, expr: relax.Expr) -> relax.Expr:
        """`expr` bound to a var of its own."""
        return self.bb.emit(expr)

    def activate(self, function: Activation, value: relax.Expr) -> relax.Expr:
        """function(value), the value clipped to [-clip, clip] first when the node has a `clip`."""
        if self.clip is not None:
            value = self.emit(relax.op.clip(value, -self.clip, self.clip))
        return self.emit(function(value))

    def step_input(self, t: int) -> relax.Expr:
        """X's time step `t`, [batch, input]."""
        piece = self.emit(relax.op.strided_slice(self.inputs[0], axes=[0], begin=[t], end=[t + 1]))
        return self.emit(relax.op.reshape(piece, [self.batch, -1]))

    def transposed(self, index: int, direction: int) -> relax.Expr:
        """Input `index` (W or R, [dirs, gates * hidden, cols]) of `direction`, transposed: [cols, gates * hidden]."""
        value = self.inputs[index]
        if isinstance(value, Constant):
            return relax.const(np.ascontiguousarray(value.value.numpy()[direction].T))
        rows = self.emit(relax.op.strided_slice(value, axes=[0], begin=[direction], end=[direction + 1]))
        matrix = self.emit(relax.op.reshape(rows, [self.gates * self.hidden, -1]))
        return self.emit(relax.op.permute_dims(matrix, [1, 0]))

    def biases(self, direction: int) -> tuple[relax.Expr | None, relax.Expr | None]:
        """B's Wb and Rb of `direction`, each [1, gates * hidden]; (None, None) without B."""
        value = self.inputs[3] if len(self.inputs) > 3 else None
        if value is None:
            return None, None
        width = self.gates * self.hidden
        return tuple(self.section(self.row(value, direction), part * width, (part + 1) * width) for part in (0, 1))

    def initial(self, index: int, direction: int) -> relax.Expr | None:
        """Initial state input `index` (initial_h or initial_c, [dirs, batch, hidden]) of `direction`,
        [batch, hidden]; None when the node has none (a zero state)."""
        value = self.inputs[index] if len(self.inputs) > index else None
        if value is None:
            return None
        piece = self.emit(relax.op.strided_slice(value, axes=[0], begin=[direction], end=[direction + 1]))
        return self.emit(relax.op.reshape(piece, [self.batch, self.hidden]))

    def row(self, value: relax.Expr, direction: int) -> relax.Expr:
        """Row `direction` of a [dirs, n] input (B or P), [1, n]."""
        if isinstance(value, Constant):
            return relax.const(value.value.numpy()[direction:direction + 1])
        return self.emit(relax.op.strided_slice(value, axes=[0], begin=[direction], end=[direction + 1]))

    def section(self, value: relax.Expr | None, begin: int, end: int) -> relax.Expr | None:
        """Columns [begin, end) of a 2-D value (None stays None); a constant's in numpy."""
        if value is None:
            return None
        if isinstance(value, Constant):
            return relax.const(np.ascontiguousarray(value.value.numpy()[:, begin:end]))
        return self.emit(relax.op.strided_slice(value, axes=[1], begin=[begin], end=[end]))

    def gate(self, value: relax.Expr | None, k: int) -> relax.Expr | None:
        """Gate `k`'s columns of a [rows, gates * hidden] value."""
        return self.section(value, k * self.hidden, (k + 1) * self.hidden)

    def affine(self, x: relax.Expr | None, weight_t: relax.Expr, bias: relax.Expr | None) -> relax.Expr | None:
        """x @ weight_t + bias, where a None `x` (a zero state) gives the bias alone (None without one)."""
        if x is None:
            return bias
        product = self.emit(relax.op.matmul(x, weight_t))
        return product if bias is None else self.emit(relax.op.add(product, bias))

    def add(self, *values: relax.Expr | None) -> relax.Expr:
        """The sum of the values that are not None (at least one is)."""
        present = [v for v in values if v is not None]
        total = present[0]
        for value in present[1:]:
            total = self.emit(relax.op.add(total, value))
        return total

    def mul(self, a: relax.Expr | None, b: relax.Expr | None) -> relax.Expr | None:
        """a * b, None when either is None (a zero)."""
        return None if a is None or b is None else self.emit(relax.op.multiply(a, b))

    def outputs(self, states: list[list[relax.Expr]], finals: list[list[relax.Expr]]) -> relax.Tuple:
        """The node's outputs: Y from `states` (per direction, the hidden state of each time step, in time order)
        and Y_h (Y_c ...) from `finals` (per output, each direction's last state), each [batch, hidden]."""
        dirs = len(states)
        # One concat of every (step, direction) state, in Y's order.
        pieces = [self.emit(relax.op.reshape(states[d][t], [1, self.batch, self.hidden]))
                  for t in range(self.seq) for d in range(dirs)]
        y = relax.op.reshape(self.emit(relax.op.concat(pieces, axis=0)), [self.seq, dirs, self.batch, self.hidden])
        lasts = [relax.op.concat([self.emit(relax.op.reshape(state, [1, self.batch, self.hidden]))
                                  for state in final], axis=0) for final in finals]  # [dirs, batch, hidden]
        return relax.Tuple([y, *lasts])


def _recurrence(bb: relax.BlockBuilder, op: str, gates: int, default_activations: tuple[str, ...],
                inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> _Recurrence:
    """The shared facts of RNN, GRU or LSTM node `op` (`gates` gates per unit); OperatorRefused for what is not
    converted."""
    direction = _text(attrs.get("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise OperatorRefused(f"{op} direction '{direction}' is not one of forward, reverse, bidirectional")
    reverse = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}[direction]
    names = [_text(a) for a in attrs.get("activations", [])] or list(default_activations) * len(reverse)
    if len(names) != len(default_activations) * len(reverse):
        raise OperatorRefused(f"{op} activations {names}: {len(default_activations)} per direction expected")
    unknown = sorted({name for name in names if name not in _ACTIVATIONS})
    if unknown:
        raise OperatorRefused(f"{op} activations {unknown} are not converted (only {', '.join(_ACTIVATIONS)})")
    per = len(default_activations)
    activations = [[_ACTIVATIONS[n] for n in names[d * per:(d + 1) * per]] for d in range(len(reverse))]
    if int(attrs.get("layout", 0)) != 0:
        raise OperatorRefused(f"{op} layout {attrs['layout']} (batch first) is not converted")
    seq, batch = _static_shape(inputs[0], f"{op} input X")[:2]
    hidden = _static_shape(inputs[2], f"{op} input R")[-1]
    if "hidden_size" in attrs and int(attrs["hidden_size"]) != hidden:
        raise OperatorRefused(f"{op} hidden_size {attrs['hidden_size']} differs from R's {hidden} columns")
    lengths = inputs[4] if len(inputs) > 4 else None
    if lengths is not None:
        if not isinstance(lengths, Constant):
            raise OperatorRefused(f"{op} sequence_lens must be a constant")
        if np.any(lengths.value.numpy() != seq):
            raise OperatorRefused(f"{op} sequence_lens {lengths.value.numpy().tolist()} shorter than the "
                                  f"sequence ({seq} steps) are not converted")
    clip = float(attrs["clip"]) if "clip" in attrs else None
    return _Recurrence(bb, gates, inputs, seq, batch, hidden, reverse, clip, activations)


def rnn(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Tuple:
    """An ONNX RNN node as the tuple (Y, Y_h), unrolled over its sequence."""
    cell = _recurrence(bb, "RNN", 1, ("Tanh",), inputs, attrs)
    states, finals = [], []
    for d, reverse in enumerate(cell.reverse):
        (f,) = cell.activations[d]
        w_t, r_t = cell.transposed(1, d), cell.transposed(2, d)
        wb, rb = cell.biases(d)
        h = cell.initial(5, d)
        hidden_states: list[relax.Expr] = [None] * cell.seq  # type: ignore[list-item]
        for t in (reversed(range(cell.seq)) if reverse else range(cell.seq)):
            h = cell.activate(f, cell.add(cell.affine(cell.step_input(t), w_t, wb), cell.affine(h, r_t, rb)))
            hidden_states[t] = h
        states.append(hidden_states)
        finals.append(h)
    return cell.outputs(states, [finals])


def gru(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Tuple:
    """An ONNX GRU node as the tuple (Y, Y_h), unrolled over its sequence."""
    cell = _recurrence(bb, "GRU", 3, ("Sigmoid", "Tanh"), inputs, attrs)
    linear_before_reset = int(attrs.get("linear_before_reset", 0)) != 0
    states, finals = [], []
    for d, reverse in enumerate(cell.reverse):
        f, g = cell.activations[d]
        w_t, r_t = cell.transposed(1, d), cell.transposed(2, d)
        wb, rb = cell.biases(d)
        r_zr_t, r_h_t = cell.section(r_t, 0, 2 * cell.hidden), cell.section(r_t, 2 * cell.hidden, 3 * cell.hidden)
        h = cell.initial(5, d)
        hidden_states: list[relax.Expr] = [None] * cell.seq  # type: ignore[list-item]
        for t in (reversed(range(cell.seq)) if reverse else range(cell.seq)):
            gx = cell.affine(cell.step_input(t), w_t, wb)
            if linear_before_reset:
                gh = cell.affine(h, r_t, rb)
                gh_zr, gh_h = cell.section(gh, 0, 2 * cell.hidden), cell.gate(gh, 2)
            else:
                gh_zr = cell.affine(h, r_zr_t, cell.section(rb, 0, 2 * cell.hidden))
            zr = cell.add(cell.section(gx, 0, 2 * cell.hidden), gh_zr)
            z, r = cell.activate(f, cell.section(zr, 0, cell.hidden)), cell.activate(f, cell.gate(zr, 1))
            if linear_before_reset:
                candidate = cell.add(cell.gate(gx, 2), cell.mul(r, gh_h))
            else:
                candidate = cell.add(cell.gate(gx, 2), cell.affine(cell.mul(r, h), r_h_t, None), cell.gate(rb, 2))
            h_tilde = cell.activate(g, candidate)
            # H = (1 - z) * h~ + z * H_prev = h~ + z * (H_prev - h~); with a zero H_prev, h~ - z * h~.
            if h is None:
                h = cell.emit(relax.op.subtract(h_tilde, cell.mul(z, h_tilde)))
            else:
                h = cell.add(h_tilde, cell.mul(z, cell.emit(relax.op.subtract(h, h_tilde))))
            hidden_states[t] = h
        states.append(hidden_states)
        finals.append(h)
    return cell.outputs(states, [finals])


def lstm(bb: relax.BlockBuilder, inputs: Sequence[relax.Expr | None], attrs: dict[str, Any]) -> relax.Tuple:
    """An ONNX LSTM node as the tuple (Y, Y_h, Y_c), unrolled over its sequence."""
    if int(attrs.get("input_forget", 0)) != 0:
        raise OperatorRefused("LSTM input_forget=1 (coupled input and forget gates) is not converted")
    cell = _recurrence(bb, "LSTM", 4, ("Sigmoid", "Tanh", "Tanh"), inputs, attrs)
    peepholes = inputs[7] if len(inputs) > 7 else None
    states, finals_h, finals_c = [], [], []
    for d, reverse in enumerate(cell.reverse):
        f, g, act_h = cell.activations[d]
        w_t, r_t = cell.transposed(1, d), cell.transposed(2, d)
        wb, rb = cell.biases(d)
        p = cell.row(peepholes, d) if peepholes is not None else None
        p_i, p_o, p_f = (cell.gate(p, k) for k in range(3))
        h, c = cell.initial(5, d), cell.initial(6, d)
        hidden_states: list[relax.Expr] = [None] * cell.seq  # type: ignore[list-item]
        for t in (reversed(range(cell.seq)) if reverse else range(cell.seq)):
            gates = cell.add(cell.affine(cell.step_input(t), w_t, wb), cell.affine(h, r_t, rb))
            i = cell.activate(f, cell.add(cell.gate(gates, 0), cell.mul(p_i, c)))
            forget = cell.activate(f, cell.add(cell.gate(gates, 2), cell.mul(p_f, c)))
            c = cell.add(cell.mul(forget, c), cell.mul(i, cell.activate(g, cell.gate(gates, 3))))
            o = cell.activate(f, cell.add(cell.gate(gates, 1), cell.mul(p_o, c)))
            # Ct itself, never clipped: onnxruntime (the self-test's reference) clips only the gates' sums.
            h = cell.mul(o, cell.emit(act_h(c)))
            hidden_states[t] = h
        states.append(hidden_states)
        finals_h.append(h)
        finals_c.append(c)
    return cell.outputs(states, [finals_h, finals_c])


CONVERTERS = {"GRU": gru, "LSTM": lstm, "RNN": rnn}
