"""FoldLookupsIntoHelpers: a table lookup whose data is only a helper kernel's output becomes that kernel's lookup
form."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, tirx

from backends.cortex_m.schedules.window1_conv import WINDOW1_LUT_OP, WINDOW1_OP
from tvm_ext.kernels.lookup import lookup_int8
from tvm_ext.layers import ELEMENTWISE_LOOKUP_ATTR
from tvm_ext.tir.extern_stage import element_address, extern_from_zero
from tvm_ext.tir.tir_walk import walk
from tvm_ext.transform.fold_lookups import FoldLookupsIntoHelpers

TABLE = relax.const(np.arange(-128, 128, dtype=np.int8)[::-1].copy())


def _helper_kernel(x):
    """A kernel of one call of the few-channel helper's op (its arguments beyond the two addresses left out: the pass
    reads only the output's)."""
    def build(ins, outs):
        zero = tirx.const(0, str(outs[0].shape[0].ty.dtype))
        return tirx.Evaluate(tirx.call_intrin("int32", WINDOW1_OP, element_address(outs[0], zero),
                                              element_address(ins[0], zero)))
    return extern_from_zero([int(d) for d in x.shape], [x], build, "helper")


def _module(also_returned: bool) -> tvm.IRModule:
    """main(x: 1x4x4x8 int8): the helper kernel on x, then its table lookup; with `also_returned` the helper's
    output is returned too (a second use)."""
    x = relax.Var("x", relax.TensorType((1, 4, 4, 8), "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            helped = bb.emit_te(_helper_kernel, x, primfunc_name_hint="conv_2d")
            looked_up = bb.emit_te(lookup_int8, helped, TABLE, primfunc_name_hint="leaky_relu")
            gvar = bb.lookup_binding(looked_up).args[0]
            bb.update_func(gvar, bb.get()[gvar].with_attr(ELEMENTWISE_LOOKUP_ATTR, True))
            out = bb.emit_output(relax.Tuple([looked_up, helped]) if also_returned else looked_up)
        bb.emit_func_output(out)
    return bb.get()


def _calls(mod: tvm.IRModule) -> list[relax.Call]:
    return [b.value for block in mod["main"].body.blocks for b in block.bindings
            if isinstance(b.value, relax.Call) and b.value.op.name == "relax.call_tir"]


def _helper_ops(func: tirx.PrimFunc) -> list[str]:
    return [n.op.name for n in walk(func.body) if isinstance(n, tvm.ir.Call) and isinstance(n.op, tvm.ir.Op)
            and n.op.name.startswith("tvm_ext.window1")]


def test_a_lookup_of_a_helper_kernels_only_use_is_its_lookup_form() -> None:
    mod = FoldLookupsIntoHelpers()(_module(also_returned=False))
    assert relax.analysis.well_formed(mod) is not False  # raises where a type is missing
    assert mod["main"].body.ty.same_as(mod["main"].body.body.ty)
    [call] = _calls(mod)
    folded = mod[call.args[0]]
    assert call.args[0].name_hint == "conv_2d_leaky_relu"
    assert call.args[1].fields[-1].same_as(TABLE)  # the table its last operand, before the output
    assert [int(d) for d in folded.params[-2].shape] == [256] and str(folded.params[-2].dtype) == "int8"
    assert _helper_ops(folded) == [WINDOW1_LUT_OP]
    assert _helper_ops(folded)[0] != WINDOW1_OP


def test_a_helper_output_read_twice_keeps_its_lookup_apart() -> None:
    before = _module(also_returned=True)
    after = FoldLookupsIntoHelpers()(before)
    assert after.same_as(before)
    assert [_helper_ops(after[c.args[0]]) for c in _calls(after)] == [[WINDOW1_OP], []]
