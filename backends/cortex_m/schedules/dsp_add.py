"""The DSP cores' int8 ADD, SUB and SQUARED_DIFFERENCE kernel from the operands' tabled values: an element loop
(operands broadcast TFLite's way) whose output stage is one call of `<prefix>_add_s8_value`
(`backends.cortex_m.helpers.templates.add_s8_values.h.in`: SMMLAR, the sign term and SSAT, inlined with constant
arguments), the kernel the int8 lowering writes where the backend gives one
(`backends.backend.KernelSchedules.int8_add_values`) and it has tabled the operand of the smaller scale's rescaled
values in flash (`tvm_ext.transform.int8.binary.values_call`: TFLite's larger-scale operand is an exact shift; a
table serves the layers of one operand quantization; the profile's flash budget grants it) and found the output's
constants (`tvm_ext.kernels.elementwise.add_from_values`: multiplier, right shift and bias, and the bounds that keep
the helper's int32 steps exact).

The generic kernel (`tvm_ext.kernels.add_int8`) computes the output's fixed-point rescale in 64-bit C: 14.1-14.5
instructions per byte on cortex-m4f on large ADDs whose operand's rescale it tables, 19.2-19.4 on small ones whose
rescale it computes; this kernel 10.1-10.5 (two byte loads, one table load, the sum with the shifted operand,
SMMLAR, the sign term, SSAT, the byte store and the loop's step: 10 per output in the innermost loop) in no more
code than the generic kernel's. An element loop as the generic kernel's, so the memory planner lets its output
share an input's bytes as it does the generic kernel's (`tvm_ext.codegen.stream_order`) and FuseOps may fuse it
into a chain of elementwise kernels; a fused activation narrower than int8 is a clamp after it.
"""

from __future__ import annotations

from typing import Any

from tvm import te, tirx

from backends.backend import HelperLibrary
from packager.template_files import helper_template_c
from tvm_ext.tir.broadcast import broadcast_read, broadcast_shape
from tvm_ext.tir.helper_calls import register_helper_call

ADD_VALUES_TEMPLATE = "add_s8_values.h.in"
"""The helper's hand-written C (`backends/cortex_m/helpers/templates/`, unit test `tests/c/test_add_s8_values.c`)."""


def add_values_helper_c(prefix: str) -> str:
    """The helper's C definition for the bundle `prefix` (a module function: the library compares equal after the
    compile's workers send it back pickled, so a bundle defines it once)."""
    return helper_template_c("backends.cortex_m.helpers", ADD_VALUES_TEMPLATE, prefix)


ADD_VALUES_HELPERS = HelperLibrary("cortex_m_add_values", add_values_helper_c, family=None)
"""Its library of its own: only a bundle whose kernels call `<prefix>_add_s8_value` defines it (it needs
<stdint.h> only), so the other bundles keep their bytes. Portable (`family` None): RISC-V bundles define it too."""
ADD_VALUE_OP = "tvm_ext.add_s8_value"
# The call (s, multiplier, right, bias) -> the saturated int8 output (int32) of the doubled sum s.
register_helper_call(ADD_VALUE_OP, ADD_VALUES_HELPERS, "{}_add_s8_value".format, pure=True)


def dsp_add_values(lhs: te.Tensor, rhs: te.Tensor, *tables: te.Tensor, multiplier: int, right: int, bias: int,
                   lhs_scale: int, rhs_scale: int, squared: bool = False, activation: Any = None) -> te.Tensor:
    """TFLite's int8 ADD (or SUB) of `lhs` and `rhs` (int8, broadcast) from their doubled rescaled values, or with
    `squared` SQUARED_DIFFERENCE from their rescaled values: an operand of `lhs_scale` (`rhs_scale`) 0 is read from
    the next of `tables` (int32[256] each, indexed by the byte), another is its value times that scale (an exact
    shift: `tvm_ext.transform.int8.binary.values_call`), an int32 operand (a small constant's) is its terms as they
    are; the terms' sum s (squared: 2 s^2) through the output's
    `multiplier`, `right` shift and `bias` (`tvm_ext.kernels.elementwise.add_from_values`), clamped to `activation`
    (its `low` and `high`, output units; None: int8's range) where that is narrower than int8."""
    low, high = (-128, 127) if activation is None else (int(activation.low), int(activation.high))
    constants = tuple(tirx.const(int(value), "int32") for value in (multiplier, right, bias))
    remaining = iter(tables)
    terms = [(operand, scale, None if scale or str(operand.dtype) == "int32" else next(remaining))
             for operand, scale in ((lhs, lhs_scale), (rhs, rhs_scale))]

    def value(*index):
        total = tirx.const(0, "int32")
        for operand, scale, table in terms:
            x = broadcast_read(operand, index)
            if str(operand.dtype) == "int32":  # a constant's terms, computed at compile time
                total = total + x
                continue
            total = total + (x.astype("int32") * scale if table is None else table[x.astype("uint8").astype("int32")])
        if squared:
            total = total * total * 2
        out = tirx.call_intrin("int32", ADD_VALUE_OP, total, *constants)
        if low > -128:
            out = tirx.max(out, low)
        if high < 127:
            out = tirx.min(out, high)
        return out.astype("int8")

    return te.compute(broadcast_shape(lhs, rhs), value, name="squared_difference_int8_values" if squared
                      else "add_int8_values")
