"""Refuse a kernel whose loops run a number of times that is not a constant (read from tensor data).

Such a loop (ONNX RoiAlign's sampling grid sized from its regions' coordinates) has no bound the compiler
knows: neither its work nor the places it reaches can be checked, and the bundle promises constant loop
bounds. The pass runs after FuseTIR, before anything counts a kernel's work.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax, tirx

from tvm_ext.layers import Layers, bindings_of, operator_phrase
from tvm_ext.tir.tir_walk import walk

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


@tvm_ffi.register_error
class DataDependentLoopError(RuntimeError):
    """A kernel's loop count is not a constant. The pass runs behind TVM's FFI, which re-creates the
    exception from its one-line message (model, operator, layer)."""


def _has_variable_loop(func: tirx.PrimFunc) -> bool:
    return any(isinstance(node, tirx.For) and not (isinstance(node.min, tirx.IntImm)
                                                   and isinstance(node.extent, tirx.IntImm))
               for node in walk(func.body))


@tvm.transform.module_pass(opt_level=0, name="RefuseDataDependentLoops")
class RefuseDataDependentLoops:
    """Raise DataDependentLoopError naming the layer of the first kernel call of `main` whose PrimFunc has
    a loop with a bound that is not a constant; otherwise return the module unchanged. `model_name` only
    labels the error."""

    def __init__(self, model_name: str = "model") -> None:
        self.model_name = model_name

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        main = mod["main"]
        layers = Layers.of(main)
        for position, binding in enumerate(bindings_of(main)):
            value = binding.value
            if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
                continue
            func = mod[value.args[0]]
            if isinstance(func, tirx.PrimFunc) and _has_variable_loop(func):
                records = layers.of_binding(position)
                where = operator_phrase(records) if records else f"the kernel {value.args[0].name_hint}"
                raise DataDependentLoopError(f"{self.model_name}: {where} is refused: its kernel loops a number "
                                             "of times read from tensor data (no bound to check)")
        return mod
