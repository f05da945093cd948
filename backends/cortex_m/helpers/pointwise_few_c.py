"""The DSP cores' int8 1x1 convolution of few input channels: `<prefix>_pointwise_few_s8`, C in `<model>_internal.h`,
called by the kernel `backends.cortex_m.schedules.pointwise_few` writes for a 1x1 CONV_2D over one to four input
channels (every pixel and output channel in one call: each pixel's inputs one word widened once, each output two
SMLAD from its channel's weight word, then the requantization steps of `requantize_small.h.in`).

A library of its own (`backends.cortex_m.helpers.POINTWISE_FEW_HELPERS`, needing CORTEX_M_HELPERS' word operations
and requantization steps): only a bundle whose kernels call it defines it, so the other bundles keep their bytes.
The C is hand-written: `templates/pointwise_few.h.in` (its contract in its leading comment), unit-tested on the host
and under QEMU by `tests/c/test_pointwise_few.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from packager.template_files import helper_template_c

POINTWISE_FEW_TEMPLATE = "pointwise_few.h.in"


def pointwise_few_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_pointwise_few_s8"


def pointwise_few_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (after CORTEX_M_HELPERS' definitions)."""
    return helper_template_c(__package__, POINTWISE_FEW_TEMPLATE, prefix)
