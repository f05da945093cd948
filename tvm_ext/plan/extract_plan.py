"""Relax `main` after `tvm_ext.lower` -> the ExecutionPlan (plain data) and the weights (numpy arrays).

`main` must be one dataflow block of: `call_tir` of PrimFuncs (a kernel with several outputs returns a tuple,
whose fields are read by `TupleGetItem`), `R.reshape` (a view), `R.memory.view` (a view from a byte offset on:
tvm_ext.transform.contiguous_views), `R.concat` (a join in place: each piece's storage a view of its result,
tvm_ext.transform.joins_in_place), var aliases, and a tuple of outputs. Anything else is an error naming the binding: the plan never silently drops a step.
`add_output_copies` runs first: it gives every model output storage of its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te, tirx

from memory_planner.plan import (
    DTYPE_BYTES, ExecutionPlan, InplaceOutput, KernelAccess, KernelCall, KernelSignature, ModelOperator, Tensor,
    TensorRole,
)
from target.profile import Profile
from tvm_ext.plan.constant_pool import ConstantPool
from tvm_ext.frontend import ImportedModel, image_layout
from tvm_ext.tir.kernel_names import constant_roles, kernel_kind, kernel_window
from tvm_ext.layers import (CONSTANT_RANGES_ATTR, NUM_OUTPUTS_ATTR, OPERAND_ROLES_ATTR, STATE_OPERAND_ATTR,
                            LayerRecord, Layers, rewritten_operands, with_layers)
from tvm_ext.plan.macs import mac_count_of, with_mac_count
from tvm_ext.transform.partition_subgraphs import binding_subgraphs

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_RESHAPE = tvm.ir.Op.get("relax.reshape")
_VIEW = tvm.ir.Op.get("relax.memory.view")
_VIEW_OPS = (_RESHAPE, _VIEW)
_JOIN = tvm.ir.Op.get("relax.concat")  # a join in place: tvm_ext.transform.joins_in_place


class PlanError(Exception):
    """The lowered module has a construct the plan cannot express; the message names it."""


def add_output_copies(mod: tvm.IRModule, model: ImportedModel) -> tvm.IRModule:
    """`mod` with a copy kernel for each model output that has no storage of its own.

    The bundle writes every output into the caller's buffer, so an output must be the result of a kernel
    and of no other output. An output that is a model input or a view of one (Identity, Flatten or Reshape
    of an input), a constant, or the storage of an earlier output (`Y` and `Identity(Y)`) gets a `call_tir`
    of a copy PrimFunc (a TE identity, compiled by the same C code generator as every kernel), labelled with
    the output's name. Returns `mod` unchanged when every output has its own storage.
    """
    main = mod["main"]
    bindings = _bindings(main)
    outputs = _output_exprs(main, bindings)
    copied = _outputs_without_own_storage(outputs, bindings)
    if not copied:
        return mod
    mod = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
    fields = list(outputs)
    copies = []
    copy_layers = []
    for index in copied:
        name = f"output_copy{index}"
        mod[name] = _copy_kernel(outputs[index].ty)
        fields[index] = relax.Var(name, outputs[index].ty)
        call = relax.call_tir(mod.get_global_var(name), relax.Tuple([outputs[index]]), outputs[index].ty)
        copies.append(relax.VarBinding(fields[index], call))
        output_name = model.outputs[index].name if index < len(model.outputs) else name
        copy_layers.append(LayerRecord(output_name, "output copy", index))
    mod["main"] = _with_bindings_appended(main, bindings, copies, copy_layers, fields)
    return mod


def _outputs_without_own_storage(outputs: list[relax.Expr], bindings: list) -> list[int]:
    """Indices of the outputs whose storage is not a kernel result distinct from every earlier output's."""
    value_of = {b.var: b.value for b in bindings}
    taken: set[relax.Var] = set()
    copied = []
    for index, expr in enumerate(outputs):
        # Follow aliases and reshapes (views) to the storage: a call_tir result (or one field of a kernel's
        # several results), or a parameter or constant.
        while isinstance(expr, relax.Var) and (
            isinstance(value_of.get(expr), relax.Var)
            or (isinstance(value_of.get(expr), relax.Call) and any(value_of[expr].op.same_as(op) for op in _VIEW_OPS))
        ):
            value = value_of[expr]
            expr = value if isinstance(value, relax.Var) else value.args[0]
        value = value_of.get(expr) if isinstance(expr, relax.Var) else None
        storage = (value.tuple_value, value.index) if isinstance(value, relax.TupleGetItem) else expr
        source = value_of.get(storage[0]) if isinstance(storage, tuple) else value
        if not isinstance(source, relax.Call) or storage in taken:
            copied.append(index)
        else:
            taken.add(storage)
    return copied


def _copy_kernel(ty: relax.TensorType) -> tirx.PrimFunc:
    """A PrimFunc writing a copy of its one input (shape and dtype of `ty`) to its one output."""
    shape = [int(d) for d in ty.shape.values]
    source = te.placeholder(shape, str(ty.dtype), name="source")
    copy = te.compute(shape, lambda *index: source(*index), name="copy")
    return with_mac_count(te.create_prim_func([source, copy]))


def _with_bindings_appended(main: relax.Function, bindings: list, appended: list, appended_layers: list,
                            fields: list[relax.Expr]) -> relax.Function:
    """`main` with `appended` bindings after its last binding and `fields` as its outputs.

    The bindings go into the last block (a dataflow block's outputs are visible only there), or a new block
    when there is none; a tuple of outputs bound in that block is rebound after them. The layer names of
    the bindings (tvm_ext.layers) follow the same order; each appended binding implements its record of
    `appended_layers`.
    """
    blocks = list(main.body.blocks)
    result = main.body.body
    existing = Layers.of(main)
    records = list(existing.records) + list(appended_layers)
    layers = [list(existing.bindings[i]) if i < len(existing.bindings) else [] for i in range(len(bindings))]
    appended_layers = [[len(existing.records) + k] for k in range(len(appended_layers))]
    last = blocks.pop() if blocks else relax.BindingBlock([])
    tuple_binding = next(
        (b for b in last.bindings if b.var.same_as(result) and isinstance(b.value, relax.Tuple)), None
    )
    kept = [b for b in last.bindings if tuple_binding is None or not b.same_as(tuple_binding)]
    tail = list(appended)
    if tuple_binding is not None:
        tail.append(relax.VarBinding(tuple_binding.var, relax.Tuple(fields)))
        index = next(i for i, b in enumerate(bindings) if b.same_as(tuple_binding))
        layers = layers[:index] + layers[index + 1:] + appended_layers + [layers[index]]
        body = result
    else:
        layers += appended_layers
        body = relax.Tuple(fields) if isinstance(result, relax.Tuple) else fields[0]
    block_type = relax.DataflowBlock if isinstance(last, relax.DataflowBlock) else relax.BindingBlock
    blocks.append(block_type(kept + tail))
    function = relax.Function(main.params, relax.SeqExpr(blocks, body), main.ret_ty, main.is_pure, main.attrs)
    return with_layers(function, records, layers, existing.constants)


def unique_kernels(mod: tvm.IRModule, prefix: str) -> tuple[dict[str, tirx.PrimFunc], dict[str, str]]:
    """The PrimFuncs `main` calls, structurally equal ones merged into one C function.

    Returns (C name -> PrimFunc with NUM_OUTPUTS_ATTR set, PrimFunc name in `mod` -> C name). C names are
    `<prefix>_<kind>[_<window>]_<shape>` (tvm_ext.tir.kernel_names): the kind is the first PrimFunc's name in
    TVM's operator vocabulary without FuseOps' `fused` and TVM's de-duplication digits (`conv2d_add_relu`),
    the window its sliding window if it has one (`3x3_s2`), the shape its first output's dimensions after the
    leading ones (`25x5x64`); a name taken by an earlier distinct kernel gets `_2`, `_3`, ... in call order.
    So names are unique and stable from build to build and no model text reaches them. A kernel without
    operand roles (TVM's legalized float operators) gets them from its constants (`constant_roles`).
    """
    kernels: dict[str, tirx.PrimFunc] = {}
    c_name_of: dict[str, str] = {}
    by_hash: dict[int, list[str]] = {}
    for binding in _bindings(mod["main"]):
        value = binding.value
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
            continue
        gvar = value.args[0]
        if gvar.name_hint in c_name_of:
            continue
        out_ty = binding.var.ty
        num_outputs = len(out_ty.fields) if isinstance(out_ty, relax.TupleType) else 1
        func = _with_constant_roles(mod[gvar].with_attr(NUM_OUTPUTS_ATTR, num_outputs), value.args[1].fields)
        func = func.without_attr("global_symbol")
        key = tvm_ffi.structural_hash(func)
        same = next((n for n in by_hash.get(key, []) if tvm_ffi.structural_equal(kernels[n], func)), None)
        if same is None:
            first_output = out_ty.fields[0] if isinstance(out_ty, relax.TupleType) else out_ty
            window = kernel_window(func)
            kind = kernel_kind(gvar.name_hint) + (f"_{window.label}" if window is not None else "")
            same = _first_free(f"{prefix}_{kind}_{_shape_label(first_output)}", kernels)
            kernels[same] = func
            by_hash.setdefault(key, []).append(same)
        c_name_of[gvar.name_hint] = same
    return _with_constant_ranges(mod, kernels, c_name_of), c_name_of


def _with_constant_ranges(mod: tvm.IRModule, kernels: dict[str, tirx.PrimFunc],
                          c_name_of: dict[str, str]) -> dict[str, tirx.PrimFunc]:
    """`kernels`, each with CONSTANT_RANGES_ATTR when some operand is an integer constant in every call of it:
    the operand's position and the smallest and largest value it holds in any call (what tvm_ext.codegen.index_checks
    knows of a position read from a constant, such as a compile-time index table)."""
    ranges: dict[str, dict[int, tuple[int, int] | None]] = {}
    for binding in _bindings(mod["main"]):
        value = binding.value
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
            continue
        known = ranges.setdefault(c_name_of[value.args[0].name_hint], {})
        for position, operand in enumerate(value.args[1].fields):
            extent = _integer_extent(operand)
            if position not in known:
                known[position] = extent
            elif known[position] is not None:
                old = known[position]
                known[position] = None if extent is None else (min(old[0], extent[0]), max(old[1], extent[1]))
    found = {}
    for name, func in kernels.items():
        entries = [[p, low, high] for p, extent in sorted(ranges.get(name, {}).items()) if extent is not None
                   for low, high in [extent]]
        found[name] = func.with_attr(CONSTANT_RANGES_ATTR, entries) if entries else func
    return found


def _integer_extent(operand: relax.Expr) -> tuple[int, int] | None:
    """(smallest, largest) value of a non-empty integer constant, else None."""
    if not isinstance(operand, tvm.ir.expr.Constant):
        return None
    values = operand.value.numpy()
    if values.dtype.kind not in "iu" or values.size == 0:
        return None
    return int(values.min()), int(values.max())


def _with_constant_roles(func: tirx.PrimFunc, operands) -> tirx.PrimFunc:
    """`func` with OPERAND_ROLES_ATTR from `constant_roles` when it has none and they are known."""
    if OPERAND_ROLES_ATTR in (func.attrs or {}):
        return func
    num_inputs = len(func.params) - int(func.attrs[NUM_OUTPUTS_ATTR])
    constant = [isinstance(operand, tvm.ir.expr.Constant) for operand in operands]
    roles = constant_roles(func, num_inputs, constant) if len(constant) == num_inputs else None
    return func if roles is None else func.with_attr(OPERAND_ROLES_ATTR, roles)


def _shape_label(ty: relax.TensorType) -> str:
    """`25x5x64` for a (1, 25, 5, 64) tensor: the dimensions after the leading ones ("1" if all are)."""
    dims = [int(d) for d in ty.shape.values] if isinstance(ty, relax.TensorType) and ty.shape is not None else []
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    return "x".join(str(d) for d in dims) or "1"


def _first_free(name: str, taken: dict[str, object]) -> str:
    """`name`, or `name_2`, `name_3`, ... : the first not in `taken`."""
    count = 1
    candidate = name
    while candidate in taken:
        count += 1
        candidate = f"{name}_{count}"
    return candidate


@dataclass
class _PlanBuilder:
    model: ImportedModel
    tensors: dict[str, Tensor]
    name_of: dict[relax.Expr, str]
    constants: ConstantPool
    layers: Layers
    state_reset: dict[str, int] = field(default_factory=dict)  # STATE tensor -> its reset value
    results: dict[relax.Var, tuple[str, ...]] = field(default_factory=dict)  # a kernel's tuple var -> its outputs

    def tensor_for(self, expr: relax.Expr, layer: str, constant_name: str = "") -> str:
        """The plan tensor name of a call argument (a var or a constant).

        A constant seen for the first time is the earlier constant of its dtype, shape and bytes
        (`ConstantPool`), else named `constant_name` (e.g. `l3_bias`: the call's index and the kernel parameter
        it is passed as), or `constant<N>` when the caller gives none; it is labelled with the layers that
        read it (its records), else with `layer`.
        """
        if isinstance(expr, relax.Var):
            if expr not in self.name_of:
                raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} reads a value before it is computed")
            return self.name_of[expr]
        if isinstance(expr, tvm.ir.expr.Constant):
            if expr not in self.name_of:
                value = expr.value.numpy()
                readers = [record.label for record in self.layers.of_constant(expr)] or [layer]
                name = self.constants.add(constant_name or f"constant{len(self.constants.arrays)}", value, readers)
                self.name_of[expr] = self.add(name, value.shape, str(value.dtype), TensorRole.CONSTANT,
                                              self.constants.readers_label(name))
            return self.name_of[expr]
        raise PlanError(
            f"{self.model.path.name}: {_layer_label(layer)} lowers to an unsupported argument {type(expr).__name__}"
        )

    def state_for(self, expr: relax.Expr, layer: str) -> str:
        """A STATE tensor for the constant `expr`, whose every element is the state's reset value."""
        value = expr.value.numpy() if isinstance(expr, tvm.ir.expr.Constant) else None
        if value is None or value.size == 0 or np.any(value != value.flat[0]):
            raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} has a state without one reset value")
        name = self.add(f"state{len(self.state_reset)}", value.shape, str(value.dtype), TensorRole.STATE, layer)
        self.state_reset[name] = int(value.flat[0])
        return name

    def add(self, name: str, shape, dtype: str, role: TensorRole, layer: str, view_of: str | None = None,
            view_offset: int = 0) -> str:
        shape = tuple(int(d) for d in shape)
        # Image tensors keep the model's own layout: TFLite's NHWC, ONNX's NCHW.
        layout = image_layout(shape, self.model.format) if role is not TensorRole.CONSTANT else ""
        self.tensors[name] = Tensor(name, shape, dtype, role, layer, view_of=view_of, layout=layout,
                                    view_offset=view_offset)
        return name

    def add_results(self, var: relax.Var, layer: str, view_of: str | None = None) -> tuple[str, ...]:
        """The tensors of a kernel call's result `var`: one, or one per field of its tuple (a kernel with
        several outputs, each then read through a `TupleGetItem` of `var`); `view_of` for a single one."""
        ty = var.ty
        if not isinstance(ty, relax.TupleType):
            return (self.add_var(var, TensorRole.INTERMEDIATE, layer, view_of),)
        names = []
        for field_ty in ty.fields:
            if not isinstance(field_ty, relax.TensorType) or field_ty.shape is None or view_of is not None:
                raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} has a non-tensor or dynamic result")
            name = f"act{sum(1 for t in self.tensors.values() if t.role is not TensorRole.CONSTANT)}"
            names.append(self.add(name, [int(d) for d in field_ty.shape.values], str(field_ty.dtype),
                                  TensorRole.INTERMEDIATE, layer))
        self.results[var] = tuple(names)
        return tuple(names)

    def add_join(self, var: relax.Var, pieces: list[relax.Expr], layer: str) -> str:
        """The tensor of an in-place join's result `var` (tvm_ext.transform.joins_in_place): a storage of its own,
        each of `pieces` in order from byte 0 on; every piece's storage becomes a view of it there, so the kernel
        that writes the piece writes the join's bytes."""
        join = self.add_var(var, TensorRole.INTERMEDIATE, layer)
        offset = 0
        for piece in pieces:
            name = self.tensor_for(piece, layer)
            root = name  # through reshapes (views of all the bytes) to the storage
            while self.tensors[root].view_of is not None and self.tensors[root].view_offset == 0:
                root = self.tensors[root].view_of
            tensor = self.tensors[root]
            if tensor.view_of is not None or tensor.role is not TensorRole.INTERMEDIATE \
                    or tensor.nbytes != self.tensors[name].nbytes:
                raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} joins a piece that is no storage "
                                "of its own in place")
            self.tensors[root] = dataclasses.replace(tensor, view_of=join, view_offset=offset)
            offset += tensor.nbytes
        if offset != self.tensors[join].nbytes:
            raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} joins pieces of {offset} bytes into "
                            f"{self.tensors[join].nbytes}")
        return join

    def add_var(self, var: relax.Var, role: TensorRole, layer: str, view_of: str | None = None,
                view_offset: int = 0) -> str:
        ty = var.ty
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise PlanError(f"{self.model.path.name}: {_layer_label(layer)} has a non-tensor or dynamic result")
        name = f"act{sum(1 for t in self.tensors.values() if t.role is not TensorRole.CONSTANT)}"
        self.name_of[var] = name
        return self.add(name, [int(d) for d in ty.shape.values], str(ty.dtype), role, layer, view_of, view_offset)


def _state_operand(kernel: relax.Expr) -> int | None:
    """The index of the operand a kernel rewrites as the model's state (int8/svdf.py's attribute), else None."""
    attrs = kernel.attrs if isinstance(kernel, tirx.PrimFunc) else None
    return int(attrs[STATE_OPERAND_ATTR]) if attrs is not None and STATE_OPERAND_ATTR in attrs else None


def _layer_label(layer: str) -> str:
    """A model layer as messages name it: `layer 'conv1 (Conv)'`, or `a layer without a name`."""
    return f"layer {layer!r}" if layer else "a layer without a name"


def _bindings(main: relax.Function) -> list:
    return [b for block in main.body.blocks for b in block.bindings]


def extract_plan(
    mod: tvm.IRModule,
    model: ImportedModel,
    profile: Profile,
    c_name_of: dict[str, str],
    signatures: dict[str, KernelSignature],
) -> tuple[ExecutionPlan, dict[str, np.ndarray]]:
    """The plan of `mod["main"]` for the device `profile`, and its constants (tensor name -> array)."""
    main = mod["main"]
    builder = _PlanBuilder(model, {}, {}, ConstantPool(), Layers.of(main))
    subgraphs = binding_subgraphs(main)
    inputs = []
    for param, spec in zip(main.params, model.inputs):
        inputs.append(builder.add_var(param, TensorRole.INPUT, spec.name))
    calls: list[KernelCall] = []
    for index, binding in enumerate(_bindings(main)):
        records = builder.layers.of_binding(index)
        layers = tuple(record.label for record in records)
        layer = layers[-1] if layers else ""  # the layer whose result the binding's value is (model order)
        value = binding.value
        if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR):
            kernel = c_name_of[value.args[0].name_hint]
            parameters = signatures[kernel].parameters
            state_operand = _state_operand(mod[value.args[0]])
            rewritten = rewritten_operands(mod[value.args[0]])  # in place, besides the output (int8/lstm.py)
            states = rewritten if state_operand is None else rewritten | {state_operand}
            args = tuple(builder.state_for(a, layer) if k in states
                         else builder.tensor_for(a, layer, f"l{len(calls)}_{parameter.name}")
                         for k, (a, parameter) in enumerate(zip(value.args[1].fields, parameters)))
            # A kernel that rewrites the model's state writes its output over the state (see int8/svdf.py).
            state = args[state_operand] if state_operand is not None else None
            outputs = builder.add_results(binding.var, layer, view_of=state)
            scratch = tuple(
                builder.add(
                    f"{outputs[0]}_scratch{k}", (buf.nbytes // DTYPE_BYTES[buf.dtype],), buf.dtype, TensorRole.SCRATCH,
                    layer)
                for k, buf in enumerate(signatures[kernel].scratch)
            )
            operators = tuple(ModelOperator(r.name, r.kind, r.operator_index) for r in records)
            calls.append(KernelCall(kernel, layers, args, outputs, scratch,
                                    _access(signatures[kernel], args, outputs), operators=operators,
                                    macs=mac_count_of(mod[value.args[0]]), subgraph=subgraphs[index],
                                    checks_indices=signatures[kernel].checks_indices,
                                    stack_array_bytes=signatures[kernel].stack_array_bytes))
        elif isinstance(value, relax.Call) and any(value.op.same_as(op) for op in _VIEW_OPS):
            source = builder.tensor_for(value.args[0], layer)
            offset = int(value.args[3].value) if value.op.same_as(_VIEW) else 0  # bytes into `source`
            builder.add_var(binding.var, TensorRole.INTERMEDIATE, layer, view_of=source, view_offset=offset)
        elif isinstance(value, relax.Call) and value.op.same_as(_JOIN):
            builder.add_join(binding.var, list(value.args[0].fields), layer)
        elif isinstance(value, relax.Var):
            builder.name_of[binding.var] = builder.tensor_for(value, layer)
        elif isinstance(value, relax.TupleGetItem) and value.tuple_value in builder.results:
            builder.name_of[binding.var] = builder.results[value.tuple_value][value.index]
        elif isinstance(value, relax.Tuple):
            continue
        else:
            step = value.op.name if isinstance(value, relax.Call) else type(value).__name__
            raise PlanError(f"{model.path.name}: {_layer_label(layer)} lowers to an unsupported step {step}")

    outputs = [builder.tensor_for(expr, "") for expr in _output_exprs(main, _bindings(main))]
    # The base name only: a bundle never records where the model was on the machine that compiled it.
    plan = ExecutionPlan(model.name, model.path.name, profile.name, builder.tensors, calls, inputs, outputs,
                         builder.state_reset)
    _mark_output_storage(plan, model)
    _add_io_facts(plan, model)
    return plan, builder.constants.arrays


def _add_io_facts(plan: ExecutionPlan, model: ImportedModel) -> None:
    """Give each model input and output tensor its quantization and axis order as the model declares them
    (`TensorSpec.quant`, `.layout`): the facts the bundle's header and manifest state."""
    for names, specs in ((plan.inputs, model.inputs), (plan.outputs, model.outputs)):
        for name, spec in zip(names, specs):
            tensor = plan.tensors[name]
            plan.tensors[name] = dataclasses.replace(tensor, quant=spec.quant, layout=spec.layout or tensor.layout)


def _access(signature: KernelSignature, inputs: tuple[str, ...], outputs: tuple[str, ...]) -> KernelAccess:
    """The call's in-place facts: the kernel's stream orders, its parameters named by the call's tensors."""
    return KernelAccess(tuple(InplaceOutput(outputs[s.output], inputs[s.input], s.order) for s in signature.streams))


def _output_exprs(main: relax.Function, bindings: list) -> list[relax.Expr]:
    result = main.body.body
    if isinstance(result, relax.Var):
        bound = next((b.value for b in bindings if b.var.same_as(result)), None)
        if isinstance(bound, relax.Tuple):
            return list(bound.fields)
    if isinstance(result, relax.Tuple):
        return list(result.fields)
    return [result]


def _mark_output_storage(plan: ExecutionPlan, model: ImportedModel) -> None:
    """Give the storage of every model output the OUTPUT role: the kernel writes the caller's buffer.

    `add_output_copies` gave each output storage of its own: an output without is our bug (RuntimeError).
    """
    roots = set()
    for index, name in enumerate(plan.outputs):
        root = plan.storage_of(name)
        role = plan.tensors[root].role
        if role is not TensorRole.INTERMEDIATE or root in roots:
            output = model.outputs[index].name if index < len(model.outputs) else plan.tensors[name].layer
            raise RuntimeError(
                f"{model.path.name}: output {output!r} has no storage of its own (it is a {role.value} tensor "
                "or another output's), although add_output_copies ran"
            )
        roots.add(root)
        tensor = plan.tensors[root]
        plan.tensors[root] = dataclasses.replace(tensor, role=TensorRole.OUTPUT)
