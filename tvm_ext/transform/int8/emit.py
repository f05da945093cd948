"""Emits the matched operators' kernel calls into the new ``main``, sharing each distinct PrimFunc."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional, Sequence

import tvm
from tvm import relax

from tvm_ext.layers import OPERAND_ROLES_ATTR, LayerRecord

from .graph import Graph
from .lowering import KernelCall, OperatorMatch


def kernel_key(call: KernelCall, static: dict, operands: Sequence[relax.Expr]) -> Optional[tuple]:
    """What makes two kernel calls the same PrimFunc: the operator, the TE kernel, its compile-time
    parameters and each operand's shape and dtype; None when a parameter cannot be compared (no reuse)."""
    types = []
    for operand in operands:
        ty = operand.ty if isinstance(operand, relax.Expr) else None
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            return None
        types.append((tuple(int(d) for d in ty.shape.values), str(ty.dtype)))
    parameters = tuple(
        (name, tuple(value) if isinstance(value, list) else value) for name, value in sorted(static.items())
    )
    key = (call.kind, call.kernel, parameters, tuple(types), tuple(sorted(call.func_attrs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def record_operand_roles(bb: relax.BlockBuilder, kernel: Callable, args: Sequence, tensors: dict,
                         binding: relax.Call) -> None:
    """Give the PrimFunc `binding` (emitted by `bb.emit_te(kernel, *args, **tensors)`) the attribute
    OPERAND_ROLES_ATTR: for each of its operands, the name of the TE kernel parameter it is passed as
    (`data`, `weight`, `bias`, `multiplier`, `shift`, ...), which names the C parameters and constants."""
    named = [*zip(inspect.signature(kernel).parameters, args), *tensors.items()]
    roles = []
    for operand in binding.args[1].fields:
        role = next((name for name, value in named if isinstance(value, relax.Expr) and value.same_as(operand)), None)
        if role is None:
            return  # an operand we cannot attribute: the kernel keeps positional names
        roles.append(role)
    gvar = binding.args[0]
    bb.update_func(gvar, bb.get()[gvar].with_attr(OPERAND_ROLES_ATTR, roles))


class KernelEmitter:
    """Emits kernel calls with a BlockBuilder and records, per call, the layer it implements.

    ``records[i]`` is the record of the i-th kernel call: the frontend's record of the TFLite operator
    whose computation is the call's ``core``, with the kernel's kind (e.g. "CONV_2D"); for a module without
    frontend records, a record without a name whose index is the call's. ``records_of_var`` maps each
    emitted result Var to its record's position.
    """

    def __init__(self, bb: relax.BlockBuilder, graph: Graph) -> None:
        self.bb = bb
        self.graph = graph
        self.records: list[LayerRecord] = []
        self.records_of_var: dict[relax.Var, int] = {}
        self._kernels: dict[tuple, tuple[tvm.ir.GlobalVar, relax.TensorType]] = {}  # see kernel_key

    def _record(self, call: KernelCall) -> LayerRecord:
        """The record of ``call``: its operator's frontend record (the frontend gives its binding one)."""
        operator = self.graph.records_of(call.core)
        if not operator:
            return LayerRecord("", call.kind, len(self.records))
        return LayerRecord(operator[0].name, call.kind, operator[0].operator_index)

    def emit(self, call: KernelCall) -> relax.Var:
        """Emit the kernel of the TFLite operator computed by ``call.core``, recording its layer."""
        self.records.append(self._record(call))
        var = self._emit_kernel(call, name_hint=f"layer{len(self.records) - 1}")
        self.records_of_var[var] = len(self.records) - 1
        return var

    def _emit_kernel(self, call: KernelCall, name_hint: str) -> relax.Var:
        tensors = {key: value for key, value in call.kwargs.items() if isinstance(value, relax.Expr)}
        static = {key: value for key, value in call.kwargs.items() if key not in tensors}
        operands = [*call.args, *tensors.values()]
        key = kernel_key(call, static, operands)
        if key in self._kernels:
            # The same kernel on other data (a repeated layer): TE would build an identical PrimFunc again,
            # the pass's costliest step (about 0.5 s per int8 convolution).
            function, out_ty = self._kernels[key]
            return self.bb.emit(relax.call_tir(function, relax.Tuple(operands), out_ty), name_hint=name_hint)
        var = self.bb.emit_te(functools.partial(call.kernel, **static), *call.args,
                              primfunc_name_hint=call.kind.lower(), name_hint=name_hint, **tensors)
        binding = self.bb.lookup_binding(var)
        record_operand_roles(self.bb, call.kernel, call.args, tensors, binding)
        if call.func_attrs:
            function = binding.args[0]
            self.bb.update_func(function, self.bb.get()[function].with_attrs(call.func_attrs))
        if key is not None and all(a.same_as(b) for a, b in zip(binding.args[1].fields, operands, strict=True)):
            self._kernels[key] = (binding.args[0], binding.ty_args[0])
        return var

    def emit_match(self, var: relax.Var, match: OperatorMatch, lowered: dict) -> relax.Var:
        """Emit a matched operator ending at ``var``, folding a following int8 (int16: 16x8) clip (the frontend's fused
        RELU/RELU6) into its activation; the clip's Var is then mapped to the same result in ``lowered``."""
        clip = self.graph.single_user(var, "relax.clip") if match.activation is not None else None
        if clip is None or str(clip.value.ty.dtype) not in ("int8", "int16"):
            return self.emit(match.kernel_call(match.activation))
        low, high = (int(float(arg.value)) for arg in clip.value.args[1:3])
        result = self.emit(match.kernel_call(match.activation.intersect(low, high)))
        lowered[clip.var] = result
        return result
