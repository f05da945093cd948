"""tvm_ext.tir.helper_calls: a helper registered pure is arithmetic to TVM (an unused call is dropped like the
expression it stands for); any other helper call is a state update that stays where the kernel put it."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
from tvm import tirx  # noqa: E402

from backends.cortex_m.schedules.biased_requantize import REQUANTIZE_BIASED_OP, REQUANTIZE_BIASED_S8_OP  # noqa: E402
from backends.cortex_m.schedules.dsp_add import ADD_VALUE_OP  # noqa: E402
from backends.cortex_m.schedules.softmax_rows import SOFTMAX_S8_OP  # noqa: E402


def _unused_call_after_remove_no_op(op: str) -> tirx.Stmt:
    """The body of a function whose only statement evaluates one call of ``op`` and drops its value, after TVM's
    RemoveNoOp."""
    acc = tirx.Var("acc", "int32")
    body = tirx.Evaluate(tirx.call_intrin("int32", op, acc, 1 << 30, 7, 64))
    function = tirx.PrimFunc([acc], body).with_attr("global_symbol", "f")
    return tirx.transform.RemoveNoOp()(tvm.IRModule({"f": function}))["f"].body


@pytest.mark.parametrize("op", [REQUANTIZE_BIASED_OP, REQUANTIZE_BIASED_S8_OP, ADD_VALUE_OP])
def test_a_scalar_arithmetic_helper_is_pure(op):
    body = _unused_call_after_remove_no_op(op)
    assert isinstance(body, tirx.Evaluate) and isinstance(body.value, tirx.IntImm), body


def test_a_helper_writing_memory_stays_in_place():
    body = _unused_call_after_remove_no_op(SOFTMAX_S8_OP)
    assert isinstance(body, tirx.Evaluate) and isinstance(body.value, tvm.ir.Call), body
