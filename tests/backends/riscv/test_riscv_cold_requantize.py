"""RV32 element kernels run too few times per inference to pay for their inlined biased requantizations call one
out-of-line copy instead (backends/riscv/schedules/cold_requantize.py): priced per kernel from its call sites, their
loops and the kernel's calls (end to end, on the zoo's unrolled GRU: tests/tvm_ext/transform/
test_share_constant_variants.py, whose bundle that test reuses)."""

from __future__ import annotations

import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402
from tvm import tirx  # noqa: E402

from backends.cortex_m.schedules.biased_requantize import REQUANTIZE_BIASED_S8_OP  # noqa: E402
from backends.riscv.schedules.cold_requantize import (REQUANTIZE_BIASED_S8_CALL_OP, cold_requantize_pays,  # noqa: E402
                                                      out_of_line_requantize)
from tvm_ext.tir.tir_walk import walk  # noqa: E402


def _chain(sites: int, extent: int) -> tirx.PrimFunc:
    """A loop of ``extent`` around one expression of ``sites`` nested biased requantizations (a fused chain's)."""
    value = tirx.const(5, "int32")
    for _ in range(sites):
        value = tirx.call_intrin("int32", REQUANTIZE_BIASED_S8_OP, value, tirx.const(1 << 30, "int32"),
                                 tirx.const(2, "int32"), tirx.const(2, "int32"))
    i = tirx.Var("i", "int32")
    return tirx.PrimFunc([], tirx.For(i, 0, extent, tirx.ForKind.SERIAL, tirx.Evaluate(value)))


def _ops(func: tirx.PrimFunc) -> list[str]:
    """The op names of ``func``'s calls."""
    return [node.op.name for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op)]


def test_a_chain_run_once_pays_and_one_run_often_does_not() -> None:
    """Nine nested call sites over 48 elements (the GRU's first step): out of line where the kernel runs once (9 x 28
    - 54 B saved, 2,592 instructions added), not where it runs 39 times (101,088); no call site, no choice."""
    chain = _chain(9, 48)
    assert cold_requantize_pays(chain, 1)
    assert not cold_requantize_pays(chain, 39)
    assert not cold_requantize_pays(_chain(0, 48), 1)


def test_every_nested_call_becomes_the_out_of_line_one() -> None:
    """Three nested call sites: three calls of the out-of-line op, none of the inlined one left."""
    rewritten = out_of_line_requantize(_chain(3, 4))
    assert _ops(rewritten).count(REQUANTIZE_BIASED_S8_CALL_OP) == 3 and REQUANTIZE_BIASED_S8_OP not in _ops(rewritten)

