"""Emits the matched operators' kernel calls into the new ``main``, sharing each distinct PrimFunc."""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import tvm
from tvm import relax

from tvm_ext.frontend import LAYER_VAR_PREFIX

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


class KernelEmitter:
    """Emits kernel calls with a BlockBuilder and records, per call, its layer label and TFLite index.

    ``layers[i]`` is "<name> (<KIND>)" (or "<KIND> #<operator index>") and ``operator_indices[i]`` the
    operator index of the i-th call, whose result Var is named ``layer<i>``.
    """

    def __init__(self, bb: relax.BlockBuilder, graph: Graph, layer_names: Optional[Sequence[str]]) -> None:
        self.bb = bb
        self.graph = graph
        self.layer_names = layer_names
        self.layers: list[str] = []
        self.operator_indices: list[int] = []
        self._kernels: dict[tuple, tuple[tvm.ir.GlobalVar, relax.TensorType]] = {}  # see kernel_key

    def emit(self, call: KernelCall) -> relax.Var:
        """Emit the kernel of the TFLite operator computed by ``call.core``; the result Var is layer<N>."""
        index = self.graph.operator_index(call.core)
        self.operator_indices.append(index)
        names = self.layer_names
        self.layers.append(f"{names[index]} ({call.kind})" if names is not None and index < len(names)
                           else f"{call.kind} #{index}")
        tensors = {key: value for key, value in call.kwargs.items() if isinstance(value, relax.Expr)}
        static = {key: value for key, value in call.kwargs.items() if key not in tensors}
        # Named `layer<N>`, N indexing main's `tvm_ext.layers`: the convention of tvm_ext.frontend, which
        # FuseOpsKeepingLayers reads to name each fused kernel's layers.
        name_hint = f"{LAYER_VAR_PREFIX}{len(self.layers) - 1}"
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
        if call.func_attrs:
            function = binding.args[0]
            self.bb.update_func(function, self.bb.get()[function].with_attrs(call.func_attrs))
        if key is not None and all(a.same_as(b) for a, b in zip(binding.args[1].fields, operands, strict=True)):
            self._kernels[key] = (binding.args[0], binding.ty_args[0])
        return var

    def emit_match(self, var: relax.Var, match: OperatorMatch, lowered: dict) -> relax.Var:
        """Emit a matched operator ending at ``var``, folding a following int8 clip (the frontend's fused
        RELU/RELU6) into its activation; the clip's Var is then mapped to the same result in ``lowered``."""
        clip = self.graph.single_user(var, "relax.clip") if match.activation is not None else None
        if clip is None or str(clip.value.ty.dtype) != "int8":
            return self.emit(match.kernel_call(match.activation))
        low, high = (int(float(arg.value)) for arg in clip.value.args[1:3])
        result = self.emit(match.kernel_call(match.activation.intersect(low, high)))
        lowered[clip.var] = result
        return result
