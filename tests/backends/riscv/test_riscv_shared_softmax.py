"""A bundle's int8 softmax kernels on RV32 call one out-of-line copy of the softmax where their inlined copies cost
more bytes than the calls cost instructions (backends/riscv/schedules/shared_softmax.py): priced per bundle from each
kernel's row calls, their loops and the kernel's calls (the C of both forms: tests/c/test_softmax_s8.c, through
test_riscv_helpers_c.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402
from tvm import tirx  # noqa: E402

from backends.cortex_m.schedules.softmax_rows import SOFTMAX_S8_OP  # noqa: E402
from backends.riscv.schedules import RiscvMacSchedules, riscv_bundle_choice  # noqa: E402
from backends.riscv.schedules.shared_softmax import SOFTMAX_S8_SHARED_OP, shared_softmax_kernels  # noqa: E402
from tvm_ext.tir.tir_walk import walk  # noqa: E402


def _softmax(rows: int, depth: int) -> tirx.PrimFunc:
    """A kernel of ``rows`` calls of the softmax over one row of ``depth`` each, as the int8 lowering writes it."""
    out, data = (tirx.decl_buffer((rows * depth,), "int8", name) for name in ("out", "data"))
    table = tirx.decl_buffer((256,), "int32", "table")
    row = tirx.Var("row", "int32")
    call = tirx.call_intrin("int32", SOFTMAX_S8_OP, out.access_ptr("w", offset=row * depth),
                            data.access_ptr("r", offset=row * depth), 1, depth, table.access_ptr("r"))
    return tirx.PrimFunc([], tirx.For(row, 0, rows, tirx.ForKind.SERIAL, tirx.Evaluate(call)))


def _ops(func: tirx.PrimFunc) -> list[str]:
    """The op names of ``func``'s calls."""
    return [node.op.name for node in walk(func.body)
            if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op)]


def test_a_transformers_two_softmax_kernels_share_one_copy_and_a_lone_one_keeps_its_own() -> None:
    """vit_tiny_16_int8's attention scores (192 rows) and head (one): 2 x 330 - 340 B saved for 193 calls of 37
    instructions; one kernel alone saves nothing; run 10 times per inference, the calls outweigh the bytes."""
    kernels = {"scores": _softmax(192, 64), "head": _softmax(1, 10), "other": tirx.PrimFunc([], tirx.Evaluate(0))}
    assert shared_softmax_kernels(kernels, {}) == ["scores", "head"]
    assert shared_softmax_kernels({"head": kernels["head"]}, {}) == []
    assert shared_softmax_kernels(kernels, {"scores": 10}) == []


def test_the_bundle_choice_gives_the_chosen_kernels_the_shared_calls() -> None:
    """The RV32 bundle choice marks both softmax kernels, and their schedules' extern calls are the shared op's."""
    kernels = {"scores": _softmax(192, 64), "head": _softmax(1, 10)}
    choice = riscv_bundle_choice(kernels, {})
    assert choice is not None and sorted(choice.kernels) == ["head", "scores"]
    assert all(isinstance(mac, RiscvMacSchedules) and mac.shared_softmax for mac in choice.kernels.values())
    rewritten = choice.kernels["scores"].extern_calls(kernels["scores"])
    assert _ops(rewritten).count(SOFTMAX_S8_SHARED_OP) == 1 and SOFTMAX_S8_OP not in _ops(rewritten)
    assert SOFTMAX_S8_OP in _ops(RiscvMacSchedules().extern_calls(kernels["scores"]))
