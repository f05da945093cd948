"""The float multiply-accumulates and tile epilogues of Cortex-M cores with a scalar single-precision FPU and no MVE
(cortex-m4f, m7, m33): `fpu_float.h.in`, the contracts of Helium's `helium_float.h.in` under the same names, a tap's
weights loaded by one VLDM per group of eight channels (no depthwise helper), the sums the scalar kernel's
VMUL and VADD. Called by the DSP cores' float schedule (`backends.cortex_m.schedules.helium_float.FPU_FLOAT_OPS`);
its own library (`FPU_FLOAT_HELPERS`, `backends.cortex_m.helpers`): a float bundle defines it alone, an int8 bundle
never, a Helium bundle never (it defines `helium_float.h.in`)."""

from __future__ import annotations

from packager.template_files import helper_template_c

FPU_FLOAT_TEMPLATE = "fpu_float.h.in"


def fpu_float_c(prefix: str) -> str:
    """The C definitions of the float multiply-accumulates and epilogues in a bundle of prefix `prefix` for a scalar
    FPU core (the template needs none of the integer helpers)."""
    return helper_template_c(__package__, FPU_FLOAT_TEMPLATE, prefix)
