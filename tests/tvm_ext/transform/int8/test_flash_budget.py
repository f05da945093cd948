"""FlashBudget (tvm_ext.transform.int8.lowering): a lowering's choices that store more bytes of flash are granted
layer by layer while the profile's spare flash holds them; a choice of several tables (an ADD's two operands) is
granted whole or not at all, so a refused choice leaves no bytes charged; a recurrent cell's gate weights are
widened only where the backend asks and it grants them."""

from __future__ import annotations

import numpy as np
from tvm import relax

from tvm_ext.kernels import Rounding
from tvm_ext.transform.int8.lowering import FlashBudget, LoweringContext, widen_gate_weights


def _tables(count: int) -> list[relax.Constant]:
    return [relax.const(np.full(4, k, "int32")) for k in range(count)]


def test_a_choice_of_two_tables_that_does_not_fit_takes_no_bytes() -> None:
    first, second, alone = _tables(3)
    budget = FlashBudget(spare_bytes=1_500)
    assert not budget.grants_all([first, second], 1_024)
    assert budget.spare_bytes == 1_500
    assert budget.grants_all([alone], 1_024)  # the bytes the refused pair would have held are still there
    assert budget.spare_bytes == 476


def test_a_choice_of_a_table_and_a_constant_operand_that_does_not_fit_takes_no_bytes() -> None:
    table, operand, alone = _tables(3)
    budget = FlashBudget(spare_bytes=1_500)
    assert not budget.grants_each([(table, 1_024), (operand, 1_024)])  # the table alone would fit
    assert budget.spare_bytes == 1_500
    assert budget.grants_each([(alone, 1_024), (table, 256)])
    assert budget.spare_bytes == 220


def test_a_table_granted_before_is_not_charged_again() -> None:
    shared, other = _tables(2)
    budget = FlashBudget(spare_bytes=2_048)
    assert budget.grants(shared, 1_024)
    assert budget.grants_all([shared, other], 1_024)
    assert budget.spare_bytes == 0
    assert budget.grants_all([other, other], 1_024)  # asked again: the first answer, nothing taken


def test_a_table_refused_before_refuses_the_choice() -> None:
    big, small = _tables(2)
    budget = FlashBudget(spare_bytes=1_024)
    assert not budget.grants(big, 4_096)
    assert not budget.grants_all([big, small], 16)
    assert budget.spare_bytes == 1_024


def test_no_limit_grants_everything() -> None:
    budget = FlashBudget()
    assert budget.grants_all(_tables(3), 1 << 20) and budget.spare_bytes is None


def test_a_layer_asked_alone_keeps_its_first_answer() -> None:
    refused, granted = _tables(2)
    budget = FlashBudget(spare_bytes=100)
    assert not budget.grants(refused, 200)
    assert not budget.grants(refused, 10)  # asked again, smaller: still refused
    assert budget.grants(granted, 60) and budget.grants(granted, 60)
    assert budget.spare_bytes == 40


def _context(widened: bool, budget: FlashBudget) -> LoweringContext:
    return LoweringContext(graph=None, lowered={}, rounding=Rounding.DOUBLE, widened_gate_weights=widened,
                           flash_budget=budget)


def test_gate_weights_are_widened_to_int16_only_where_the_flash_holds_them() -> None:
    """widen_gate_weights: both of a layer's interleaved weight arrays int16 (the same values) where the backend asks
    and the budget grants one byte more per weight of both; else both as they were, nothing charged."""
    first, second = np.arange(-8, 8, dtype=np.int8), np.full(16, -128, np.int8)
    layer, other = _tables(2)
    budget = FlashBudget(spare_bytes=40)
    widened = widen_gate_weights(_context(True, budget), layer, first, second)
    assert [w.dtype for w in widened] == [np.int16, np.int16] and budget.spare_bytes == 8
    np.testing.assert_array_equal(widened[0], first)
    np.testing.assert_array_equal(widened[1], second)
    kept = widen_gate_weights(_context(True, budget), other, first, second)  # 32 B more: refused
    assert all(k is w for k, w in zip(kept, (first, second))) and budget.spare_bytes == 8


def test_gate_weights_are_not_widened_where_the_backend_does_not_ask() -> None:
    """widen_gate_weights with a budget that holds them (unlimited, and 64 spare bytes): a backend that does not ask
    for widened weights gets them as they were, and nothing is charged."""
    first = np.arange(-8, 8, dtype=np.int8)
    layer, = _tables(1)
    for budget, spare in ((FlashBudget(), None), (FlashBudget(spare_bytes=64), 64)):
        kept = widen_gate_weights(_context(False, budget), layer, first)
        assert kept[0] is first and budget.spare_bytes == spare
