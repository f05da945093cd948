"""Expected modules of the int8 lowering (`tvm_ext.transform.LowerQuantizedToInteger`), written as the pass emits
them: one TE kernel call per TFLite operator, each with its layer record, for Before/Expected tests."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import tvm
from tvm import relax

from tvm_ext.layers import LayerRecord, bindings_of, with_layers
from tvm_ext.transform.int8.emit import record_operand_roles


def main_module(build: Callable[..., relax.Expr], params: Sequence[relax.Var]) -> tvm.IRModule:
    """A module whose `main` of `params` is one dataflow block: `build(bb, *params)` emits its bindings and
    returns the output."""
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        with bb.dataflow():
            output = bb.emit_output(build(bb, *params))
        bb.emit_func_output(output)
    return bb.get()


def expected_module(build: Callable[..., relax.Expr], params: Sequence[relax.Var], kinds: list[str]) -> tvm.IRModule:
    """An expected lowered module: `build(bb, *params)` emits main's kernel calls (`kernel`) and returns the
    output; `kinds[i]` is the TFLite operator of the i-th call."""
    mod = main_module(build, params)
    # A hand-written module has no frontend records: call i's record is the nameless "<KIND> #i".
    calls = [b for b in bindings_of(mod["main"])
             if isinstance(b.value, relax.Call) and b.value.op.name == "relax.call_tir"]
    per_binding = [[calls.index(b)] if b in calls else [] for b in bindings_of(mod["main"])]
    records = [LayerRecord("", kind, index) for index, kind in enumerate(kinds)]
    mod["main"] = with_layers(mod["main"], records, per_binding)
    return mod


def kernel(bb: relax.BlockBuilder, kind: str, index: int, te_kernel: Callable, *args,
           func_attrs: dict | None = None, **params) -> relax.Var:
    """The call of `te_kernel` on `args` the pass emits for the `index`-th operator, a TFLite `kind`: keyword
    `params` that are Relax expressions are tensor operands, the others compile-time parameters; `func_attrs`
    are set on its PrimFunc."""
    tensors = {key: value for key, value in params.items() if isinstance(value, relax.Expr)}
    static = {key: value for key, value in params.items() if key not in tensors}
    var = bb.emit_te(functools.partial(te_kernel, **static), *args, primfunc_name_hint=kind.lower(),
                     name_hint=f"layer{index}", **tensors)
    binding = bb.lookup_binding(var)
    record_operand_roles(bb, te_kernel, args, tensors, binding)
    if func_attrs:
        bb.update_func(binding.args[0], bb.get()[binding.args[0]].with_attrs(func_attrs))
    return var
