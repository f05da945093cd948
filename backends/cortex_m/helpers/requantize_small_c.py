"""The int8 requantization epilogue of a MAC kernel on a core with the DSP extension: `<prefix>_requantize_small_s8`
(int32 biases) and `_s8_b16` (int16 ones), and `_lut_s8`, `_lut_s8_b16` whose outputs are then looked up in a
256-entry table (an activation fused as one: LEAKY_RELU), `static inline` (always inlined) C in `<model>_internal.h`, called by
the DSP schedules in place of the scalar loop over a channel tile whose every output TFLite requantizes with
`packager.fixed_point_c`'s "double_small" (`backends.cortex_m.schedules.requantize_epilogue`).

Inlined beside the MAC helper of the same tile, the four accumulators stay in registers; per tile of four
outputs the shifts are one word load (each lane's right shift in its own byte: ASR by a register reads the
low byte), and per output SMMULR, the rounding right shift in three instructions, the zero point and SSAT.
Elsewhere (a host build) the same steps in portable C. Bit-exact with the scalar helpers it replaces.

The C is hand-written: `templates/requantize_small.h.in` (its contract in its leading comment), unit-tested on
the host and under QEMU by `tests/c/test_requantize_small.c` (`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.bias_forms import bias_form
from packager.template_files import helper_template_c

REQUANTIZE_SMALL_TEMPLATE = "requantize_small.h.in"


def requantize_small_helper_name(prefix: str, bias: str, table: bool = False) -> str:
    """The C name of the helper for biases of type `bias` ("int32" or "int16") in the bundle `prefix`; with
    `table`, the one whose outputs are looked up in a table (`_lut_s8`, `_lut_s8_b16`)."""
    name = f"{prefix}_requantize_small_lut_s8" if table else f"{prefix}_requantize_small_s8"
    return bias_form(name, bias)


def requantize_small_c(prefix: str) -> str:
    """The C definitions of the helpers for the bundle `prefix`."""
    return helper_template_c(__package__, REQUANTIZE_SMALL_TEMPLATE, prefix)
