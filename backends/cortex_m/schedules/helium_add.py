"""Helium's int8 ADD kernel: TFLite's int8 ADD of two operands of one shape as calls of `<prefix>_add_s8_tables`
and `<prefix>_add_s8` (`backends.cortex_m.helpers.templates.helium_add.h.in`: an operand's 256 rescaled values
tabled once, then four outputs per vector step over runs of RUN elements), the kernel the int8 lowering writes
for ADD where the backend gives one (`backends.backend.KernelSchedules.int8_add`).

The generic kernel (`tvm_ext.kernels.add_int8`) computes each output byte on its own in scalar C, about 20
instructions per byte on a Cortex-M55; the helper's vector loop 3 (12 instructions per four outputs). Both
compute TFLite's AddElementwise with its double rounding, bit for bit (the helper's C unit test checks every
pair of int8 operands). Where the
helper's contract does not hold (broadcast operands, single rounding, an int16 ADD, parameters outside its
ranges), `helium_add_int8` gives None and the lowering keeps the generic kernel. The helpers are one out-of-line
copy per bundle (~600 B), priced per model (`helium_adds_pay`, `backends.backend.KernelSchedules.int8_add_pays`):
a model whose ADDs are few and small (a small ViT's layer-norm and residual ADDs of 720-1,296 elements) keeps the
generic kernel for every one, which fuses into the layer norm's kernel (vit2h_d30_b1_24x16_tanh_int8 on cortex-m55:
code 7,620 -> 6,344 B, 428,129 -> 516,915 instructions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from tvm import te, tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.helpers.helium_c import add_s8_helper_name, add_s8_tables_helper_name
from backends.cortex_m.schedules.dual_mac import register_mac_helper
from tvm_ext.tir.extern_stage import element_address, extern_from_zero, runs_of
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess, register_out_of_line

ADD_S8_OP = "tvm_ext.add_s8"
# The call (out, a, b, count, values, a_offset, b_offset, left_shift, a_multiplier, a_shift, b_multiplier, b_shift,
# out_multiplier, out_shift, out_zero_point, low, high): out[i], a[i] and b[i] for i < count int8 (values: the
# kernel's own tables).
ADD_S8_ACCESS = HelperAccess(tuple(PointerAccess(k, (Axis(Arg(3), 1),)) for k in range(3)))
register_mac_helper(ADD_S8_OP, add_s8_helper_name, ADD_S8_ACCESS)
register_out_of_line(ADD_S8_OP)  # one noinline copy: ADD kernels of one shape share one kernel, runs and all
TABLE_VALUES = 512
"""The int32 values of the helper's tables (two operands' 256): the kernel's scratch, where no operand is halved."""
OPERAND_VALUES = 256
"""The int32 values of one operand's table: the kernel's scratch where an operand is halved (`halved_operand`:
the helper tables the other alone), an arena buffer of 1,024 B, not 2,048 B, at the kernel's call (tcn_49x40_c44 on
cortex-m55: each residual ADD's 2,048 B were live beside its two operands and its output)."""
ADD_S8_TABLES_OPS = {values: f"tvm_ext.add_s8_tables{values}" for values in (TABLE_VALUES, OPERAND_VALUES)}
"""The tables' call per count of values it writes, one helper: (values, a_offset, b_offset, left_shift, a_multiplier,
a_shift, b_multiplier, b_shift, out_shift) writes values[k] for k < TABLE_VALUES (OPERAND_VALUES where an operand is
halved), the kernel's own buffer (no parameter). Its access registered, its int32 arguments are values
(`tvm_ext.transform.share_constant_variants.helper_value_arguments`), so ADD kernels of one shape differing in their
quantization may share one kernel."""
for _values, _op in ADD_S8_TABLES_OPS.items():
    register_mac_helper(_op, add_s8_tables_helper_name, HelperAccess((PointerAccess(0, (Axis(_values, 1),)),)))
    register_out_of_line(_op)


def halved_operand(params: Any) -> bool:
    """Whether an operand of `params` (an AddParams) has TFLite's multiplier 1/2 (2^30, shift 0) and the left shift
    is 1 or more, so the helper (`<prefix>_add_s8_halved`, its C twin) rescales it by a shift and tables the other
    operand alone (TFLite's larger-scale operand: every int8 ADD TFLite quantizes)."""
    return params.left_shift >= 1 and any(int(m) == 1 << 30 and int(s) == 0 for m, s in (params.input1, params.input2))
RUN = 512
"""Elements per call of the ADD helper after the tables' one: the kernel's passes, so that its output may share
all but RUN bytes with an input that dies there (the memory planner's stream order:
`tvm_ext.codegen.stream_order`), for a call's own cost per RUN outputs (pretrainedResnet_quant on cortex-m55:
589 instructions for its 53 runs past the first of each ADD)."""

FEWEST_ELEMENTS = 256
"""The fewest elements an ADD must have for the helper. Its tables cost about 800 instructions per call (one or
two operands' 256 values, four per vector step: 1,006 instructions for an ADD of 64 outputs, measured), more
than half of its cost below 256 outputs, where the generic kernel's place in a fused elementwise chain is worth
more: an unrolled GRU's 64-element gate sums fuse with their SPLIT, LOGISTIC and MUL neighbours (a Keras
GRU(64) over 49 steps on cortex-m55: 755,096 -> 719,351 instructions, code 95,892 -> 46,324 B, 442 -> 148
kernels)."""

HELPERS_CODE_BYTES = 604
"""The code of the helpers' one copy per bundle, `<prefix>_add_s8_tables` and `<prefix>_add_s8`, in the price: their
copy measured 604 B (cortex-m55: 336 B and 268 B) when this estimate was fitted to the models below; since the tables
take one loop over both operands 458 B (190 B and 268 B), but the estimate stays fitted: at 458 it takes the helper
in vit2h_d30_b1_24x16_tanh_int8, measured there at 888 B more code for 88,802 instructions fewer (cortex-m55), short
of the price (its split kernels and extra calls weigh more than SPLIT_CODE_BYTES counts)."""
GENERIC_KERNEL_EXTRA_BYTES = 80
"""The code the generic ADD's own kernel takes more than the helper's calls, per ADD of the others (cortex-m55
mobilenet_v2_050_64_int8: 164-192 B against 76-108 B a kernel)."""
SPLIT_CODE_BYTES = 220
"""The code an ADD of two elementwise kernels' results costs in the helper's calls, bytes: the generic ADD fuses with
both into one kernel, the helper's calls leave them two (cortex-m55, a layer norm's: vit3h_d36_b2_20_int8 219,
vit2h_d30_b1_24x16_tanh_int8 257, vit_tiny_16_int8 89, where its three layer norms' pieces share kernels)."""
SAVED_PER_ELEMENT = 12.5
"""The instructions the helper saves per output element over the generic ADD's own kernel, its tables' call included
(cortex-m55, ADDs of 320-4,096 elements: 9.9-15.0, mobilenet_v2_050_64_int8's of 4,096 60,565 -> 14,359)."""
SAVED_PER_FUSED_ELEMENT = 27.0
"""The same over the generic ADD fused with the elementwise kernels of both its operands (cortex-m55, a layer norm's,
the model's other ADDs at SAVED_PER_ELEMENT: vit3h_d36_b2_20_int8 29, vit2h_d30_b1_24x16_tanh_int8 25,
vit_tiny_16_int8 18.5)."""


def helium_adds_pay(adds: Sequence[Any]) -> bool:
    """Whether the helper pays in a model whose int8 ADDs of two computed operands of one shape are ``adds`` (each a
    `tvm_ext.transform.int8.add.ComputedAdd`: output elements, whether both operands are elementwise kernels'
    results, TFLite's multipliers and rounding): the instructions it saves on those it takes (`takes_add`, its
    kernel's own contract: SAVED_PER_ELEMENT or SAVED_PER_FUSED_ELEMENT an element) at least the code it costs at the
    one price of code (`backends.code_price.INSTRUCTIONS_PER_BYTE`): its one copy, and SPLIT_CODE_BYTES an ADD of
    elementwise results, less GENERIC_KERNEL_EXTRA_BYTES an ADD of the others. An ADD the helper refuses counts
    nothing. Measured on cortex-m55, the generic kernel for every ADD against the helper:
    vit2h_d30_b1_24x16_tanh_int8 (three layer norms' ADDs of 720 elements, three others) 1,276 B less code for
    88,786 instructions more (does not pay), vit3h_d36_b2_20_int8 (five layer norms' of 900, four others) 1,648 B
    for 175,350 (pays, narrowly), mobilenet_v3s_min_050_80_int8 (seven residual ADDs of 432-1,600) 404 B for 64,580
    (pays), mobilenet_v3s_055_64_int8 (seed 59; five of 384-1,024) 92 B for 33,129 (pays)."""
    taken = [(add.elements, add.fused) for add in adds if takes_add(add.elements, add.params, add.rounding)]
    saved = sum((SAVED_PER_FUSED_ELEMENT if fused else SAVED_PER_ELEMENT) * count for count, fused in taken)
    code = HELPERS_CODE_BYTES + SPLIT_CODE_BYTES * sum(fused for _, fused in taken) \
        - GENERIC_KERNEL_EXTRA_BYTES * sum(not fused for _, fused in taken)
    return bool(taken) and saved >= code * INSTRUCTIONS_PER_BYTE


LARGEST_LEFT_SHIFT = 22
"""The helper's largest left shift: (x + offset) << left_shift stays below 2^30 for |x + offset| <= 255, and
the sum of two operands (each rescaled by a multiplier below 1) below 2^31."""


def fits_add_s8(params: Any, rounding: Any) -> bool:
    """Whether `params` (TFLite's int8 ADD multipliers: a `tvm_ext.kernels.quant_params.AddParams`) lie in the
    helper's contract: `rounding` (a `tvm_ext.kernels.Rounding`) double, a left shift of 0..LARGEST_LEFT_SHIFT,
    non-negative multipliers, input shifts of -31..0 and an output shift of -31..0."""
    multipliers = (params.input1, params.input2, params.output)
    return (rounding.value == "double" and 0 <= params.left_shift <= LARGEST_LEFT_SHIFT
            and all(0 <= int(m) <= 2**31 - 1 and -31 <= int(s) <= 0 for m, s in multipliers))


def takes_add(elements: int, params: Any, rounding: Any) -> bool:
    """Whether the helper takes an int8 ADD of two operands of one shape and ``elements`` output elements, of
    `params` and `rounding` (as `fits_add_s8`'s): FEWEST_ELEMENTS or more and `fits_add_s8`. The one contract of
    `helium_add_int8` and its price (`helium_adds_pay`)."""
    return elements >= FEWEST_ELEMENTS and fits_add_s8(params, rounding)


def helium_add_int8(lhs: te.Tensor, rhs: te.Tensor, *, lhs_zero_point: int, rhs_zero_point: int,
                    output_zero_point: int, params: Any, activation: Any, rounding: Any) -> Optional[te.Tensor]:
    """TFLite's int8 ADD of `lhs` and `rhs` (keywords as `tvm_ext.kernels.add_int8`'s: `params` its AddParams,
    `activation` its ActivationRange, in output units; this backend does not import the kernels) as a TE extern
    stage: the tables' call into a scratch buffer of its own, then `<prefix>_add_s8` over runs of RUN elements,
    or None where the helper does not fit: operands of different shapes (broadcast) or not int8, or
    `takes_add` false."""
    shape = [int(d) for d in lhs.shape]
    count = math.prod(shape)
    if shape != [int(d) for d in rhs.shape] or str(lhs.dtype) != "int8" or str(rhs.dtype) != "int8" \
            or not takes_add(count, params, rounding):
        return None
    operands = tuple(tirx.const(int(value), "int32") for value in (
        -int(lhs_zero_point), -int(rhs_zero_point), params.left_shift, *params.input1, *params.input2))
    output = tuple(tirx.const(int(value), "int32") for value in (
        *params.output, int(output_zero_point), max(int(activation.low), -128), min(int(activation.high), 127)))

    def build(ins, outs):
        table_values = OPERAND_VALUES if halved_operand(params) else TABLE_VALUES
        values = tirx.decl_buffer((table_values,), "int32", name="add_tables")
        index = str(outs[0].shape[0].ty.dtype)


        tables = values.access_ptr("rw")  # the whole buffer: no pass may shrink it to what TIR reads

        def run(start, length: int) -> tirx.Stmt:
            return tirx.Evaluate(tirx.call_intrin(
                "int32", ADD_S8_OP, *(element_address(buffer, start) for buffer in (outs[0], ins[0], ins[1])),
                tirx.const(length, "int32"), tables, *operands, *output))

        tables_call = tirx.Evaluate(tirx.call_intrin("int32", ADD_S8_TABLES_OPS[table_values], tables, *operands,
                                                     output[1]))
        return tirx.SeqStmt([tirx.AllocBuffer(values), tables_call, *runs_of(count, RUN, index, run)])

    return extern_from_zero(shape, [lhs, rhs], build, "add_int8_helium")
