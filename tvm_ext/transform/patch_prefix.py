"""Relax pass: run the first stages of a CNN patch by patch (MCUNetV2's patch-based inference), as an ordinary graph.

`RunPrefixInPatches(cut, grid)` replaces the prefix of `main` up to the output of its `cut`-th window stage by
rows x columns patch branches and the concatenation of their outputs. Each branch slices its receptive field
(halo included, clipped at the image border: `tvm_ext.patch_geometry`) out of the stage input and runs the
prefix's operators on it, each window operator with the padding the whole layer has at the true image border
and none elsewhere (so a padded tap holds what the whole layer's holds: the zero point of an int8 convolution,
nothing for a pool, whose border windows average or take the maximum of the same taps). Every patch therefore
computes exactly the values of the whole layer there, and the concatenation is the stage output, bit for bit.
The memory planner, its checker and the poisoned-arena build then see an ordinary graph: a branch's tiles are
live only while it runs, so the prefix's peak is the stage output (its pieces, then the concatenation, which
copies them) plus one branch's tiles.

Where: on the imported graph, before the int8 lowering (`tvm_ext.lower.pipeline`). Each branch keeps the
frontend's quantize/dequantize pattern of every layer, so the lowering gives each patch the same integer kernel
as the whole layer (smaller shapes, border padding only), and the concatenation joins the int8 pieces
themselves (the lowering's CONCATENATION of int8 tensors: a copy).

The prefix is a chain from a model input (or from its reshape into an NHWC image: micro_speech's flat features; a
1-D convolution network's sequences [1, T, C] are first made images of T rows, `RunPrefixInPatches` taking
`tvm_ext.transform.sequence_rows.sequences_as_rows` of `main`, its causal PADs folded into the convolutions):
each of its tensors read by window operators in NHWC (conv2d,
max_pool2d, avg_pool2d, not ceil mode), elementwise ones (quantize, dequantize, clip, relu, leaky relu, and add,
subtract, multiply, maximum, minimum with a tensor constant over the channels) with one operand on the chain,
or joins (an add of two of its tensors of one shape: a residual block's). `window_chain` finds it; a stage is
one window operator or join and the elementwise operators around it up to the tensor the next stages
dequantize (or cast: an int8 average pool sums in int32). Where a tensor has several readers the chain
branches, and a join rejoins it: patch grids run only the stages before (`WindowChain.linear`), streamed bands
(`_streamed`) the whole graph up to a stage after which it ends in one value (`WindowChain.cuts`).

A chain may end in a dense tail (`_continues_dense`): a FULLY_CONNECTED over a stage output flattened row after row
(reshape to [1, H * W * C], dequantize, matmul by constant weights, bias, quantize, clips), or a MEAN over its rows
and columns (summed band by band as the global average pool, rescaled once by `mean_of_sums` in
`tvm_ext/kernels/reduce.py`, TFLite's MEAN arithmetic). Its stage is a reduction
(`WindowStage.reduces`, like a global average pool): streamed bands add each band's partial dot products to int32
sums (`tvm_ext.kernels.dense.dense_rows`; the weights one constant, each band reading its rows' columns), and the
sums are requantized once after the last band (`requantized_sums`, the layer's multipliers, zero points and clamp as
the int8 lowering matches them), so the stage before never holds its whole output; int32 sums add up in any order,
so the output is the layer's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te

from tvm_ext.kernels import OutputStage, Rounding
from tvm_ext.kernels.dense import dense_rows, requantized_sums
from tvm_ext.kernels.pool import average_of_sums, row_sums
from tvm_ext.kernels.reduce import mean_of_sums
from tvm_ext.kernels.zero_point_fold import fold_zero_point_into_bias
from tvm_ext.layers import OPAQUE_PATTERN, Layers, bindings_of, carry_layers, with_layers
from tvm_ext.patch_geometry import (Range, Region, WindowStage, patch_regions, readers_of, receptive_rows, split,
                                    stream_rows, top_stage, valid_cuts)
from tvm_ext.transform.sequence_rows import dataflow_of, sequences_as_rows

_WINDOW_OPS = ("relax.nn.conv2d", "relax.nn.max_pool2d", "relax.nn.avg_pool2d")
_UNARY_OPS = ("relax.dequantize", "relax.quantize", "relax.clip", "relax.nn.relu", "relax.nn.leakyrelu", "relax.astype")
_CHANNEL_CONSTANT_OPS = ("relax.add", "relax.subtract", "relax.multiply", "relax.maximum", "relax.minimum")
_DENSE_OP = "relax.matmul"  # a dense tail's (`_continues_dense`): a FULLY_CONNECTED over a flattened stage output
_MEAN_OP = "relax.mean"  # a dense tail's too: a MEAN over the rows and columns of a stage output
_REDUCING_OPS = (_DENSE_OP, _MEAN_OP)
# a global average pool sums band by band over these (an integer pool's input cast to int32, a float pool's own)
_SUMMED_DTYPES = ("int32", "float32")


@tvm_ffi.register_error
class PatchPlanError(RuntimeError):
    """A cut or grid the model's window chain cannot take (one line: what and the chain's limits). Raised behind
    TVM's FFI, which re-creates it from its message alone."""


@dataclass(frozen=True)
class ChainStage:
    """One stage of the window chain: its geometry, the position (in the chain's bindings) of its window
    operator (or join) and of its output binding, the stages it reads (0-based, -1 the chain's source; one for a
    window stage, each operand of a join), and the positions of its bindings: for each stage it reads, those
    from that stage's output to the operand (a dequantize), then those after the window operator up to its
    output."""

    geometry: WindowStage
    window: int
    output: int
    inputs: tuple[int, ...] = ()
    before: tuple[tuple[int, ...], ...] = ()
    after: tuple[int, ...] = ()


@dataclass(frozen=True)
class WindowChain:
    """The graph of bindings from a model input `source` through the window stages (see the module): a chain,
    or, past a tensor several stages read, branches that rejoin (a residual ADD); `linear` stages first form a
    chain (each read by the next alone)."""

    source: relax.Var
    bindings: tuple[relax.Binding, ...]
    stages: tuple[ChainStage, ...]
    cuts: tuple[int, ...] = ()  # the stages (1-based) after which it ends in one value (`_cuts`)

    @property
    def geometries(self) -> list[WindowStage]:
        return [stage.geometry for stage in self.stages]

    @property
    def inputs(self) -> list[tuple[int, ...]]:
        return [stage.inputs for stage in self.stages]

    @property
    def linear(self) -> int:
        """How many stages from the first form a chain: each reads the one before alone, (but the last) only the
        next reads it, and the graph ends in one value after each."""
        readers = readers_of(self.inputs, len(self.stages))
        count = 0
        while count < len(self.stages) and count + 1 in self.cuts and self.stages[count].inputs == (count - 1,) and (
                count == 0 or readers[count - 1] == [count]):
            count += 1
        return count

    def prefix(self, cut: int) -> list[int]:
        """The positions of the bindings of stages[:cut], in order."""
        return sorted({i for stage in self.stages[:cut] for i in (*(j for b in stage.before for j in b),
                                                                   stage.window, *stage.after)})


def window_chain(func: relax.Function) -> WindowChain | None:
    """The longest window chain from one of `func`'s inputs (the first with the most stages), or None when
    no input starts a chain of at least two window stages."""
    bindings = bindings_of(func)
    # computed: the vars computed from an input (the chain's operators read none but its own)
    readers, outputs, computed = dataflow_of(func, _vars_in)
    best = None
    for source in _sources(func, bindings):
        chain = _chain_from(source, bindings, readers, outputs, computed)
        if chain is not None and (best is None or len(chain.stages) > len(best.stages)):
            best = chain
    return best


def _sources(func: relax.Function, bindings: list[relax.Binding]) -> list[relax.Var]:
    """Where a chain may start: each of `func`'s inputs, or for an input that is no NHWC tensor, each reshape of
    it into one (a view of its elements in their order: micro_speech's 1960 features as 49 rows of 40)."""
    sources = []
    for param in func.params:
        if _is_nhwc_tensor(param):
            sources.append(param)
            continue
        sources += [b.var for b in bindings if _is_call(b.value, ("relax.reshape",))
                    and b.value.args[0].same_as(param) and _is_nhwc_tensor(b.var)]
    return sources


def _chain_from(source: relax.Var, bindings: list[relax.Binding], readers: dict, outputs: set,
                computed: set) -> WindowChain | None:
    """The window graph from `source`: the bindings in order that continue it (`_continues_chain` on one of its
    tensors, or a `_joins` of two), up to the first that reads one of its tensors and does not; then its
    stages (`_stages_of`)."""
    if not _is_nhwc_tensor(source):
        return None
    region = {source}
    flat: dict[relax.Var, bool] = {}  # the dense tail's tensors (`_continues_dense`): whether before its matmul
    chain: list[relax.Binding] = []
    for binding in bindings:
        value = binding.value
        read = [var for var in _vars_in(value) if var in region]
        if not read:
            continue
        first = value.args[0] if isinstance(value, relax.Call) and value.args else None
        constant_others = not any(var in computed for arg in getattr(value, "args", [])[1:] for var in _vars_in(arg))
        dense = _continues_dense(value, first, flat) if first is not None and first in region and constant_others \
            else None
        continues = first is not None and first in region and first not in flat and constant_others and (
            _continues_chain(value, first))
        if not (continues or dense is not None or _joins(value, region)) or any(var in outputs for var in read):
            break
        chain.append(binding)
        region.add(binding.var)
        if dense is not None:
            flat[binding.var] = dense
    stages = _stages_of(source, chain, readers)
    if len(stages) < 2:
        return None
    return WindowChain(source, tuple(chain), tuple(stages), _cuts(chain, stages, readers, outputs))


def _continues_dense(value: relax.Expr, first: relax.Var, flat: dict) -> bool | None:
    """Whether `value` continues the chain's dense tail, a FULLY_CONNECTED over a flattened stage output: the
    reshape of a one-image NHWC tensor of several rows into [1, H * W * C] (the rows one after another), the
    elementwise operators on it (dequantize: per tensor), the matmul of it by a constant [K, O] weight, and the
    elementwise operators on its [1, O] result (a bias or another per-unit constant added, quantize, clip; a
    second matmul ends the tail). The value `flat` records for the result (True: before the matmul), or None
    when `value` does not continue it. `first` is its first operand, on the chain; the caller checks that the
    others are constants."""
    if _is_call(value, ("relax.reshape",)) and first not in flat:
        if not _is_nhwc_tensor(first) or not _is_rank2(value):
            return None
        batch, height, width, channels = (int(d) for d in first.ty.shape.values)
        shape = [int(d) for d in value.ty.shape.values]
        return True if batch == 1 and height > 1 and shape == [1, height * width * channels] else None
    if _is_call(value, (_MEAN_OP,)) and first not in flat:
        axes = value.attrs.axis
        if not _is_nhwc_tensor(first) or axes is None or sorted(int(a) % 4 for a in axes) != [1, 2]:
            return None
        return False if _is_unit_vector(value) else None
    if first not in flat or not _is_unit_vector(value) or not value.args[0].same_as(first):
        return None
    others = value.args[1:]
    if _is_call(value, ("relax.matmul",)):
        return False if flat[first] and len(others) == 1 and _is_rank2(others[0]) else None
    if _is_call(value, ("relax.dequantize", "relax.quantize")):
        return flat[first] if all(_elements(arg) == 1 for arg in others) else None
    if _is_call(value, ("relax.clip", "relax.nn.relu")):
        return flat[first]
    if _is_call(value, _CHANNEL_CONSTANT_OPS) and len(others) == 1 and not flat[first]:
        units = int(value.ty.shape[-1])
        return False if _elements(others[0]) in (1, units) else None
    return None


def _is_rank2(expr: relax.Expr) -> bool:
    ty = expr.ty
    return isinstance(ty, relax.TensorType) and ty.ndim == 2 and isinstance(ty.shape, relax.ShapeExpr) and all(
        isinstance(d, tvm.tirx.IntImm) for d in ty.shape.values)


def _is_unit_vector(expr: relax.Expr) -> bool:
    """Whether `expr` is one row of values: [1, N], or [1, 1, 1, N] (a MEAN that keeps its axes)."""
    if _is_rank2(expr):
        return int(expr.ty.shape[0]) == 1
    return _is_nhwc_tensor(expr) and [int(d) for d in expr.ty.shape.values][:3] == [1, 1, 1]


def _joins(value: relax.Expr, region: set) -> bool:
    """Whether `value` adds two tensors of the graph (`region`) of its own shape element by element (a residual
    ADD)."""
    return (_is_call(value, ("relax.add",)) and len(value.args) == 2 and all(a in region for a in value.args)
            and not value.args[0].same_as(value.args[1]) and _is_nhwc_tensor(value)
            and all(_is_nhwc_tensor(a) and _same_shape(a, value) for a in value.args))


def _same_shape(a: relax.Expr, b: relax.Expr) -> bool:
    return [int(d) for d in a.ty.shape.values] == [int(d) for d in b.ty.shape.values]


def _stages_of(source: relax.Var, chain: list[relax.Binding], readers: dict) -> list[ChainStage]:
    """The window stages of the graph `chain` (bindings in order) from `source`: one per window operator or join,
    in order, each reading the stored outputs of the stages before (the tensor a window operator's input
    chain of widening operators starts from: a dequantize, a cast to more bits) and ending at its own (the last
    tensor before such operators, read by nothing else on the way), of the source's type; the stages end before
    the first that cannot."""
    position = {b.var: i for i, b in enumerate(chain)}
    index = {source: -1}  # stored output -> stage
    stages: list[ChainStage] = []
    for window, binding in enumerate(chain):
        value = binding.value
        is_window = _is_call(value, (*_WINDOW_OPS, *_REDUCING_OPS))
        if not _is_kernel(value, position, source):
            continue
        inputs, before = [], []
        for operand in value.args[:1] if is_window else value.args:
            walked: list[int] = []
            while operand not in index and operand in position and not _is_kernel(chain[position[operand]].value,
                                                                                  position, source):
                walked.insert(0, position[operand])
                operand = chain[position[operand]].value.args[0]
            if operand not in index:
                return stages  # not a stage's stored output: the stages end here
            inputs.append(index[operand])
            before.append(tuple(walked))
        after = []
        last = window
        while len(readers.get(chain[last].var, ())) == 1:
            reader = readers[chain[last].var][0]
            follows = position.get(reader.var)
            if follows is None or _is_kernel(reader.value, position, source):
                break
            last = follows
            after.append(last)
        while after and (_widens(chain[after[-1]].value)  # the next stage's, up to its operand
                         or _is_call(chain[after[-1]].value, ("relax.reshape",))):  # a dense tail's flattening
            after.pop()
        output = after[-1] if after else window
        if chain[output].var.ty.dtype != source.ty.dtype:
            break  # the chain ends inside this stage (e.g. before its quantize): no stored output to cut at
        element_bytes = _element_bytes(chain[output].var)
        if _is_call(value, _REDUCING_OPS):
            geometry = _reduction_geometry(value, operand, str(len(stages)), element_bytes)
        elif is_window:
            geometry = _geometry(value, str(len(stages)), element_bytes)
        else:
            geometry = _join_geometry(value, str(len(stages)), element_bytes)
        index[chain[output].var] = len(stages)
        stages.append(ChainStage(geometry, window, output, tuple(inputs), tuple(before), tuple(after)))
    return stages


def _is_kernel(value: relax.Expr, position: dict, source: relax.Var) -> bool:
    """Whether `value` (a binding of the graph whose vars are `position`'s keys, from `source`) starts a stage:
    a window operator or a join."""
    return _is_call(value, (*_WINDOW_OPS, *_REDUCING_OPS)) or (_is_call(value, ("relax.add",)) and all(
        a in position or a.same_as(source) for a in value.args) and _joins(value, set(position) | {source}))


def _cuts(chain: list[relax.Binding], stages: list[ChainStage], readers: dict, outputs: set) -> tuple[int, ...]:
    """The cuts c (1-based) after which the graph ends in one value: only stage c's output is read by later
    stages (`valid_cuts`) or outside the graph's first c stages, and no function output is among them."""
    probe = WindowChain(relax.Var("probe", relax.TensorType(ndim=4)), tuple(chain), tuple(stages))
    cuts = []
    for cut in valid_cuts(probe.inputs, len(stages)):
        inside = {chain[i].var for i in probe.prefix(cut)}
        last = chain[stages[cut - 1].output].var
        if all(var not in outputs and all(r.var in inside for r in readers.get(var, ()))
               for var in inside - {last}):
            cuts.append(cut)
    return tuple(cuts)


def _reduction_geometry(reduction: relax.Call, stored: relax.Var, name: str, element_bytes: int) -> WindowStage:
    """The patch geometry of a dense tail (`_continues_dense`): a FULLY_CONNECTED over the flattened stage output
    `stored` [1, H, W, C], or a MEAN over its rows and columns, is a window of all of it (H x W, no padding) to one
    pixel of its units (channels), a reduction (WindowStage.reduces) that streamed bands feed row by row;
    H * W * C * units MACs (a MEAN none)."""
    hw, channels, units = _hw(stored), int(stored.ty.shape[3]), int(reduction.ty.shape[-1])
    macs = hw[0] * hw[1] * channels * units if _is_call(reduction, (_DENSE_OP,)) else 0
    return WindowStage(name, hw, (1, 1), channels, units, hw, (1, 1), (0, 0), macs, element_bytes, reduces=True)


def _join_geometry(join: relax.Call, name: str, element_bytes: int) -> WindowStage:
    """The patch geometry of a join: a 1x1 window of stride 1 on each operand, no MACs."""
    hw, channels = _hw(join), int(join.ty.shape[3])
    return WindowStage(name, hw, hw, channels, channels, (1, 1), (1, 1), (0, 0), 0, element_bytes)


def _widens(value: relax.Expr) -> bool:
    """Whether `value` converts a stored activation into the type a window operator computes in: a dequantize, or
    a cast to more bits (an int8 average pool sums in int32); the stage output is the tensor before it."""
    if _is_call(value, ("relax.dequantize",)):
        return True
    return _is_call(value, ("relax.astype",)) and _element_bytes(value) > _element_bytes(value.args[0])


def _vars_in(expr: relax.Expr) -> list[relax.Var]:
    found: list[relax.Var] = []
    relax.analysis.post_order_visit(expr, lambda e: found.append(e) if isinstance(e, relax.Var) else None)
    return found


def _is_call(value: relax.Expr, ops: tuple[str, ...]) -> bool:
    return isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in ops


def _is_nhwc_tensor(expr: relax.Expr) -> bool:
    ty = expr.ty
    return isinstance(ty, relax.TensorType) and ty.ndim == 4 and isinstance(ty.shape, relax.ShapeExpr) and all(
        isinstance(d, tvm.tirx.IntImm) for d in ty.shape.values)


def _continues_chain(value: relax.Expr, current: relax.Var) -> bool:
    """Whether `value` computes each (row, column) of its result from `current` (its first operand, read once)
    through a window (NHWC, static shapes) or elementwise; its other operands are checked by the caller."""
    if not isinstance(value, relax.Call) or not value.args or not value.args[0].same_as(current):
        return False
    if not _is_nhwc_tensor(value) or any(arg.same_as(current) for arg in value.args[1:]):
        return False
    others = value.args[1:]
    name = value.op.name if isinstance(value.op, tvm.ir.Op) else ""
    if name == "relax.nn.conv2d":
        attrs = value.attrs
        return attrs.data_layout == "NHWC" and attrs.out_layout == "NHWC"
    if name in ("relax.nn.max_pool2d", "relax.nn.avg_pool2d"):
        attrs = value.attrs
        return attrs.layout == "NHWC" and attrs.out_layout == "NHWC" and not bool(attrs.ceil_mode)
    if name in ("relax.dequantize", "relax.quantize"):
        axis = int(value.attrs.axis) % 4
        return axis == 3 or all(_elements(arg) == 1 for arg in others)
    if name in _UNARY_OPS:
        return True
    if name in _CHANNEL_CONSTANT_OPS and len(others) == 1:
        ty = others[0].ty
        if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr) or ty.ndim > 4:
            return False
        shape = [1] * (4 - ty.ndim) + [int(d) for d in ty.shape.values]
        return shape[:3] == [1, 1, 1]  # one value per channel (or one for all), broadcast over rows and columns
    return False


def _elements(expr: relax.Expr) -> int:
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return -1
    count = 1
    for d in ty.shape.values:
        count *= int(d)
    return count


def _hw(expr: relax.Expr) -> tuple[int, int]:
    shape = [int(d) for d in expr.ty.shape.values]
    return shape[1], shape[2]


def _element_bytes(expr: relax.Expr) -> int:
    return (tvm.runtime.DataType(str(expr.ty.dtype)).bits + 7) // 8


def _geometry(window: relax.Call, name: str, element_bytes: int) -> WindowStage:
    """The patch geometry of a window operator: its receptive field's kernel (dilated), strides, the padding
    before the first row and column, and its multiply-accumulates (0 for a pool); `element_bytes` those of
    one element of the stage's output."""
    data, out = window.args[0], window
    in_channels, out_channels = int(data.ty.shape[3]), int(out.ty.shape[3])
    attrs = window.attrs
    if window.op.name == "relax.nn.conv2d":
        weight = [int(d) for d in window.args[1].ty.shape.values]
        layout = str(attrs.kernel_layout)
        taps = (weight[layout.index("H")], weight[layout.index("W")])
        per_output = taps[0] * taps[1] * (in_channels // int(attrs.groups)) * out_channels
    else:
        taps = tuple(int(k) for k in attrs.pool_size)
        per_output = 0
    dilation = [int(d) for d in attrs.dilation]
    kernel = tuple((k - 1) * d + 1 for k, d in zip(taps, dilation))
    out_hw = _hw(out)
    reduces = (window.op.name == "relax.nn.avg_pool2d" and out_hw == (1, 1) and kernel == _hw(data)
               and all(int(p) == 0 for p in attrs.padding) and str(data.ty.dtype) in _SUMMED_DTYPES)
    return WindowStage(name, _hw(data), out_hw, in_channels, out_channels, kernel,
                       tuple(int(s) for s in attrs.strides), (int(attrs.padding[0]), int(attrs.padding[1])),
                       out_hw[0] * out_hw[1] * per_output, element_bytes, reduces)


def _patch_padding(stage: WindowStage, region_out: Region) -> list[int]:
    """The padding (top, left, bottom, right) of the patch computing output `region_out` of `stage`: the
    whole layer's where the receptive field passes the image border, none elsewhere."""
    before, after = [], []
    for (start, stop), kernel, stride, pad, size in zip(region_out, stage.kernel, stage.stride, stage.pad,
                                                         stage.in_hw):
        before.append(max(pad - start * stride, 0))
        after.append(max((stop - 1) * stride - pad + kernel - size, 0))
    return [before[0], before[1], after[0], after[1]]


def _window_on_patch(window: relax.Call, data: relax.Expr, padding: list[int]) -> relax.Expr:
    """`window` (conv2d, max_pool2d, avg_pool2d) on `data` with `padding`, its other attributes kept."""
    attrs = window.attrs
    if window.op.name == "relax.nn.conv2d":
        return relax.op.nn.conv2d(data, window.args[1], attrs.strides, padding, attrs.dilation, attrs.groups,
                                  attrs.data_layout, attrs.kernel_layout, attrs.out_layout, attrs.out_dtype)
    pool = relax.op.nn.max_pool2d if window.op.name == "relax.nn.max_pool2d" else relax.op.nn.avg_pool2d
    extra = {} if window.op.name == "relax.nn.max_pool2d" else {"count_include_pad": bool(attrs.count_include_pad)}
    return pool(data, attrs.pool_size, attrs.strides, padding, attrs.dilation, bool(attrs.ceil_mode),
                layout=attrs.layout, out_layout=attrs.out_layout, **extra)


def _dense_bias(layer) -> tuple[relax.Constant | None, int]:
    """The bias a dense tail's sums are finished with and the zero point its bands subtract: the layer's int32 bias
    less the input zero point times each unit's weight sum, and 0 (the bands multiply the raw int8 values, as the
    layer's own kernel does: `fold_zero_point_into_bias`), else, where that does not fit int32, the bias as it is
    and the zero point. `layer` is the tail's FULLY_CONNECTED as the int8 lowering matches it (MacKernel)."""
    units = layer.weight.shape[0]
    bias = np.zeros(units, np.int32) if layer.bias is None else layer.bias.value.numpy().reshape(-1)
    folded = fold_zero_point_into_bias(bias.astype(np.int32), layer.weight, layer.input_zero_point, 0) \
        if bias.dtype.itemsize <= 4 else None
    if folded is None:
        return layer.bias, layer.input_zero_point
    return relax.const(folded), 0


@tvm.transform.module_pass(opt_level=0, name="RunPrefixInPatches")
class RunPrefixInPatches:
    """`main` with the prefix of its window chain up to stage `cut` (1-based: the output of the cut-th window
    stage) computed in a rows x columns `grid` of patches (see the module). Raises PatchPlanError when `main`
    has no window chain of `cut` stages, its graph does not end in one value after stage `cut` (a grid: its
    first stages that form a chain do not reach it), or the grid has more rows or columns than the stage output. The
    result keeps the layer records: a branch's operators carry their layer's, its slice the first layer's,
    the concatenation the cut layer's."""

    def __init__(self, cut: int, grid: tuple[int, int], driver: int | None = None,
                 rounding: str | Rounding = Rounding.DOUBLE) -> None:
        self.cut = cut
        self.grid = grid
        self.driver = driver  # streamed: the stage (0-based) whose output rows the grid[0] bands split
        self.rounding = Rounding(rounding)  # the int8 requantization's (a dense tail's, summed band by band)

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        before = sequences_as_rows(mod["main"])  # a 1-D convolution network's sequences as rows (else as it is)
        if not before.same_as(mod["main"]):
            mod = tvm.IRModule({**{gv: f for gv, f in mod.functions.items() if gv.name_hint != "main"},
                                mod.get_global_var("main"): before}, attrs=mod.attrs)
        chain = window_chain(before)
        if chain is None or not 1 <= self.cut <= len(chain.stages):
            stages = 0 if chain is None else len(chain.stages)
            raise PatchPlanError(f"a patch cut after window stage {self.cut} needs a chain of that many windowed "
                                 f"NHWC stages from a model input; this model has {stages}")
        out_hw = chain.stages[self.cut - 1].geometry.out_hw
        if self.cut not in chain.cuts or (self.driver is None and self.cut > chain.linear):
            raise PatchPlanError(f"window stage {self.cut} is not where the model's window graph ends in one value "
                                 f"({'streamed' if self.driver is not None else 'patches: its chain'} ends so after "
                                 f"stage {', '.join(str(c) for c in chain.cuts if self.driver is not None or c <= chain.linear)})")
        if self.driver is not None:
            top = top_stage(chain.geometries[:self.cut])
            rows = chain.stages[self.driver].geometry.out_hw[0] if 0 <= self.driver <= top else 0
            if self.grid[1] != 1 or not 1 <= self.grid[0] <= rows:
                raise PatchPlanError(f"streamed bands up to window stage {self.cut} split the output rows of a stage "
                                     f"1..{top + 1} in a grid of one column; not {self.grid[0]}x{self.grid[1]} of "
                                     f"stage {self.driver + 1}")
        elif not (1 <= self.grid[0] <= out_hw[0] and 1 <= self.grid[1] <= out_hw[1]):
            raise PatchPlanError(f"a {self.grid[0]}x{self.grid[1]} patch grid does not fit the {out_hw[0]}x{out_hw[1]} "
                                 f"output of window stage {self.cut}")
        rewriter = _PrefixRewriter(mod, chain, self.cut, self.grid, Layers.of(before), self.driver, self.rounding)
        after = rewriter.visit_expr(before)
        main = carry_layers(before, after)
        layers = Layers.of(main)
        if layers.records:
            main = with_layers(main, layers.records, [rewriter.records.get(b.var, layers.bindings[i])
                                                      for i, b in enumerate(bindings_of(main))], layers.constants)
        # the module's functions and the kernels the rewrite added (a streamed global pool's sums)
        functions = {gv: f for gv, f in rewriter.builder_.get().functions.items() if gv.name_hint != "main"}
        return tvm.IRModule({**functions, mod.get_global_var("main"): main}, attrs=mod.attrs)


@relax.expr_functor.mutator
class _PrefixRewriter(relax.PyExprMutator):
    """Emits the patch branches and their concatenation in place of the prefix's last binding; drops the
    prefix's other bindings. `records` maps each var it emits to its layer record positions."""

    def __init__(self, mod: tvm.IRModule, chain: WindowChain, cut: int, grid: tuple[int, int],
                 layers: Layers, driver: int | None = None, rounding: Rounding = Rounding.DOUBLE) -> None:
        super().__init__(mod)
        self.chain = chain
        self.cut = cut
        self.grid = grid
        self.driver = driver
        self.last = chain.stages[cut - 1].output
        self.prefix = {chain.bindings[i].var: i for i in chain.prefix(cut)}
        position = {b.var: i for i, b in enumerate(bindings_of(mod["main"]))}
        self.layers_of = [layers.bindings[position[b.var]] if position[b.var] < len(layers.bindings) else ()
                          for b in chain.bindings]
        self.records: dict[relax.Var, tuple[int, ...]] = {}
        self.sliced: dict[tuple[int, Range], relax.Var] = {}  # a stage's output rows sliced out of a kept chunk
        self.original = mod["main"]
        self.rounding = rounding
        self.dense_weight: relax.Constant | None = None  # a dense tail's weights, one constant for every band
        self.dense: tuple | None = None  # a dense tail's layer and activation (`_dense_layer`), matched once

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        index = self.prefix.get(binding.var)
        if index is None:
            super().visit_var_binding_(binding)
        elif index == self.last:
            self.set_var_remap(binding.var, self._patched() if self.driver is None else self._streamed(self.driver))

    def _emit(self, value: relax.Expr, name: str, records: tuple[int, ...]) -> relax.Var:
        var = self.builder_.emit(value, name_hint=name)
        self.records[var] = records
        return var

    def _patched(self) -> relax.Var:
        geometries = self.chain.geometries[:self.cut]
        last = geometries[-1]
        out_rows, out_cols = split(last.out_hw[0], self.grid[0]), split(last.out_hw[1], self.grid[1])
        strips = []
        for i, rows in enumerate(out_rows):
            pieces = [self._branch(patch_regions(geometries, (rows, cols)), f"p{i}_{j}")
                      for j, cols in enumerate(out_cols)]
            strips.append(self._concat(pieces, 2, f"patch_row{i}"))
        return self._concat(strips, 1, "patched")

    def _branch(self, regions: list[Region], suffix: str) -> relax.Var:
        """One patch: the regions of the source and of each stage's output (patch_regions)."""
        (r0, r1), (c0, c1) = regions[0]
        current = self._source_tile(((r0, r1), (c0, c1)), suffix)
        for stage in range(self.cut):
            current = self._stage(stage, [current], regions[stage + 1], suffix)
        return current

    def _source_tile(self, region: Region, suffix: str) -> relax.Expr:
        """`region` of the chain's source: a slice (a copy), or the source itself when it is all of it."""
        (r0, r1), (c0, c1) = region
        source = self.visit_expr(self.chain.source)
        if (r0, r1, c0, c1) == (0, _hw(source)[0], 0, _hw(source)[1]):
            return source
        return self._emit(relax.op.strided_slice(source, [1, 2], [r0, c0], [r1, c1]), f"slice_{suffix}",
                          self.layers_of[0])

    def _stage(self, stage: int, tiles: list[relax.Expr], region_out: Region, suffix: str) -> relax.Var:
        """Window stage `stage`'s operators (for each stage it reads, those from that stage's output to the
        operand, then its window operator or join and those up to its own output) on `tiles`, the clipped
        receptive field of its output region `region_out` in each stage it reads."""
        chain_stage = self.chain.stages[stage]
        operands = []
        for current, before in zip(tiles, chain_stage.before):
            for index in before:
                current = self._unary(index, current, suffix)
            operands.append(current)
        value = self.chain.bindings[chain_stage.window].value
        if _is_call(value, _WINDOW_OPS):
            new = _window_on_patch(value, operands[0], _patch_padding(chain_stage.geometry, region_out))
        else:
            new = relax.Call(value.op, operands, value.attrs)
        current = self._emit(new, f"{self.chain.bindings[chain_stage.window].var.name}_{suffix}",
                             self.layers_of[chain_stage.window])
        for index in chain_stage.after:
            current = self._unary(index, current, suffix)
        return current

    def _unary(self, index: int, current: relax.Expr, suffix: str) -> relax.Var:
        """The chain's binding `index` (an elementwise operator) on `current`, its other operands kept."""
        binding = self.chain.bindings[index]
        value = binding.value
        new = relax.Call(value.op, [current, *(self.visit_expr(a) for a in value.args[1:])], value.attrs)
        return self._emit(new, f"{binding.var.name}_{suffix}", self.layers_of[index])

    def _streamed(self, driver: int) -> relax.Var:
        """The prefix in bands of rows (tvm_ext.patch_geometry.stream_rows, the bands splitting stage `driver`'s
        output rows), each stage computing only its new rows: every stage keeps the chunks of the rows of each
        stage it reads (that stage's new rows, band by band) a later band still reads, and joins its input tile
        from them (a concatenation; slices of the chunks at its ends); a join (a residual ADD) so takes the
        rows of both its operands as they arrive; a reducing last stage (a global average pool) adds each
        band's rows to running int32 sums, averaged after the last band."""
        geometries = self.chain.geometries[:self.cut]
        inputs = self.chain.inputs[:self.cut]
        readers = readers_of(inputs, self.cut)
        schedule = stream_rows(geometries, self.grid[0], driver, inputs)
        kept: dict[tuple[int, int], list[tuple[Range, relax.Var]]] = {
            (i, p): [] for i, ins in enumerate(inputs) for p in ins if p >= 0}
        delivered: list[relax.Var] = []
        sums: relax.Var | None = None
        for k, rows in enumerate(schedule):
            suffix = f"b{k}"
            for i, (geometry, out_rows) in enumerate(zip(geometries, rows)):
                mine = [p for p in inputs[i] if p >= 0]
                if geometry.reduces:
                    for p in mine:
                        for (first, _), chunk in kept[(i, p)]:
                            sums = self._band_sums(i, chunk, first, sums, suffix)
                        kept[(i, p)] = []
                    continue
                if out_rows[0] == out_rows[1]:
                    continue
                in_rows = receptive_rows(out_rows, geometry.kernel[0], geometry.stride[0], geometry.pad[0],
                                         geometry.in_hw[0])
                tiles = [self._source_tile((in_rows, (0, geometry.in_hw[1])), suffix) if p < 0
                         else self._join(i, kept[(i, p)], in_rows, suffix) for p in inputs[i]]
                if mine:
                    following = next((later[i] for later in schedule[k + 1:] if later[i][0] < later[i][1]), None)
                    start = geometry.in_hw[0] if following is None else receptive_rows(
                        following, geometry.kernel[0], geometry.stride[0], geometry.pad[0], geometry.in_hw[0])[0]
                    for p in mine:
                        kept[(i, p)] = self._still_read(i, p, kept[(i, p)], start, suffix)
                fresh = self._stage(i, tiles, (out_rows, (0, geometry.out_hw[1])), suffix)
                for j in readers[i]:
                    kept[(j, i)].append((out_rows, fresh))
                if i == self.cut - 1:
                    delivered.append(fresh)
        if geometries[-1].reduces:
            if self._is_dense(self.cut - 1):
                return self._finish_dense(sums)
            if self._is_mean(self.cut - 1):
                return self._finish_mean(sums)
            return self._finish_sums(sums, geometries[-1])
        return self._concat(delivered, 1, "streamed")

    def _is_dense(self, stage: int) -> bool:
        return _is_call(self.chain.bindings[self.chain.stages[stage].window].value, (_DENSE_OP,))

    def _is_mean(self, stage: int) -> bool:
        return _is_call(self.chain.bindings[self.chain.stages[stage].window].value, (_MEAN_OP,))

    def _finish_mean(self, sums: relax.Var) -> relax.Var:
        """A MEAN over the rows and columns at the cut from its running int32 sums (row_sums), with the int8
        lowering's MEAN parameters (tvm_ext.transform.int8.reduce.MEAN's match of its quantize): mean_of_sums."""
        from tvm_ext.transform.int8.graph import Graph
        from tvm_ext.transform.int8.lowering import FixedCall, LoweringContext
        from tvm_ext.transform.int8.reduce import MEAN

        stage = self.chain.stages[self.cut - 1]
        values = [self.chain.bindings[i].value for i in stage.after]
        operand = self.chain.bindings[stage.before[0][-1]].value if stage.before and stage.before[0] else None
        matched = None
        if len(values) == 1 and _is_call(values[0], ("relax.quantize",)) and _is_call(operand, ("relax.dequantize",)):
            context = LoweringContext(Graph(self.original), {operand.args[0]: operand.args[0]}, self.rounding)
            matched = MEAN.match(values[0], context)
        if not isinstance(matched, FixedCall) or str(operand.args[0].ty.dtype) != "int8":
            raise PatchPlanError(f"window stage {self.cut} is a MEAN over a stage output's rows and columns, but not "
                                 "an int8 one ending in its quantize: it cannot be summed band by band")
        params = {key: matched.call.kwargs[key] for key in ("input_zero_point", "output_zero_point", "multiplier",
                                                            "shift", "rounding")}
        geometry = stage.geometry
        shape = [int(d) for d in values[0].ty.shape.values]

        def mean_of_band_sums(total: te.Tensor) -> te.Tensor:  # TE takes no Rounding
            return mean_of_sums(total, shape=shape, count=geometry.in_hw[0] * geometry.in_hw[1], dtype="int8",
                                **params)

        return self._emit(self._kernel(mean_of_band_sums, sums), "mean_of_sums", self._records_of_stage(self.cut - 1))

    def _band_sums(self, stage: int, chunk: relax.Var, first_row: int, sums: relax.Var | None,
                   suffix: str) -> relax.Var:
        """The running int32 sums of reducing stage `stage` with the rows from `first_row` on in `chunk` added: a
        global average pool's sums of its input (row_sums), a dense tail's partial dot products (dense_rows, the
        int8 FULLY_CONNECTED's weights and input zero point: `_dense_layer`)."""
        before = () if sums is None else (sums,)
        if not self._is_dense(stage):
            return self._emit(self._kernel(row_sums, chunk, *before), f"row_sums_{suffix}",
                              self._records_of_stage(stage))
        layer, _ = self._dense_layer()
        geometry = self.chain.stages[stage].geometry
        if self.dense_weight is None:
            self.dense_weight = relax.const(layer.weight)
        call = self._kernel(dense_rows, chunk, self.dense_weight, *before,
                            offset=first_row * geometry.in_hw[1] * geometry.in_channels,
                            input_zero_point=_dense_bias(layer)[1])
        return self._emit(call, f"dense_rows_{suffix}", self._records_of_stage(stage))

    def _dense_layer(self) -> tuple:
        """The int8 FULLY_CONNECTED of the dense tail at the cut, as the int8 lowering matches it
        (tvm_ext.transform.int8.fully_connected.match: weights [O, K], bias, multipliers, zero points, the
        activation of its output) and the activation range with the clips after its quantize folded in;
        PatchPlanError when the tail is not one the band-wise sums compute (int8 data, a per-tensor input)."""
        from tvm_ext.transform.int8.fully_connected import match
        from tvm_ext.transform.int8.graph import Graph
        from tvm_ext.transform.int8.lowering import LoweringContext
        from tvm_ext.transform.int8.mac import MacKernel

        if self.dense is not None:
            return self.dense
        stage = self.chain.stages[self.cut - 1]
        values = [self.chain.bindings[i].value for i in stage.after]
        quantize = next((k for k, value in enumerate(values) if _is_call(value, ("relax.quantize",))), None)
        operand = self.chain.bindings[stage.before[0][-1]].value if stage.before and stage.before[0] else None
        layer = None
        if quantize is not None and _is_call(operand, ("relax.dequantize",)):
            context = LoweringContext(Graph(self.original), {operand.args[0]: operand.args[0]}, self.rounding)
            layer = match(values[quantize], context)
        if not isinstance(layer, MacKernel) or str(layer.data.ty.dtype) != "int8" or any(
                not _is_call(value, ("relax.clip",)) for value in values[quantize + 1:]):
            raise PatchPlanError(f"window stage {self.cut} is a FULLY_CONNECTED over a flattened stage output, but "
                                 "not an int8 one ending in its quantize (and clips): it cannot be summed band by band")
        activation = layer.activation
        for clip in values[quantize + 1:]:
            activation = activation.intersect(*(int(float(arg.value)) for arg in clip.args[1:3]))
        self.dense = layer, activation
        return self.dense

    def _finish_dense(self, sums: relax.Var) -> relax.Var:
        """The dense tail's int8 output from its running sums: bias added, requantized, clamped
        (requantized_sums), as the layer's FULLY_CONNECTED finishes its own."""
        layer, activation = self._dense_layer()
        multipliers, shifts = layer.multipliers, layer.shifts
        bias = _dense_bias(layer)[0]
        tensors: dict[str, relax.Expr] = {} if bias is None else {"bias": bias}
        if np.all(multipliers == multipliers[0]) and np.all(shifts == shifts[0]):
            multiplier, shift = int(multipliers[0]), int(shifts[0])
        else:
            multiplier, shift = 0, 0
            tensors.update(multiplier=relax.const(multipliers.astype(np.int32)),
                           shift=relax.const(shifts.astype(np.int8)))
        output = OutputStage(multiplier, shift, layer.output_zero_point, activation, layer.rounding)

        def fully_connected_of_sums(acc: te.Tensor, **operands: te.Tensor) -> te.Tensor:  # TE takes no OutputStage
            return requantized_sums(acc, **operands, output=output)

        return self._emit(self._kernel(fully_connected_of_sums, sums, **tensors), "fully_connected_of_sums",
                          self._records_of_stage(self.cut - 1))

    def _still_read(self, stage: int, read: int, chunks: list[tuple[Range, relax.Var]], start: int,
                    suffix: str) -> list[tuple[Range, relax.Var]]:
        """The kept `chunks` of stage `read`'s output rows from row `start` on (what a later band of stage
        `stage` reads): a chunk reaching below `start` sliced to its rows from there (a copy: the rest of the
        chunk then dies; made once for every stage that keeps those rows)."""
        still = []
        for (first, stop), chunk in chunks:
            if stop <= start:
                continue
            if first < start:
                key = (read, (start, stop))
                if key not in self.sliced:
                    self.sliced[key] = self._emit(relax.op.strided_slice(chunk, [1], [start - first], [stop - first]),
                                                  f"halo{stage}_{suffix}", self._records_of_stage(stage))
                chunk = self.sliced[key]
                first = start
            still.append(((first, stop), chunk))
        return still

    def _join(self, stage: int, chunks: list[tuple[Range, relax.Var]], rows: Range, suffix: str) -> relax.Var:
        """Input rows `rows` of stage `stage` from the kept `chunks` (consecutive row ranges covering them): the
        one chunk that is exactly those rows, else the chunks' rows among them (a chunk reaching past them
        sliced) concatenated."""
        parts = []
        for (start, stop), chunk in chunks:
            low, high = max(start, rows[0]), min(stop, rows[1])
            if low >= high:
                continue
            if (low, high) != (start, stop):
                chunk = self._emit(relax.op.strided_slice(chunk, [1], [low - start], [high - start]),
                                   f"rows{stage}_{suffix}", self._records_of_stage(stage))
            parts.append((low, high, chunk))
        if not parts or parts[0][0] != rows[0] or parts[-1][1] != rows[1] or any(
                a[1] != b[0] for a, b in zip(parts, parts[1:])):
            raise PatchPlanError(f"internal: the rows kept for window stage {stage + 1} do not hold its input rows "
                                 f"[{rows[0]}, {rows[1]})")
        if len(parts) == 1:
            return parts[0][2]
        return self._emit(relax.op.concat([part for _, _, part in parts], 1), f"tile{stage}_{suffix}",
                          self._records_of_stage(stage))

    def _records_of_stage(self, stage: int) -> tuple[int, ...]:
        return self.layers_of[self.chain.stages[stage].window]

    def _kernel(self, kernel, *args: relax.Expr, **static) -> relax.Call:
        """The call_tir of the TE `kernel` on `args`, its PrimFunc opaque (the int8 lowering keeps such a call
        as it is, like the frontend's own kernels)."""
        call = self.builder_.call_te(kernel, *args, primfunc_name_hint=kernel.__name__, **static)
        gvar = call.args[0]
        self.builder_.update_func(gvar, self.builder_.get()[gvar].with_attr("op_pattern", OPAQUE_PATTERN))
        return call

    def _finish_sums(self, sums: relax.Var, geometry: WindowStage) -> relax.Var:
        """The global average pool from its running sums: the reducing stage's bindings must be the widening
        cast, the pool and the narrowing cast of an integer average pool (the int8 lowering's pattern), or a
        float pool and the elementwise operators after it (a fused activation), applied to the average."""
        stage = self.chain.stages[self.cut - 1]
        count = geometry.in_hw[0] * geometry.in_hw[1]
        pool = self.chain.bindings[stage.window].value
        if str(pool.ty.dtype).startswith("float"):
            current = self._emit(self._kernel(average_of_sums, sums, count=count, dtype=str(pool.ty.dtype)),
                                 "average_of_sums", self._records_of_stage(self.cut - 1))
            for index in stage.after:
                current = self._unary(index, current, "sums")
            return current
        casts = [self.chain.bindings[i].value for i in (*(j for b in stage.before for j in b), *stage.after)]
        if len(stage.after) != 1 or not all(_is_call(c, ("relax.astype",)) for c in casts):
            raise PatchPlanError(f"window stage {self.cut} is a global average pool, but not of an integer tensor "
                                 "cast to int32 and back: it cannot be summed band by band")
        dtype = str(self.chain.bindings[stage.output].var.ty.dtype)
        return self._emit(self._kernel(average_of_sums, sums, count=count, dtype=dtype), "average_of_sums",
                          self._records_of_stage(self.cut - 1))

    def _concat(self, pieces: list[relax.Var], axis: int, name: str) -> relax.Var:
        """`pieces` concatenated along `axis` (the int8 lowering's CONCATENATION of int8 tensors, a copy)."""
        if len(pieces) == 1:
            return pieces[0]
        return self._emit(relax.op.concat(pieces, axis), name, self.layers_of[self.last])
