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

The prefix is a chain from a model input: each tensor read by exactly one operator, which is a window operator
in NHWC (conv2d, max_pool2d, avg_pool2d, not ceil mode) or an elementwise one (quantize, dequantize, clip,
relu, leaky relu, and add, subtract, multiply, maximum, minimum with a tensor constant over the channels), with one
operand on the chain. `window_chain` finds it; a stage is one window operator and the elementwise operators
around it up to the tensor the next stage dequantizes (or casts: an int8 average pool sums in int32).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import relax

from tvm_ext.kernels.pool import average_of_sums, row_sums
from tvm_ext.layers import OPAQUE_PATTERN, Layers, bindings_of, carry_layers, with_layers
from tvm_ext.patch_geometry import (Range, Region, WindowStage, patch_regions, receptive_rows, split, stream_rows,
                                    top_stage)

_WINDOW_OPS = ("relax.nn.conv2d", "relax.nn.max_pool2d", "relax.nn.avg_pool2d")
_UNARY_OPS = ("relax.dequantize", "relax.quantize", "relax.clip", "relax.nn.relu", "relax.nn.leakyrelu", "relax.astype")
_CHANNEL_CONSTANT_OPS = ("relax.add", "relax.subtract", "relax.multiply", "relax.maximum", "relax.minimum")


@tvm_ffi.register_error
class PatchPlanError(RuntimeError):
    """A cut or grid the model's window chain cannot take (one line: what and the chain's limits). Raised behind
    TVM's FFI, which re-creates it from its message alone."""


@dataclass(frozen=True)
class ChainStage:
    """One stage of the window chain: its geometry, the position (in the chain's bindings) of its window
    operator and of its output binding."""

    geometry: WindowStage
    window: int
    output: int


@dataclass(frozen=True)
class WindowChain:
    """The chain of bindings from a model input `source` through the window stages (see the module)."""

    source: relax.Var
    bindings: tuple[relax.Binding, ...]
    stages: tuple[ChainStage, ...]

    @property
    def geometries(self) -> list[WindowStage]:
        return [stage.geometry for stage in self.stages]


def window_chain(func: relax.Function) -> WindowChain | None:
    """The longest window chain from one of `func`'s inputs (the first with the most stages), or None when
    no input starts a chain of at least two window stages."""
    bindings = bindings_of(func)
    readers: dict[relax.Var, list[relax.Binding]] = {}
    for binding in bindings:
        for var in _vars_in(binding.value):
            readers.setdefault(var, []).append(binding)
    outputs = set(_vars_in(func.body.body))
    computed = set(func.params)  # the vars computed from an input: the chain's operators read none but its own
    for binding in bindings:
        if any(var in computed for var in _vars_in(binding.value)):
            computed.add(binding.var)
    best = None
    for param in func.params:
        chain = _chain_from(param, readers, outputs, computed)
        if chain is not None and (best is None or len(chain.stages) > len(best.stages)):
            best = chain
    return best


def _chain_from(source: relax.Var, readers: dict, outputs: set, computed: set) -> WindowChain | None:
    if not _is_nhwc_tensor(source):
        return None
    chain: list[relax.Binding] = []
    current = source
    while current not in outputs and len(readers.get(current, ())) == 1:
        binding = readers[current][0]
        if not _continues_chain(binding.value, current) or any(
                var in computed for arg in binding.value.args[1:] for var in _vars_in(arg)):
            break
        chain.append(binding)
        current = binding.var
    windows = [i for i, b in enumerate(chain) if _is_call(b.value, _WINDOW_OPS)]
    stages: list[ChainStage] = []
    for k, window in enumerate(windows):
        end = windows[k + 1] if k + 1 < len(windows) else len(chain)
        output = end - 1
        while output > window and _widens(chain[output].value):
            output -= 1
        if chain[output].var.ty.dtype != source.ty.dtype:
            break  # the chain ends inside this stage (e.g. before its quantize): no stored output to cut at
        stages.append(ChainStage(_geometry(chain[window].value, str(k), _element_bytes(chain[output].var)), window,
                                 output))
    return WindowChain(source, tuple(chain), tuple(stages)) if len(stages) >= 2 else None


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
               and all(int(p) == 0 for p in attrs.padding) and str(data.ty.dtype) == "int32")
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


@tvm.transform.module_pass(opt_level=0, name="RunPrefixInPatches")
class RunPrefixInPatches:
    """`main` with the prefix of its window chain up to stage `cut` (1-based: the output of the cut-th window
    stage) computed in a rows x columns `grid` of patches (see the module). Raises PatchPlanError when `main`
    has no window chain of `cut` stages, or the grid has more rows or columns than the stage output. The
    result keeps the layer records: a branch's operators carry their layer's, its slice the first layer's,
    the concatenation the cut layer's."""

    def __init__(self, cut: int, grid: tuple[int, int], driver: int | None = None) -> None:
        self.cut = cut
        self.grid = grid
        self.driver = driver  # streamed: the stage (0-based) whose output rows the grid[0] bands split

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        before = mod["main"]
        chain = window_chain(before)
        if chain is None or not 1 <= self.cut <= len(chain.stages):
            stages = 0 if chain is None else len(chain.stages)
            raise PatchPlanError(f"a patch cut after window stage {self.cut} needs a chain of that many windowed "
                                 f"NHWC stages from a model input; this model has {stages}")
        out_hw = chain.stages[self.cut - 1].geometry.out_hw
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
        rewriter = _PrefixRewriter(mod, chain, self.cut, self.grid, Layers.of(before), self.driver)
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
                 layers: Layers, driver: int | None = None) -> None:
        super().__init__(mod)
        self.chain = chain
        self.cut = cut
        self.grid = grid
        self.driver = driver
        self.last = chain.stages[cut - 1].output
        self.prefix = {b.var: i for i, b in enumerate(chain.bindings[:self.last + 1])}
        position = {b.var: i for i, b in enumerate(bindings_of(mod["main"]))}
        self.layers_of = [layers.bindings[position[b.var]] if position[b.var] < len(layers.bindings) else ()
                          for b in chain.bindings[:self.last + 1]]
        self.records: dict[relax.Var, tuple[int, ...]] = {}

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
            current = self._stage(stage, current, regions[stage + 1], suffix)
        return current

    def _source_tile(self, region: Region, suffix: str) -> relax.Expr:
        """`region` of the chain's source: a slice (a copy), or the source itself when it is all of it."""
        (r0, r1), (c0, c1) = region
        source = self.visit_expr(self.chain.source)
        if (r0, r1, c0, c1) == (0, _hw(source)[0], 0, _hw(source)[1]):
            return source
        return self._emit(relax.op.strided_slice(source, [1, 2], [r0, c0], [r1, c1]), f"slice_{suffix}",
                          self.layers_of[0])

    def _stage(self, stage: int, tile: relax.Expr, region_out: Region, suffix: str) -> relax.Var:
        """Window stage `stage`'s operators (from the binding after the stage before's output to its own output)
        on `tile`, the clipped receptive field of its output region `region_out`."""
        first = 0 if stage == 0 else self.chain.stages[stage - 1].output + 1
        current = tile
        for index in range(first, self.chain.stages[stage].output + 1):
            binding = self.chain.bindings[index]
            value = binding.value
            if index == self.chain.stages[stage].window:
                new = _window_on_patch(value, current, _patch_padding(self.chain.stages[stage].geometry, region_out))
            else:
                new = relax.Call(value.op, [current, *(self.visit_expr(a) for a in value.args[1:])], value.attrs)
            current = self._emit(new, f"{binding.var.name}_{suffix}", self.layers_of[index])
        return current

    def _streamed(self, driver: int) -> relax.Var:
        """The prefix in bands of rows (tvm_ext.patch_geometry.stream_rows, the bands splitting stage `driver`'s
        output rows), each stage computing only its new rows: every stage after the first keeps the chunks of
        its input rows (the stage before's new rows, band by band) a later band still reads, and joins its
        input tile from them (a concatenation; slices of the chunks at its ends); a reducing last stage (a
        global average pool) adds each band's rows to running int32 sums, averaged after the last band."""
        geometries = self.chain.geometries[:self.cut]
        schedule = stream_rows(geometries, self.grid[0], driver)
        kept: list[list[tuple[Range, relax.Var]]] = [[] for _ in geometries]
        delivered: list[relax.Var] = []
        sums: relax.Var | None = None
        for k, rows in enumerate(schedule):
            fresh: tuple[Range, relax.Var] | None = None  # the stage before's new rows in this band
            for i, (geometry, out_rows) in enumerate(zip(geometries, rows)):
                if i > 0 and fresh is not None:
                    kept[i].append(fresh)
                fresh = None
                suffix = f"b{k}"
                if geometry.reduces:
                    for _, chunk in kept[i]:
                        sums = self._emit(self._kernel(row_sums, chunk, *(() if sums is None else (sums,))),
                                          f"row_sums_{suffix}", self._records_of_stage(i))
                    kept[i] = []
                    continue
                if out_rows[0] == out_rows[1]:
                    continue
                in_rows = receptive_rows(out_rows, geometry.kernel[0], geometry.stride[0], geometry.pad[0],
                                         geometry.in_hw[0])
                if i == 0:
                    tile = self._source_tile((in_rows, (0, geometry.in_hw[1])), suffix)
                else:
                    tile = self._join(i, kept[i], in_rows, suffix)
                    following = next((later[i] for later in schedule[k + 1:] if later[i][0] < later[i][1]), None)
                    start = geometry.in_hw[0] if following is None else receptive_rows(
                        following, geometry.kernel[0], geometry.stride[0], geometry.pad[0], geometry.in_hw[0])[0]
                    kept[i] = self._still_read(i, kept[i], start, suffix)
                fresh = (out_rows, self._stage(i, tile, (out_rows, (0, geometry.out_hw[1])), suffix))
            if not geometries[-1].reduces and fresh is not None:
                delivered.append(fresh[1])
        if geometries[-1].reduces:
            return self._finish_sums(sums, geometries[-1])
        return self._concat(delivered, 1, "streamed")

    def _still_read(self, stage: int, chunks: list[tuple[Range, relax.Var]], start: int,
                    suffix: str) -> list[tuple[Range, relax.Var]]:
        """The kept `chunks` of stage `stage`'s input rows from row `start` on (what a later band reads): a chunk
        reaching below `start` sliced to its rows from there (a copy: the rest of the chunk then dies)."""
        still = []
        for (first, stop), chunk in chunks:
            if stop <= start:
                continue
            if first < start:
                chunk = self._emit(relax.op.strided_slice(chunk, [1], [start - first], [stop - first]),
                                   f"halo{stage}_{suffix}", self._records_of_stage(stage))
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
        cast, the pool and the narrowing cast of an integer average pool (the int8 lowering's pattern)."""
        stage = self.chain.stages[self.cut - 1]
        first = self.chain.stages[self.cut - 2].output + 1
        casts = [self.chain.bindings[i].value for i in range(first, stage.output + 1) if i != stage.window]
        if stage.output != stage.window + 1 or not all(_is_call(c, ("relax.astype",)) for c in casts):
            raise PatchPlanError(f"window stage {self.cut} is a global average pool, but not of an integer tensor "
                                 "cast to int32 and back: it cannot be summed band by band")
        dtype = str(self.chain.bindings[stage.output].var.ty.dtype)
        return self._emit(self._kernel(average_of_sums, sums, count=geometry.in_hw[0] * geometry.in_hw[1],
                                       dtype=dtype), "average_of_sums", self._records_of_stage(self.cut - 1))

    def _concat(self, pieces: list[relax.Var], axis: int, name: str) -> relax.Var:
        """`pieces` concatenated along `axis` (the int8 lowering's CONCATENATION of int8 tensors, a copy)."""
        if len(pieces) == 1:
            return pieces[0]
        return self._emit(relax.op.concat(pieces, axis), name, self.layers_of[self.last])
