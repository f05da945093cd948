"""Which int8 ADD and SUB layers take the values kernel on RV32 cores (`backends.cortex_m.schedules.dsp_add`:
an operand's doubled rescaled values tabled at compile time, int32[256], 1,024 B of flash a table) rather than the
generic kernel (`tvm_ext.kernels.add_int8`), priced per layer at the one price of code
(`backends.code_price.INSTRUCTIONS_PER_BYTE`): a byte of flash the table adds is worth as many instructions as a byte
of code. Every ADD of at least `tvm_ext.transform.int8.binary.VALUES_ELEMENTS` elements took it: rv32imc
mobilenet_v2_050_64_int8's ten ADDs, seven of them below the generic kernel's own tables, 7,080 B more weights for
41,694 fewer instructions (6 a byte) and 86 B less code."""

from __future__ import annotations

from backends.backend import AddValuesChoice
from backends.code_price import INSTRUCTIONS_PER_BYTE

SAVED_PER_ELEMENT_TABLED = 1.0
"""The instructions an output element takes fewer in the values kernel than in the generic one where that tables an
operand too (`tvm_ext.kernels.elementwise.TABLED_ELEMENTS` elements and more), at the least (rv32imc
mobilenet_v2_050_64_int8's ADD of 4,096 elements 106,510 -> 102,414 instructions; of 1,024, 27,665 -> 25,616)."""
SAVED_PER_ELEMENT_COMPUTED = 9.0
"""The same where the generic kernel computes the operands' rescale (fewer elements), about (rv32imc
mobilenet_v2_050_64_int8's ADDs of 320, 512 and 768 elements: 10,910 -> 8,017, 17,438 -> 12,816, 26,142 -> 19,216)."""


def add_values_pay(choice: AddValuesChoice) -> bool:
    """Whether the values kernel pays for one ADD or SUB (`KernelSchedules.int8_add_values_pays`): the instructions
    its elements save pay the flash bytes it adds beyond the generic kernel's tables, at the one price of code. A
    table an earlier layer took is free, so an ADD of an operand quantization already tabled takes it; a fresh
    1,024 B table asks 102,400 instructions, which no ADD below the generic kernel's tables (9 a element: 11,378
    elements) saves."""
    saved = SAVED_PER_ELEMENT_TABLED if choice.generic_tables else SAVED_PER_ELEMENT_COMPUTED
    return choice.elements * saved >= choice.added_bytes * INSTRUCTIONS_PER_BYTE
