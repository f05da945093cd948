"""A quantized TRANSPOSE_CONV as its output phases: ordinary stride-1 convolutions, one per output residue, whose
int8 outputs interleave into the layer's output; so each phase gets the CONV_2D kernel and the backend's fast
schedules (the dual MAC tiles, Helium, the RISC-V MAC tiles), where the transpose convolution's own kernel is a
generic gather.

A stride-s transpose convolution (per axis; padding ``pad`` before the output) sends input row ``iy`` through tap
``ky`` to output row ``oy = iy * s + ky - pad``. Output row ``oy = s * m + p`` (its phase ``p = oy % s``) so sums
the taps ``ky = r + s * j`` with ``r = (p + pad) % s``, over input rows ``iy = m + c - j`` with
``c = (p + pad) // s``: a stride-1 convolution of the input by the phase's ``T = ceil((k - r) / s)`` taps, flipped
(tap ``t`` of the convolution is ``ky = r + s * (T - 1 - t)``), padded by ``T - 1 - c`` rows before the input. Every
phase computes ``ceil(out / s)`` rows (where ``out`` is not a multiple of the stride, the short phases one row
more, cut off after the interleave); its padded taps read the input's zero point, which adds nothing, as the
transpose convolution's missing taps. The phases' sums are the layer's own terms (integer sums do not depend on
their order), requantized with its multipliers, bias and activation: bit for bit TFLite Micro's result.

The rewrite is of the QDQ graph, before the int8 lowering: each phase is ``q([act](add(conv2d(dq(x), dq(W_p)),
dq(b))))`` with the layer's quantizations, and the interleave the int8 data movement the lowering copies: the
phases concatenated on a leading axis (each a contiguous piece, written in place of the join), then a reshape,
a transpose of the phase axes next to the rows and columns (TFLite's DEPTH_TO_SPACE's form), a reshape, and a
slice where the output is not whole phases. A layer the phases do not fit keeps its gather kernel
(`tvm_ext.kernels.transpose_conv`): a kernel smaller than its stride (a phase without taps), output padding beyond
the input's reach, groups or dilation, NCHW.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.layers import Layers, bindings_of, carry_layers, with_layers
from tvm_ext.transform.int8.graph import Graph, is_call_to

_CONV2D_TRANSPOSE = "relax.nn.conv2d_transpose"
_BETWEEN = frozenset({"relax.add", "relax.nn.relu", "relax.clip"})
"""The float operators between a transpose convolution and its output's quantize: its bias, its activation."""


@dataclass(frozen=True)
class PhaseAxis:
    """One spatial axis of a phase: the convolution's taps of the transpose convolution's kernel (in the
    convolution's order), its padding before and after the input, and its output rows."""

    taps: tuple[int, ...]
    pad_before: int
    pad_after: int
    rows: int


def phase_axes(in_size: int, kernel: int, stride: int, pad_before: int, out_size: int) -> Optional[list[PhaseAxis]]:
    """The ``stride`` phases of one axis of a transpose convolution (input ``in_size``, ``kernel`` taps, output
    ``out_size`` after ``pad_before`` rows are cut from its start), each computing ``ceil(out_size / stride)`` rows,
    more where a phase would be padded before the input more than after it (as many: every phase then is, the
    padding TFLite's own convolutions have, SAME's after at least its before; the Cortex-M border windows copied
    through a helper call are sized from the padding they fill, which a window padded before alone leaves short);
    None where a phase has no tap or would need negative padding (its rows start past the input's reach)."""
    rows = -(-out_size // stride)
    first = _axes(in_size, kernel, stride, pad_before, rows)
    if first is None:
        return None
    extra = max(axis.pad_before - axis.pad_after for axis in first)
    return first if extra <= 0 else _axes(in_size, kernel, stride, pad_before, rows + extra)


def _axes(in_size: int, kernel: int, stride: int, pad_before: int, rows: int) -> Optional[list[PhaseAxis]]:
    """`phase_axes` with each phase computing ``rows`` rows."""
    axes = []
    for phase in range(stride):
        residue, offset = (phase + pad_before) % stride, (phase + pad_before) // stride
        count = -(-(kernel - residue) // stride)
        before, after = count - 1 - offset, rows + offset - in_size
        if count <= 0 or before < 0 or after < 0:
            return None
        axes.append(PhaseAxis(tuple(residue + stride * (count - 1 - t) for t in range(count)), before, after, rows))
    return axes


def _call_of(expr: relax.Expr, var2val: dict, op_names: frozenset[str]) -> Optional[relax.Call]:
    """The call to one of ``op_names`` that ``expr`` is or is bound to, else None."""
    value = var2val.get(expr, expr) if isinstance(expr, relax.Var) else expr
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in op_names:
        return value
    return None


def _chain(quantize: relax.Call, var2val: dict) -> Optional[list[relax.Call]]:
    """The calls from ``quantize`` down to a conv2d_transpose through its bias and activation (first argument
    after first argument), the conv2d_transpose last; None when ``quantize`` ends no such chain."""
    chain = [quantize]
    while True:
        below = _call_of(chain[-1].args[0], var2val, _BETWEEN | {_CONV2D_TRANSPOSE})
        if below is None:
            return None
        chain.append(below)
        if below.op.name == _CONV2D_TRANSPOSE:
            return chain if len(chain) <= 4 else None


@dataclass(frozen=True)
class _Layer:
    """A transpose convolution the phases fit: the calls from its end (its quantize, or that of the activation
    after it) down to its conv2d_transpose, its int8 IOHW weights and their dequantize, and its phases' axes."""

    chain: list
    weight: np.ndarray
    dequantize: relax.Call
    rows: list[PhaseAxis]
    columns: list[PhaseAxis]
    tail: int = 0
    """How many of ``chain``'s first calls are the activation layer after the transpose convolution."""
    records: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    """The layer records of the transpose convolution's bindings and of the activation layer's."""


def _layer(chain: list[relax.Call], var2val: dict) -> Optional[_Layer]:
    """The layer ``chain`` ends (down to its conv2d_transpose, last) where the phases fit it: NHWC, an int8 IOHW
    weight constant dequantized per output channel, groups and dilation 1, a stride above 1 and phases with taps
    and padding (`phase_axes`); else None."""
    conv = chain[-1]
    a = conv.attrs
    dequantize = _call_of(conv.args[1], var2val, frozenset({"relax.dequantize"}))
    if (dequantize is None or not isinstance(dequantize.args[0], Constant) or a.data_layout != "NHWC"
            or a.out_layout != "NHWC" or a.kernel_layout != "IOHW" or int(a.groups) != 1
            or any(int(v) != 1 for v in a.dilation)):
        return None
    weight = dequantize.args[0].value.numpy()
    if weight.dtype != np.int8 or weight.ndim != 4 or int(dequantize.attrs.axis) not in (1, -3):
        return None
    _, in_h, in_w, _ = (int(d) for d in conv.args[0].ty.shape.values)
    _, out_h, out_w, _ = (int(d) for d in conv.ty.shape.values)
    strides, padding = [int(v) for v in a.strides], [int(v) for v in a.padding]
    rows = phase_axes(in_h, weight.shape[2], strides[0], padding[0], out_h)
    columns = phase_axes(in_w, weight.shape[3], strides[1], padding[1], out_w)
    if rows is None or columns is None or strides == [1, 1]:
        return None
    return _Layer(chain, weight, dequantize, rows, columns)


def _data_dtype(conv: relax.Call, var2val: dict) -> Optional[str]:
    """The stored type of the activation ``conv`` dequantizes (int8, int16: 16x8), else None."""
    dequantize = _call_of(conv.args[0], var2val, frozenset({"relax.dequantize"}))
    return None if dequantize is None else str(dequantize.args[0].ty.dtype)


def _activation_tail(var: relax.Var, graph: Graph) -> Optional[list[relax.VarBinding]]:
    """The bindings ``dq(var) -> relu | clip -> q`` that read the int8 ``var`` (each the only reader of the one
    before), a separate activation layer after the transpose convolution (TFLite's converter writes RELU so); None
    where another reads it."""
    tail = []
    for names in (("relax.dequantize",), ("relax.nn.relu", "relax.clip"), ("relax.quantize",)):
        reader = next((found for found in (graph.single_user(var, name) for name in names) if found is not None),
                      None)
        if reader is None or not reader.value.args[0].same_as(var):
            return None
        tail.append(reader)
        var = reader.var
    return tail


@relax.expr_functor.mutator
class _PhaseRewriter(relax.PyExprMutator):
    """Main with each quantized NHWC transpose convolution the phases fit replaced by its phases, a separate
    activation after it applied to each phase before they interleave (where it is the only reader): its
    kernel then fuses into the phase's convolution, as into the transpose convolution's."""

    def __init__(self, mod: tvm.IRModule, func: relax.Function) -> None:
        super().__init__(mod)
        graph = Graph(func)
        self.var2val = graph.var2val
        self.layers: dict[relax.Var, _Layer] = {}  # the var of a rewritten layer's end -> the layer
        self.skipped: set[relax.Var] = set()  # the bindings the phases replace before that end
        self.records: dict[relax.Var, tuple[int, ...]] = {}  # each var emitted -> its layer record positions
        records_of = {b.var: graph.layers.bindings[i] for i, b in enumerate(graph.bindings)
                      if i < len(graph.layers.bindings)}
        for binding in graph.bindings:
            value = binding.value
            if not is_call_to(value, "relax.quantize"):
                continue
            chain = _chain(value, self.var2val)
            layer = None if chain is None else _layer(chain, self.var2val)
            if layer is None:
                continue
            tail = _activation_tail(binding.var, graph)
            own = records_of.get(binding.var, ())
            if tail is None:
                self.layers[binding.var] = replace(layer, records=(own, own))
            else:
                self.layers[tail[-1].var] = replace(layer, chain=[b.value for b in reversed(tail)] + chain,
                                                    tail=len(tail), records=(own, records_of.get(tail[-1].var, ())))
                self.skipped |= {binding.var, *(b.var for b in tail[:-1])}

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        if binding.var in self.layers:
            self.set_var_remap(binding.var, self._phases(self.layers[binding.var]))
        elif binding.var not in self.skipped:
            super().visit_var_binding_(binding)

    def _phases(self, layer: _Layer) -> relax.Var:
        """The interleaved phases of ``layer``, emitted."""
        conv = layer.chain[-1]
        batch = int(conv.args[0].ty.shape.values[0])
        _, out_h, out_w, channels = (int(d) for d in conv.ty.shape.values)
        rows, columns, values = layer.rows, layer.columns, layer.weight
        own, activation = layer.records
        data = self.visit_expr(conv.args[0])
        zero_point = self.visit_expr(layer.dequantize.args[2])
        bias = self._bias(layer)
        # phases of one geometry (a kernel a multiple of the stride, VALID; or the stride itself) are one
        # convolution, their output channels stacked phase after phase: one kernel, its MAC tiles over them all
        merged = bias is not None and all(len({(len(a.taps), a.pad_before, a.pad_after) for a in axes}) == 1
                                          for axes in (rows, columns))
        groups = [[(r, c) for r in rows for c in columns]] if merged else [[(r, c)] for r in rows for c in columns]
        phases = []
        for group in groups:
            taps = np.concatenate([values[:, :, list(r.taps)][:, :, :, list(c.taps)] for r, c in group], axis=1)
            hwio = relax.const(np.ascontiguousarray(taps.transpose(2, 3, 0, 1)))  # T_y, T_x, I, phases x O
            scales = self._tiled(layer.dequantize.args[1], len(group), channels)
            row, column = group[0]
            phase = relax.op.nn.conv2d(
                data, relax.op.dequantize(hwio, scales, zero_point, axis=3), strides=1,
                padding=[row.pad_before, column.pad_before, row.pad_after, column.pad_after],
                data_layout="NHWC", kernel_layout="HWIO", out_dtype=conv.attrs.out_dtype)
            if bias is not None and bias[0] is None:  # no bias of its own
                phase = relax.op.add(self._emit(phase, own), self._tiled(bias[1], len(group), channels))
            # the bias, the activation, the quantize, as the layer's; then the activation layer's, if any
            for index, call in reversed(list(enumerate(layer.chain[:-1]))):
                rest = [self._tiled(bias[1], len(group), channels)] if bias is not None and call.same_as(bias[0]) \
                    else list(map(self.visit_expr, call.args[1:]))
                phase = relax.Call(call.op, [self._emit(phase, own if index + 1 >= layer.tail else activation), *rest],
                                   call.attrs, call.ty_args)
            phases.append(self._emit(phase, activation if layer.tail else own))
        if merged:
            return self._unstacked(phases[0], batch, len(rows), len(columns), rows[0].rows, columns[0].rows,
                                   channels, out_h, out_w, own)
        return self._interleaved(phases, batch, len(rows), len(columns), rows[0].rows, columns[0].rows,
                                 channels, out_h, out_w, own)

    def _bias(self, layer: _Layer) -> Optional[tuple[Optional[relax.Call], relax.Expr]]:
        """The layer's bias add (None where it has none) and the dequantize of its int32 constant (for a layer of
        int8 data without bias: zeros, the constant its kernel folds the input's zero point into,
        `tvm_ext.transform.int8.mac.MacKernel.folded_bias`, so its MAC helpers multiply raw int8); None where the
        bias is no dequantized constant (the phases then take it as it is, one convolution each)."""
        conv = layer.chain[-1]
        add = next((call for call in layer.chain[layer.tail:] if call.op.name == "relax.add"), None)
        if add is None:
            if _data_dtype(conv, self.var2val) != "int8":
                return None
            channels = int(conv.ty.shape.values[3])
            return None, relax.op.dequantize(relax.const(np.zeros(channels, np.int32)), relax.const(1.0, "float32"),
                                             relax.const(0, "int32"), axis=0)
        dequantize = _call_of(add.args[1], self.var2val, frozenset({"relax.dequantize"}))
        if dequantize is None or not all(isinstance(arg, Constant) for arg in dequantize.args):
            return None
        return add, dequantize

    def _tiled(self, expr: relax.Expr, times: int, channels: int) -> relax.Expr:
        """``expr`` for ``times`` phases stacked: a constant of one value per output channel (of ``channels``)
        repeated (a dequantize of such constants: its values and scales), any other (per-tensor) as it is."""
        if times == 1:
            return self.visit_expr(expr)
        if isinstance(expr, relax.Call):  # a bias's dequantize
            return relax.Call(expr.op, [self._tiled(arg, times, channels) for arg in expr.args], expr.attrs,
                              expr.ty_args)
        values = self.var2val.get(expr, expr) if isinstance(expr, relax.Var) else expr
        if not isinstance(values, Constant) or values.value.numpy().size != channels:
            return self.visit_expr(expr)
        return relax.const(np.tile(values.value.numpy().reshape(-1), times))

    def _emit(self, value: relax.Expr, records: tuple[int, ...]) -> relax.Var:
        """``value`` bound to a new var that implements the layers at ``records``."""
        var = self.builder_.emit(value)
        self.records[var] = records
        return var

    def _unstacked(self, stacked: relax.Var, batch: int, sy: int, sx: int, m: int, n: int, channels: int,
                   out_h: int, out_w: int, records: tuple[int, ...]) -> relax.Var:
        """The output [batch, out_h, out_w, channels] of the phases stacked on the channels of ``stacked``
        ([batch, m, n, sy * sx * channels], row phase after row phase) interleaved: DEPTH_TO_SPACE's copy."""
        return self._placed(stacked, [batch, m, n, sy, sx, channels], [0, 1, 3, 2, 4, 5], out_h, out_w, records)

    def _interleaved(self, phases: list[relax.Var], batch: int, sy: int, sx: int, m: int, n: int, channels: int,
                     out_h: int, out_w: int, records: tuple[int, ...]) -> relax.Var:
        """The output [batch, out_h, out_w, channels] of the phases (each [batch, m, n, channels], row phase after
        row phase, column phase after column phase) interleaved, the transpose convolution's (``records``)."""
        # the phases joined as a quantized CONCATENATION (each piece a contiguous block: written in place)
        quantize = self.builder_.lookup_binding(phases[0])
        scale, zero_point = quantize.args[1], quantize.args[2]
        pieces = [self._emit(relax.op.dequantize(phase, scale, zero_point, axis=0), records) for phase in phases]
        joined = self._emit(relax.op.quantize(self._emit(relax.op.concat(pieces, axis=0), records), scale, zero_point,
                                              axis=0, out_dtype=str(quantize.attrs.out_dtype)), records)
        return self._placed(joined, [sy, sx, batch, m, n, channels], [2, 3, 0, 4, 1, 5], out_h, out_w, records)

    def _placed(self, phases: relax.Var, grid: list[int], axes: list[int], out_h: int, out_w: int,
                records: tuple[int, ...]) -> relax.Var:
        """``phases`` seen as ``grid`` (the phase axes sy, sx among batch, rows m, columns n, channels) with its axes
        moved to [batch, m, sy, n, sx, channels] (``axes``), as [batch, m * sy, n * sx, channels], the rows and
        columns past [out_h, out_w] cut off: the transpose convolution's output."""
        moved = self._emit(relax.op.permute_dims(self._emit(relax.op.reshape(phases, grid), records), axes), records)
        batch, m, sy, n, sx, channels = (grid[axis] for axis in axes)
        result = self._emit(relax.op.reshape(moved, [batch, m * sy, n * sx, channels]), records)
        if (m * sy, n * sx) != (out_h, out_w):
            result = self._emit(relax.op.strided_slice(result, axes=[1, 2], begin=[0, 0], end=[out_h, out_w]),
                                records)
        return result


@tvm.transform.module_pass(opt_level=0, name="TransposeConvPhases")
class TransposeConvPhases:
    """`main` with its quantized transpose convolutions as their output phases (the module docstring), keeping the
    layer records: a phase's convolution, bias and quantize and the interleave are the transpose convolution's, the
    activation applied to each phase the activation layer's."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        rewriter = _PhaseRewriter(mod, main)
        rewritten = rewriter.visit_expr(main)
        if rewritten.same_as(main):
            return mod
        after = carry_layers(main, relax.analysis.remove_all_unused(rewritten))
        layers = Layers.of(after)
        if layers.records:
            after = with_layers(after, layers.records, [rewriter.records.get(b.var, layers.bindings[i])
                                                        for i, b in enumerate(bindings_of(after))], layers.constants)
        return tvm.IRModule({**dict(mod.functions), mod.get_global_var("main"): after}, attrs=mod.attrs)
