"""The RV32 price of the int8 ADD's values kernel (backends/riscv/schedules/add_values_price.py): a layer takes it
where the instructions its elements save pay the flash its tables add beyond the generic kernel's, at the code
price."""

from __future__ import annotations

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.riscv.schedules.add_values_price import (SAVED_PER_ELEMENT_COMPUTED, SAVED_PER_ELEMENT_TABLED,
                                                       add_values_pay)
from backends.backend import AddValuesChoice

TABLE = 1024


def test_a_fresh_table_pays_only_at_the_elements_its_bytes_cost():
    fewest = -(-TABLE * INSTRUCTIONS_PER_BYTE // int(SAVED_PER_ELEMENT_COMPUTED))
    assert add_values_pay(AddValuesChoice(fewest, False, TABLE))
    assert not add_values_pay(AddValuesChoice(fewest - 1, False, TABLE))
    assert not add_values_pay(AddValuesChoice(1023, False, TABLE))  # mobilenet_v2's small ADDs: none pays


def test_a_table_granted_before_or_replacing_the_generic_kernels_pays():
    assert add_values_pay(AddValuesChoice(256, False, 0))  # an earlier layer's table
    assert add_values_pay(AddValuesChoice(1024, True, 0))  # the generic kernel's one table replaced
    assert add_values_pay(AddValuesChoice(1024, True, -TABLE))  # its two tables by one


def test_a_table_beside_the_generic_kernels_is_priced_at_the_tabled_saving():
    fewest = int(TABLE * INSTRUCTIONS_PER_BYTE / SAVED_PER_ELEMENT_TABLED)
    assert add_values_pay(AddValuesChoice(fewest, True, TABLE))
    assert not add_values_pay(AddValuesChoice(fewest - 1, True, TABLE))
