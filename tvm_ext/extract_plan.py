"""Relax `main` after `tvm_ext.lower` -> the ExecutionPlan (plain data) and the weights (numpy arrays).

`main` must be one dataflow block of: `call_tir` of PrimFuncs, `R.reshape` (a view), var aliases, and a
tuple of outputs. Anything else is an error naming the binding: the plan never silently drops a step.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, tirx

from memory_planner.plan import DTYPE_BYTES, ExecutionPlan, KernelCall, Tensor, TensorRole
from tvm_ext.codegen_c import NUM_OUTPUTS_ATTR, KernelSignature
from tvm_ext.frontend import ImportedModel

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_RESHAPE = tvm.ir.Op.get("relax.reshape")


_MODEL_LAYOUT = {"tflite": "NHWC", "onnx": "NCHW"}


class PlanError(Exception):
    """The lowered module has a construct the plan cannot express; the message names it."""


def unique_kernels(mod: tvm.IRModule, prefix: str) -> tuple[dict[str, tirx.PrimFunc], dict[str, str]]:
    """The PrimFuncs `main` calls, structurally equal ones merged into one C function.

    Returns (C name -> PrimFunc with NUM_OUTPUTS_ATTR set, PrimFunc name in `mod` -> C name). C names are
    `<prefix>_<kind>_<index>`: the kind is the first PrimFunc's name cut to `[a-z0-9_]` (TVM's operator
    vocabulary, e.g. `fused_conv2d_add_relu`), the index counts distinct kernels, so names are unique and
    stable from build to build and no model text reaches them.
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
        func = mod[gvar].with_attr(NUM_OUTPUTS_ATTR, num_outputs).without_attr("global_symbol")
        key = tvm_ffi.structural_hash(func)
        same = next((n for n in by_hash.get(key, []) if tvm_ffi.structural_equal(kernels[n], func)), None)
        if same is None:
            same = f"{prefix}_{_kernel_kind(gvar.name_hint)}_{len(kernels)}"
            kernels[same] = func
            by_hash.setdefault(key, []).append(same)
        c_name_of[gvar.name_hint] = same
    return kernels, c_name_of


def _kernel_kind(name_hint: str) -> str:
    """A PrimFunc's name reduced to lowercase letters, digits and single underscores (at most 40 chars)."""
    return re.sub(r"[^a-z0-9]+", "_", name_hint.lower()).strip("_")[:40].strip("_") or "kernel"


@dataclass
class _PlanBuilder:
    model: ImportedModel
    tensors: dict[str, Tensor]
    name_of: dict[relax.Expr, str]
    constants: dict[str, np.ndarray]

    def tensor_for(self, expr: relax.Expr, layer: str) -> str:
        """The plan tensor name of a call argument (a var or a constant)."""
        if isinstance(expr, relax.Var):
            if expr not in self.name_of:
                raise PlanError(f"{self.model.path.name}: value {expr.name} is used before it is computed")
            return self.name_of[expr]
        if isinstance(expr, tvm.ir.expr.Constant):
            if expr not in self.name_of:
                value = expr.value.numpy()
                name = f"weight{len(self.constants)}"
                self.constants[name] = value
                self.name_of[expr] = self.add(name, value.shape, str(value.dtype), TensorRole.CONSTANT, layer)
            return self.name_of[expr]
        raise PlanError(f"{self.model.path.name}: unsupported argument {type(expr).__name__} in layer {layer}")

    def add(self, name: str, shape, dtype: str, role: TensorRole, layer: str, view_of: str | None = None) -> str:
        shape = tuple(int(d) for d in shape)
        # Image tensors keep the model's own layout: TFLite's NHWC, ONNX's NCHW.
        layout = _MODEL_LAYOUT.get(self.model.format, "") if len(shape) == 4 and role is not TensorRole.CONSTANT else ""
        self.tensors[name] = Tensor(name, shape, dtype, role, layer, view_of=view_of, layout=layout)
        return name

    def add_var(self, var: relax.Var, role: TensorRole, layer: str, view_of: str | None = None) -> str:
        ty = var.ty
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise PlanError(f"{self.model.path.name}: layer {layer} has a non-tensor or dynamic result")
        name = f"act{sum(1 for t in self.tensors.values() if t.role is not TensorRole.CONSTANT)}"
        self.name_of[var] = name
        return self.add(name, [int(d) for d in ty.shape.values], str(ty.dtype), role, layer, view_of)


def _bindings(main: relax.Function) -> list:
    return [b for block in main.body.blocks for b in block.bindings]


def extract_plan(
    mod: tvm.IRModule,
    model: ImportedModel,
    target_name: str,
    c_name_of: dict[str, str],
    signatures: dict[str, KernelSignature],
) -> tuple[ExecutionPlan, dict[str, np.ndarray]]:
    """The plan of `mod["main"]` and its constants (tensor name -> array)."""
    main = mod["main"]
    builder = _PlanBuilder(model, {}, {}, {})
    inputs = []
    for param, spec in zip(main.params, model.inputs):
        inputs.append(builder.add_var(param, TensorRole.INPUT, spec.name))
    layers_per_binding = [[str(n) for n in names] for names in main.attrs.get("tvm_ext.binding_layers", [])]
    calls: list[KernelCall] = []
    for index, binding in enumerate(_bindings(main)):
        layers = tuple(layers_per_binding[index]) if index < len(layers_per_binding) else ()
        layer = layers[-1] if layers else ""
        value = binding.value
        if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR):
            args = tuple(builder.tensor_for(a, layer) for a in value.args[1].fields)
            output = builder.add_var(binding.var, TensorRole.INTERMEDIATE, layer)
            kernel = c_name_of[value.args[0].name_hint]
            scratch = tuple(
                builder.add(
                    f"{output}_scratch{k}", (buf.nbytes // DTYPE_BYTES[buf.dtype],), buf.dtype, TensorRole.SCRATCH, layer
                )
                for k, buf in enumerate(signatures[kernel].scratch)
            )
            calls.append(KernelCall(kernel, layers, args, (output,), scratch))
        elif isinstance(value, relax.Call) and value.op.same_as(_RESHAPE):
            source = builder.tensor_for(value.args[0], layer)
            builder.add_var(binding.var, TensorRole.INTERMEDIATE, layer, view_of=source)
        elif isinstance(value, relax.Var):
            builder.name_of[binding.var] = builder.tensor_for(value, layer)
        elif isinstance(value, relax.Tuple):
            continue
        else:
            raise PlanError(f"{model.path.name}: layer {layer or '?'} lowers to an unsupported step {value.op}")

    outputs = [builder.tensor_for(expr, "") for expr in _output_exprs(main, _bindings(main))]
    plan = ExecutionPlan(model.name, str(model.path), target_name, builder.tensors, calls, inputs, outputs)
    _mark_output_storage(plan, model)
    return plan, builder.constants


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
    """Give the storage of every model output the OUTPUT role: the kernel writes the caller's buffer."""
    roots = set()
    for name in plan.outputs:
        root = plan.storage_of(name)
        role = plan.tensors[root].role
        if role is not TensorRole.INTERMEDIATE or root in roots:
            raise PlanError(
                f"{model.path.name}: output {plan.tensors[name].layer or name} is not computed by the model "
                f"(it is its {role.value} tensor)"
            )
        roots.add(root)
        tensor = plan.tensors[root]
        plan.tensors[root] = dataclasses.replace(tensor, role=TensorRole.OUTPUT)
