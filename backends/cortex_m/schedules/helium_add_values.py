"""Helium's int8 ADD and SUB from the operands' values tabled at compile time: the kernel the int8 lowering writes
from the operands' rescaled values (`backends.backend.KernelSchedules.int8_add_values`,
`tvm_ext.transform.int8.binary.values_call`) on cores with MVE, four outputs per call of `<prefix>_add_s8_values4`
(`backends.cortex_m.helpers.templates.helium_add_values.h.in`, inlined: VLDRB and VLDRW gathers, VMLA, VQRDMLAH,
VSHL, the clamp and a VSTRB scatter), where the DSP cores' kernel (`dsp_add`) computes one per element; where the
helper's form does not hold (an operand broadcast, or an int32 constant's terms, SQUARED_DIFFERENCE) that kernel.

Helium's lowering takes this kernel before its own ADD (`helium_add`, `KernelSchedules.int8_add_values_first`)
wherever the flash grants the tables, in a model where that pays (`values_first_pays`): its own ADD builds the same
tables at run time into the arena, with out-of-line helpers one copy a bundle and some 1,200 instructions a call,
then takes about 0.7 instructions an element fewer (simple_add_model on cortex-m55: code 316 -> 132 B against
cortex-m4f's 148 B, issue 30's rule; 50,842 -> 61,480 instructions: 184 B less code for 10,638 instructions more,
within the price of code, `backends.code_price`).

A loop of calls, one per four elements (the last call the rest), so that the memory planner's stream order reads
the kernel's passes from its TIR (an output may share an input's bytes, `tvm_ext.codegen.stream_order`), each call
handing its elements' addresses and their index, from which the helper recovers the arrays' starts (gcc folds
them to the kernel's parameters: one index register steps the loop).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.helium_add import FEWEST_ELEMENTS
from backends.cortex_m.schedules.dsp_add import ADD_VALUES_HELPERS, dsp_add_values
from packager.template_files import helper_template_c
from tvm_ext.tir.extern_stage import element_address, extern_from_zero, runs_of
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

HELIUM_ADD_VALUES_TEMPLATE = "helium_add_values.h.in"
"""The helper's hand-written C (`backends/cortex_m/helpers/templates/`, unit test `tests/c/test_add_s8_values.c`)."""
LANES = 4
"""The outputs of one call (int32 lanes of a vector)."""
TABLE_VALUES = 256
"""The int32 values of an operand's table (indexed by its byte)."""


def helium_add_values_helper_c(prefix: str) -> str:
    """The helper's C definition for the bundle `prefix` (a module function, as `dsp_add.add_values_helper_c`)."""
    return helper_template_c("backends.cortex_m.helpers", HELIUM_ADD_VALUES_TEMPLATE, prefix)


HELIUM_ADD_VALUES_HELPERS = HelperLibrary("cortex_m_helium_add_values", helium_add_values_helper_c,
                                          (ADD_VALUES_HELPERS,), family=CORTEX_M_FAMILY)
"""Its library of its own, after `dsp_add.ADD_VALUES_HELPERS` (whose output stage its portable C calls): only a
bundle whose kernels call it defines it."""
ADD_VALUES4_OP = "tvm_ext.add_s8_values4"
# The call (out, a, b, index, a_values, b_values, b_scale, multiplier, right, bias, low, high, lanes): out[i], a[i]
# and b[i] for i < lanes int8, a_values and b_values int32[256] (b_values read where b_scale is 0).
register_helper_call(ADD_VALUES4_OP, HELIUM_ADD_VALUES_HELPERS, "{}_add_s8_values4".format, HelperAccess((
    *(PointerAccess(k, (Axis(Arg(12), 1),)) for k in range(3)),
    *(PointerAccess(k, (Axis(TABLE_VALUES, 1),)) for k in (4, 5)))))


VALUES_KERNEL_BYTES = 84
"""The code of this kernel per ADD, bytes (one kernel each, its constants inlined: mobilenet_v2_050_64_int8's ten
82-84 B, simple_add_model's 88 B, cortex-m55)."""
OWN_HELPERS_BYTES = 224
"""The code of Helium's own ADD's two out-of-line helpers in a bundle, bytes (`<prefix>_add_s8_tables` 106 B and
`<prefix>_add_s8` 118 B as gcc specializes them: simple_add_model and mobilenet_v2_050_64_int8, cortex-m55)."""
OWN_KERNEL_BYTES = 80
"""The code of Helium's own ADD kernel per distinct ADD size, its calls of the helpers, bytes (mobilenet_v2_050_64_int8:
70-110 B), and OWN_SHARED_BYTES more per further ADD of that size (the kernels of one shape share one, their
constants passed from an array): fitted to the code this kernel saves, simple_add_model 184 B (estimated 220),
pretrainedResnet_quant 232 B (212), mobilenet_v2_050_64_int8 -156 B (-166)."""
OWN_SHARED_BYTES = 10
EXTRA_PER_ELEMENT = 0.72
"""The instructions this kernel takes per element more than Helium's own ADD's runs (15 per four outputs against
about 12; fitted with TABLES_INSTRUCTIONS to simple_add_model, one ADD of 16,384 elements: +10,638, and
mobilenet_v2_050_64_int8, ten of 9,856 in all: -4,882; pretrainedResnet_quant, three of 28,672: +17,284 measured,
+17,043 estimated)."""
TABLES_INSTRUCTIONS = 1_200
"""The instructions of Helium's own ADD's run-time tables per call, which this kernel does without."""


def values_first_pays(adds: Sequence[Any]) -> bool:
    """Whether this kernel comes before Helium's own ADD in a model whose int8 ADDs of two computed operands of one
    shape are ``adds`` (each a `tvm_ext.transform.int8.add.ComputedAdd`; those of at least
    `helium_add.FEWEST_ELEMENTS` elements, which both kernels take): the instructions it costs more
    (EXTRA_PER_ELEMENT an element, less TABLES_INSTRUCTIONS an ADD) at most the code it saves at the one price of
    code (`backends.code_price.INSTRUCTIONS_PER_BYTE`): the own ADD's helpers (OWN_HELPERS_BYTES), OWN_KERNEL_BYTES
    a distinct size and OWN_SHARED_BYTES a further ADD of it, less VALUES_KERNEL_BYTES an ADD. A model whose ADDs
    cost more code here than they save instructions (mobilenet_v2_050_64_int8: 156 B more code for 4,882
    instructions fewer) keeps the own ADD. The estimate is short of the own ADD's code in some models, so it keeps
    the own ADD where this kernel measured better on both counts (cortex-m55, this kernel for every ADD:
    mobilenet_v3s_min_050_80_int8 300 B less code and 3,649 instructions fewer; tcn_kws_100x32_int8 96 B less for
    5,639 more): a refit from kernel sizes per model is open."""
    taken = [add.elements for add in adds if add.elements >= FEWEST_ELEMENTS]
    sizes = len(set(taken))
    extra = EXTRA_PER_ELEMENT * sum(taken) - TABLES_INSTRUCTIONS * len(taken)
    saved = OWN_HELPERS_BYTES + OWN_KERNEL_BYTES * sizes + OWN_SHARED_BYTES * (len(taken) - sizes) \
        - VALUES_KERNEL_BYTES * len(taken)
    return bool(taken) and extra <= saved * INSTRUCTIONS_PER_BYTE


def helium_add_values(lhs: te.Tensor, rhs: te.Tensor, *tables: te.Tensor, multiplier: int, right: int, bias: int,
                      lhs_scale: int, rhs_scale: int, squared: bool = False, activation: Any = None) -> te.Tensor:
    """TFLite's int8 ADD (or SUB) of `lhs` and `rhs` from their doubled rescaled values (arguments as
    `dsp_add.dsp_add_values`'): as a loop of `<prefix>_add_s8_values4` calls where both operands are int8 of one
    shape and not `squared` (the tabled operand the helper's a; the other tabled too, or shifted by its scale),
    else `dsp_add_values`."""
    shape = [int(d) for d in lhs.shape]
    if squared or shape != [int(d) for d in rhs.shape] or str(lhs.dtype) != "int8" or str(rhs.dtype) != "int8":
        return dsp_add_values(lhs, rhs, *tables, multiplier=multiplier, right=right, bias=bias,
                              lhs_scale=lhs_scale, rhs_scale=rhs_scale, squared=squared, activation=activation)
    low, high = (-128, 127) if activation is None else (max(int(activation.low), -128), min(int(activation.high), 127))
    swapped = lhs_scale != 0  # lhs shifted: rhs is the tabled operand, the helper's a
    b_scale = lhs_scale if swapped else rhs_scale
    count = math.prod(shape)

    def build(ins, outs):
        a, b = (ins[1], ins[0]) if swapped else (ins[0], ins[1])
        a_values, b_values = (element_address(table, tirx.const(0, "int32")) for table in (ins[2], ins[-1]))
        index_type = str(outs[0].shape[0].ty.dtype)
        constants = tuple(tirx.const(int(value), "int32") for value in (b_scale, multiplier, right, bias, low, high))

        def call(start: tirx.PrimExpr, lanes: int) -> tirx.Stmt:
            return tirx.Evaluate(tirx.call_intrin(
                "int32", ADD_VALUES4_OP, *(element_address(buffer, start) for buffer in (outs[0], a, b)),
                start.astype("int32"), a_values, b_values, *constants, tirx.const(lanes, "int32")))

        steps = runs_of(count, LANES, index_type, call)
        return steps[0] if len(steps) == 1 else tirx.SeqStmt(steps)

    return extern_from_zero(shape, [lhs, rhs, *tables], build, "add_int8_values")
