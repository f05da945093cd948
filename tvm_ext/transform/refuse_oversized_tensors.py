"""Refuse a module with a tensor larger than any target's memory, before anything folds constants.

FoldConstant computes constant-only bindings on the host: a broadcast of a constant to 2^32 elements is 16 GiB.
The model check refuses such tensors in model files (from their declared and inferred shapes); this pass guards
what it cannot see: Relax modules users build, and shapes only TVM's import works out. Sizes come from the
static shapes alone; nothing is computed.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax, tirx

from tvm_ext.model_check.limits import oversize_problem
from tvm_ext.layers import ORIGINAL_VAR_NAMES_ATTR, Layers, bindings_of


@tvm_ffi.register_error
class OversizedTensorError(RuntimeError):
    """A tensor of `main` fits no target. The pass runs behind TVM's FFI, which re-creates the exception from
    its one-line message (model, tensor, layer, bytes)."""


@tvm.transform.module_pass(opt_level=0, name="RefuseOversizedTensors")
class RefuseOversizedTensors:
    """Raise OversizedTensorError for the first parameter or binding of `main` whose static shape needs more
    bytes than the largest built-in target memory; otherwise return the module unchanged.

    `model_name` only labels the error.
    """

    def __init__(self, model_name: str = "model") -> None:
        self.model_name = model_name

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        layers = Layers.of(main)
        # The model's own names: the compiler renamed every var (tvm_ext.frontend.with_generated_var_names).
        model_name_of = {str(k): str(v) for k, v in (main.attrs or {}).get(ORIGINAL_VAR_NAMES_ATTR, {}).items()}
        sized = [(param, ()) for param in main.params]
        sized += [(binding.var, layers.of_binding(i)) for i, binding in enumerate(bindings_of(main))]
        for var, records in sized:
            problem = _oversize_problem(var.ty)
            if problem:
                layer = f" (layer {'; '.join(r.label for r in records)})" if records else ""
                name = model_name_of.get(var.name, var.name)
                raise OversizedTensorError(f"{self.model_name}: tensor {name}{layer} {problem}")
        return mod


def _oversize_problem(ty) -> str | None:
    """`<dtype>[dims] needs N bytes, more than ...` for a tensor type of static shape that fits no target."""
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return None
    if not all(isinstance(dim, tirx.IntImm) for dim in ty.shape.values):
        return None
    dtype = tvm.DataType(ty.dtype)
    problem = oversize_problem(tuple(int(dim) for dim in ty.shape.values), dtype.bits * dtype.lanes)
    return None if problem is None else f"{ty.dtype}{problem}"
