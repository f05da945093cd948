"""The scratch of Helium's int8 ADD kernel (backends/cortex_m/schedules/helium_add.py): the helper's tables, one
operand's 256 values where the other is TFLite's larger-scale operand (multiplier 1/2: a shift, no table), both
operands' 512 where neither is. Before: 512 always (2,048 B of arena at the call, half of them never written)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tvm import te, tirx

from backends.cortex_m.schedules.helium_add import halved_operand, helium_add_int8
from tvm_ext.tir.tir_walk import walk

HALF = (1 << 30, 0)
OTHER = (1_500_000_000, -2)


def _params(input1, input2, left_shift: int = 20) -> SimpleNamespace:
    return SimpleNamespace(left_shift=left_shift, input1=input1, input2=input2, output=(1_700_000_000, -18))


@pytest.mark.parametrize("params, halved, words", [
    (_params(OTHER, HALF), True, 256),  # b the larger scale: TFLite's int8 ADD
    (_params(HALF, OTHER), True, 256),  # a the larger scale
    (_params(OTHER, OTHER), False, 512),  # neither: both tabled
    (_params(OTHER, HALF, left_shift=0), False, 512),  # no left shift: no halved operand (the helper's rule)
])
def test_the_tables_scratch_holds_the_tabled_operands_only(params, halved: bool, words: int) -> None:
    a, b = (te.placeholder((1, 16, 16), "int8", name=n) for n in ("a", "b"))
    out = helium_add_int8(a, b, lhs_zero_point=-3, rhs_zero_point=5, output_zero_point=1, params=params,
                          activation=SimpleNamespace(low=-128, high=127), rounding=SimpleNamespace(value="double"))
    func = te.create_prim_func([a, b, out])
    allocated = [node.buffer for node in walk(func.body) if isinstance(node, tirx.AllocBuffer)]
    assert halved_operand(params) == halved
    assert [(buf.name, [int(d) for d in buf.shape]) for buf in allocated] == [("add_tables", [words])]
