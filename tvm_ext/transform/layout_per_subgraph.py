"""A data layout (NCHW or NHWC) per subgraph of an imported float model, chosen by a cost estimate.

TFLite models arrive channels-last (NHWC), ONNX models channels-first (NCHW). Before the Relax pipeline
(tvm_ext.lower) legalizes the operators, `choose_layouts(main, profile, force)` splits `main` into subgraphs
with PartitionSubgraphs' rules (tvm_ext.transform.partition_subgraphs, each operator call counted as a
kernel) and picks a layout per subgraph (a subgraph without a convolution takes the layout of the subgraph
before it: `layout_groups`); the pass `ConvertLayoutPerSubgraph(plan)` rewrites each
group whose layout changes with TVM's `relax.transform.ConvertLayout`, applied to that group alone (lifted
into a function of its own): its conv2d (weights permuted by a `permute_dims` of the constant, which the
pipeline's FoldConstant computes at compile time), its pools and the layout-agnostic operators around them
(bias add, relu, residual adds) then work in the new layout, and `permute_dims` appear only where the group
meets the model's layout: at its entries, at its exits, and before an operator that fixes the model's
order (a flatten's reshape; it ends the group's spatial part). Where one group's exit transform is undone
by the next one's entry transform, the pair is dropped.

The cost model (instructions on the subgraph's core, estimated before any kernel exists):

    estimate(group, layout) = sum over its conv2d of MACs x (CONV_INSTRUCTIONS_PER_MAC[layout] where the
                                loop just outside the reduction, output channels in NHWC, output columns in
                                NCHW, takes the profile's accumulator tile; else UNTILED_INSTRUCTIONS_PER_MAC)
                              + bytes of its 4-D activations permuted at its borders (entries whose
                                producer, model input or earlier group, has another layout; exits and
                                flattens when the layout is not the model's) x TRANSPOSE_INSTRUCTIONS_PER_BYTE

Groups are chosen in order (an entry's layout is what the group before it chose; an exit is counted as if
the next group kept the model's layout); the lower estimate
wins, a tie keeps the model's layout. The constants are measured on cortex-m4f with QEMU
(scripts/bench_layout.py): our float schedules (tvm_ext.schedule.float_schedule) tile output channels and pixels,
which in NHWC are the innermost, contiguous loops of the convolution. Quantized operators keep the layout
they arrive in (the int8 kernels are channels-last): a forced layout on a model with them is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import tvm
import tvm_ffi
from tvm import relax
from tvm.ir.expr import Constant

from backends.schedules import kernel_schedules_of
from target.profile import Profile
from tvm_ext.layers import BINDING_LAYERS_ATTR, CONSTANT_LAYERS_ATTR, LAYERS_ATTR, Layers, bindings_of, with_layers
from tvm_ext.transform.partition_subgraphs import partition_subgraphs

LAYOUTS = ("NCHW", "NHWC")
"""The data layouts a subgraph can take."""

KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}
"""The conv2d weight layout that goes with each data layout (HWIO: TOPI's NHWC convolution reads it)."""

CONV_INSTRUCTIONS_PER_MAC = {"NCHW": 4.6, "NHWC": 3.7}
"""Instructions per multiply-accumulate of a float 3x3 conv2d kernel with its bias, relu and residual add, in
each layout, its accumulators tiled (tvm_ext.schedule.float_schedule), on cortex-m4f (QEMU -icount, per call,
tests/onnx_conv_nets.py's 16x16 net, 8 -> 8 channels: NCHW 167,960 and NHWC 134,663 instructions for 36,864
MACs). Not modelled: the reduction's length. The same net's first conv (3 input channels, 8 output
channels) took NCHW 4.6 and NHWC 4.8; a 3 -> 16 channel first conv on 32x32 gains about 0.7 in NHWC
(scripts/bench_layout.py); a depthwise conv took 8.5 and 8.6."""

UNTILED_INSTRUCTIONS_PER_MAC = 12.3
"""The same for a conv2d whose accumulators are not tiled (cortex-m4f, the 32x32 net with 4 channels in
NHWC: 452,275 instructions for 36,864 MACs of its 4 -> 4 channel conv; its 1 -> 4 channel conv took 19)."""

TRANSPOSE_INSTRUCTIONS_PER_BYTE = 1.9
"""Instructions per byte of a permute_dims kernel moving a float 4-D activation on cortex-m4f (the same
net: 5,770 instructions for 3,072 bytes, 2,570 for 2,048)."""

_SPATIAL_OPS = {"relax.nn.conv2d": "data_layout"}  # the operators whose layout is chosen; the others follow
_QUANTIZED_OPS = {"relax.quantize", "relax.dequantize"}
_VIEW_OPS = {"relax.reshape"}


@tvm_ffi.register_error
class LayoutError(ValueError):
    """A forced layout cannot be applied to the model; the message names the operator. Raised inside the
    pipeline's LayoutPerSubgraph pass, behind TVM's FFI, which re-creates it from its one-line message."""


@dataclass(frozen=True)
class LayoutChoice:
    """Subgraph `subgraph` (of the imported model: the model layers `layers`, as LayerRecord labels) runs in
    `layout`; `estimate` holds each candidate layout's estimated instructions (see the module docstring; {}
    when it follows the subgraph before it or has no convolution)."""

    subgraph: int
    layout: str
    estimate: dict[str, float] = field(default_factory=dict, hash=False)
    layers: tuple[str, ...] = ()

    def facts(self) -> dict:
        """This choice as the manifest's `subgraph_layouts` entry."""
        return {"subgraph": self.subgraph, "layers": list(self.layers), "layout": self.layout,
                "estimated_instructions": {layout: round(cost) for layout, cost in self.estimate.items()}}


@dataclass(frozen=True)
class LayoutPlan:
    """Each binding's subgraph (binding order) and each subgraph's choice (subgraph order)."""

    subgraph_of_binding: tuple[int, ...]
    choices: tuple[LayoutChoice, ...]


def operator_operands(binding: relax.Binding) -> Optional[list[relax.Expr]]:
    """A binding that calls a Relax operator (a reshape excepted: it becomes a view) is a kernel reading its
    tensor arguments; anything else (an alias, a tuple, a view) is none (partition_subgraphs' KernelOperands)."""
    value = binding.value
    if not isinstance(value, relax.Call) or not isinstance(value.op, tvm.ir.Op) or value.op.name in _VIEW_OPS:
        return None
    read = []
    for arg in value.args:
        fields = arg.fields if isinstance(arg, relax.Tuple) else [arg]
        read += [f for f in fields if isinstance(f, (relax.Var, Constant))]
    return read


def choose_layouts(main: relax.Function, profile: Profile, force: Optional[str] = None) -> LayoutPlan:
    """The subgraphs of `main` and each one's layout (see the module docstring): `force` ("NCHW" or "NHWC")
    puts every subgraph with a convolution into that layout, None lets the estimate choose. A model without
    a convolution, or with quantized operators, has no choice to make: no choices (and one subgraph).
    LayoutError when `force` is given and the model holds a quantized operator."""
    bindings = bindings_of(main)
    quantized = _quantized(bindings)
    if force is not None and quantized:
        raise LayoutError(f"--layout {force.lower()} is not supported for quantized models ({quantized}): their "
                          "int8 kernels keep the layout they arrive in; use --layout auto")
    model_layout = _model_layout(bindings)
    if model_layout is None or quantized:
        return LayoutPlan(tuple(0 for _ in bindings), ())
    ids = partition_subgraphs(main, profile, operator_operands)
    layout_of_value: dict[relax.Var, str] = {param: model_layout for param in main.params}
    choices = []
    for start, stop in layout_groups(bindings, ids):
        run, lead = bindings[start:stop], ids[start]
        if not any(_conv_layout(b) for b in run):
            layout, estimate = model_layout, {}
        else:
            read_later = _read_after(bindings[stop:], main.body.body)
            estimate = {layout: _estimate(run, layout, model_layout, layout_of_value, read_later,
                                          _accumulator_tiles(profile)) for layout in LAYOUTS}
            layout = force or min(LAYOUTS, key=lambda candidate: (estimate[candidate], candidate != model_layout))
        choices += [LayoutChoice(subgraph, layout, estimate if subgraph == lead else {},
                                 _layer_labels(main, ids, subgraph))
                    for subgraph in dict.fromkeys(ids[start:stop])]
        for binding in run:
            layout_of_value[binding.var] = layout
    return LayoutPlan(ids, tuple(choices))


def _layer_labels(main: relax.Function, ids: Sequence[int], subgraph: int) -> tuple[str, ...]:
    """The labels of the model layers the bindings of `subgraph` implement, in model order."""
    layers = Layers.of(main)
    records = {record for position, i in enumerate(ids) if i == subgraph for record in layers.of_binding(position)}
    return tuple(record.label for record in sorted(records, key=lambda record: record.operator_index))


def layout_groups(bindings: Sequence[relax.Binding], ids: Sequence[int]) -> list[tuple[int, int]]:
    """The binding ranges [start, stop) that take one layout: a subgraph's bindings, joined by each following
    subgraph without a convolution (a relu, pool or residual add after a conv's subgraph, a flatten and what
    follows it; ConvertLayout converts these only by following their input), which then needs no transform
    at the border between them."""
    starts = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]
    groups: list[tuple[int, int]] = []
    for start, stop in zip(starts, [*starts[1:], len(ids)]):
        if groups and not any(_conv_layout(b) for b in bindings[start:stop]):
            groups[-1] = (groups[-1][0], stop)
        else:
            groups.append((start, stop))
    return groups


def _model_layout(bindings: Sequence[relax.Binding]) -> Optional[str]:
    """The layout of the model's convolutions (the first one's; None without any)."""
    return next((layout for layout in map(_conv_layout, bindings) if layout), None)


def _conv_layout(binding: relax.Binding) -> Optional[str]:
    value = binding.value
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in _SPATIAL_OPS:
        return str(getattr(value.attrs, _SPATIAL_OPS[value.op.name]))
    return None


def _quantized(run: Sequence[relax.Binding]) -> Optional[str]:
    """The first quantized operator of `run` (its Relax name), or None."""
    for binding in run:
        value = binding.value
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in _QUANTIZED_OPS:
            return value.op.name
    return None


def _accumulator_tiles(profile: Profile) -> tuple[int, ...]:
    """The tiles a float convolution's accumulators try on `profile` (tvm_ext.schedule.kernel_schedule.inline_intermediates)."""
    schedules = kernel_schedules_of(profile)
    return schedules.float_channel_tiles or (schedules.output_channel_tile,)


def _read_after(rest: Sequence[relax.Binding], result: relax.Expr) -> set[relax.Var]:
    """The vars the bindings `rest` (those after a group) or the function's `result` read."""
    return {v for value in [*(b.value for b in rest), result] for v in relax.analysis.free_vars(value)}


def _estimate(run: Sequence[relax.Binding], layout: str, model_layout: str,
              layout_of_value: dict[relax.Var, str], read_later: set[relax.Var], tiles: tuple[int, ...]) -> float:
    """Estimated instructions of `run` in `layout` (the module docstring's cost model); `read_later`: the vars
    read after `run`."""
    defined = {b.var for b in run}
    compute = sum(_conv_macs(b) * _instructions_per_mac(b, layout, tiles) for b in run)
    entries = {v for b in run for v in relax.analysis.free_vars(b.value) if v not in defined}
    moved = sum(_bytes4d(v) for v in entries if layout_of_value.get(v, model_layout) != layout)
    if layout != model_layout:
        moved += sum(_bytes4d(b.var) for b in run if b.var in read_later)
        moved += sum(_bytes4d(v) for b in run if _is_flatten(b) for v in relax.analysis.free_vars(b.value))
    return compute + moved * TRANSPOSE_INSTRUCTIONS_PER_BYTE


def _instructions_per_mac(binding: relax.Binding, layout: str, tiles: tuple[int, ...]) -> float:
    """A conv2d's estimated instructions per MAC in `layout`: tiled when one of `tiles` divides the loop just
    outside its reduction (NHWC: output channels, NCHW: output columns) and is not all of it, as
    tvm_ext.schedule.kernel_schedule._tile_channels tiles."""
    if _conv_layout(binding) is None:
        return 0.0
    shape = [int(d) for d in binding.var.ty.shape.values]
    model_order = str(binding.value.attrs.out_layout)
    extent = shape[model_order.index("C" if layout == "NHWC" else "W")]
    tiled = any(tile > 1 and extent % tile == 0 and extent != tile for tile in tiles)
    return CONV_INSTRUCTIONS_PER_MAC[layout] if tiled else UNTILED_INSTRUCTIONS_PER_MAC


def _conv_macs(binding: relax.Binding) -> int:
    """Multiply-accumulates of a conv2d binding (0 for anything else): output elements x weights per output."""
    if _conv_layout(binding) is None:
        return 0
    value = binding.value
    out = [int(d) for d in binding.var.ty.shape.values]
    weight = [int(d) for d in value.args[1].ty.shape.values]
    return math.prod(out) * math.prod(weight) // weight[str(value.attrs.kernel_layout).index("O")]


def _bytes4d(var: relax.Var) -> int:
    """Bytes of a 4-D tensor (0 for any other rank: it has no layout to permute)."""
    ty = var.ty
    if not isinstance(ty, relax.TensorType) or ty.ndim != 4:
        return 0
    return math.prod(int(d) for d in ty.shape.values) * tvm.DataType(ty.dtype).bits // 8


def _is_flatten(binding: relax.Binding) -> bool:
    value = binding.value
    return (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.op.name in _VIEW_OPS
            and _bytes4d(value.args[0]) > 0 and binding.var.ty.ndim != 4)


@tvm.transform.module_pass(opt_level=0, name="ConvertLayoutPerSubgraph")
class ConvertLayoutPerSubgraph:
    """`main` with each subgraph of `plan` whose layout differs from its operators' rewritten into it (see the
    module docstring); the layer records are carried (a new binding takes those of the binding it was made
    from, by name, else those of its first reader)."""

    def __init__(self, plan: LayoutPlan) -> None:
        self.plan = plan

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        mod = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
        mod["main"] = convert_layouts(mod["main"], self.plan)
        return mod


def convert_layouts(main: relax.Function, plan: LayoutPlan) -> relax.Function:
    """`main` rewritten as ConvertLayoutPerSubgraph says."""
    bindings = bindings_of(main)
    if len(bindings) != len(plan.subgraph_of_binding):
        raise ValueError(f"the layout plan has {len(plan.subgraph_of_binding)} bindings, main {len(bindings)}")
    layout_of = {choice.subgraph: choice.layout for choice in plan.choices}
    model_layout = _model_layout(bindings)
    if all(layout == model_layout for layout in layout_of.values()):
        return main
    attrs = {k: v for k, v in (main.attrs or {}).items()
             if k not in (LAYERS_ATTR, BINDING_LAYERS_ATTR, CONSTANT_LAYERS_ATTR)}
    builder = relax.BlockBuilder()
    mapped: dict[relax.Var, relax.Expr] = {}
    with builder.function("main", list(main.params), attrs=attrs, private=False):
        with builder.dataflow():
            for start, stop in layout_groups(bindings, plan.subgraph_of_binding):
                run = bindings[start:stop]
                layout = layout_of[plan.subgraph_of_binding[start]]
                if layout == model_layout or not any(_conv_layout(b) for b in run):
                    _emit_run(builder, run, mapped)
                else:
                    _emit_converted(builder, run, layout, mapped, bindings[stop:], main.body.body)
            output = builder.emit_output(_substitute(main.body.body, mapped))
        builder.emit_func_output(output)
    # An exit transform the next subgraph's entry undid is read by nothing: dropped here.
    converted = relax.analysis.remove_all_unused(builder.get()["main"])
    return _with_layers_by_name(main, converted)


def _substitute(expr: relax.Expr, mapped: dict[relax.Var, relax.Expr]) -> relax.Expr:
    """`expr` (a binding's value: a call, tuple, item or var) with its vars replaced as `mapped` says."""
    if isinstance(expr, relax.Var):
        return mapped.get(expr, expr)
    if isinstance(expr, relax.Call):
        return relax.Call(expr.op, [_substitute(a, mapped) for a in expr.args], expr.attrs, expr.ty_args)
    if isinstance(expr, relax.Tuple):
        return relax.Tuple([_substitute(f, mapped) for f in expr.fields])
    if isinstance(expr, relax.TupleGetItem):
        return relax.TupleGetItem(_substitute(expr.tuple_value, mapped), expr.index)
    return expr


def _emit_run(builder: relax.BlockBuilder, run: Sequence[relax.Binding], mapped: dict) -> None:
    for binding in run:
        mapped[binding.var] = _emit_value(builder, _substitute(binding.value, mapped), binding.var.name)


def _emit_value(builder: relax.BlockBuilder, value: relax.Expr, name: str) -> relax.Expr:
    """Emit `value` as a binding named `name`; a permute_dims undoing the permute_dims that produced its
    input emits nothing and yields that permute's input."""
    undone = _undone_permute(builder, value)
    if undone is not None:
        return undone
    if isinstance(value, relax.Var):
        return value
    return builder.emit(value, name_hint=name)


def _undone_permute(builder: relax.BlockBuilder, value: relax.Expr) -> Optional[relax.Expr]:
    if not _is_permute(value) or not isinstance(value.args[0], relax.Var):
        return None
    producer = builder.lookup_binding(value.args[0])
    if producer is None or not _is_permute(producer):
        return None
    first, second = [int(a) for a in producer.attrs.axes], [int(a) for a in value.attrs.axes]
    return producer.args[0] if [first[a] for a in second] == list(range(len(first))) else None


def _is_permute(value) -> bool:
    return (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op)
            and value.op.name == "relax.permute_dims" and value.attrs.axes is not None)


def _clip_follows_layouts() -> None:
    """Give relax.clip relax.nn.relu's layout rule (the output takes its input's layout). TVM 0.27's
    ConvertLayout has none for clip, ReLU6 in every MobileNet, so it returned each clip to the model's layout
    with a transpose on each side; a clip is elementwise, its bounds scalars."""
    if tvm.ir.Op.get("relax.clip").get_attr("FRelaxInferLayout") is None:
        tvm.ir.register_op_attr("relax.clip", "FRelaxInferLayout",
                                tvm.ir.Op.get("relax.nn.relu").get_attr("FRelaxInferLayout"))


_clip_follows_layouts()


def _emit_converted(builder: relax.BlockBuilder, run: Sequence[relax.Binding], layout: str, mapped: dict,
                    rest: Sequence[relax.Binding], result: relax.Expr) -> None:
    """Emit `run` rewritten into `layout`: lifted into a function of its own (its entries the parameters,
    the values read after it the results), converted by relax.transform.ConvertLayout, inlined back."""
    defined = [b.var for b in run]
    entries = list(dict.fromkeys(v for b in run for v in relax.analysis.free_vars(b.value) if v not in defined))
    read_later = _read_after(rest, result)
    exits = [v for v in defined if v in read_later]
    lifted = relax.BlockBuilder()
    params = [relax.Var(v.name, v.ty) for v in entries]
    with lifted.function("main", params):
        with lifted.dataflow():
            inner = dict(zip(entries, params))
            for binding in run:
                inner[binding.var] = lifted.emit(_substitute(binding.value, inner), name_hint=binding.var.name)
            outputs = [lifted.emit_output(inner[v]) for v in exits]
        lifted.emit_func_output(relax.Tuple(outputs))
    # a conv2d_transpose stays channels-first (NCHW data, IOHW weights: the layout TVM legalizes; ConvertLayout
    # made it follow its input into NHWC, which no legalization takes), with a permute_dims on each side
    desired = {"relax.nn.conv2d": [layout, KERNEL_LAYOUT[layout]],
               "relax.nn.conv2d_transpose": ["NCHW", "IOHW"]}
    function = relax.transform.ConvertLayout(desired)(lifted.get())["main"]
    inner_mapped = {param: mapped.get(entry, entry) for param, entry in zip(function.params, entries)}
    for binding in bindings_of(function):
        inner_mapped[binding.var] = _emit_value(builder, _substitute(binding.value, inner_mapped),
                                                binding.var.name)
    for var, out in zip(exits, function.body.body.fields):
        mapped[var] = _substitute(out, inner_mapped)


def _with_layers_by_name(before: relax.Function, after: relax.Function) -> relax.Function:
    """`after` carrying `before`'s layer records: a binding of `after` takes the records of the binding of
    `before` with its name, else those of its first reader (a permute_dims takes its conv's or consumer's),
    else (the function's result) those of the binding it aliases."""
    layers = Layers.of(before)
    if not layers.records:
        return after
    records_by_name = {b.var.name: layers.bindings[i] for i, b in enumerate(bindings_of(before))
                       if i < len(layers.bindings)}
    new = bindings_of(after)
    per_binding = [set(records_by_name.get(b.var.name, ())) for b in new]
    first_reader: dict[relax.Var, int] = {}
    for position, binding in enumerate(new):
        for source in relax.analysis.free_vars(binding.value):
            first_reader.setdefault(source, position)
    for position in reversed(range(len(new))):
        if not per_binding[position] and new[position].var in first_reader:
            per_binding[position] = set(per_binding[first_reader[new[position].var]])
    position_of = {binding.var: position for position, binding in enumerate(new)}
    for position, binding in enumerate(new):
        if not per_binding[position] and binding.value in position_of:
            per_binding[position] = set(per_binding[position_of[binding.value]])
    return with_layers(after, layers.records, per_binding, layers.constants)
