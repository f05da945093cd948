"""The bundle's dual multiply-accumulate over interleaved weights: `<prefix>_dual_mac_s8x4_interleaved`, a `static`
C function in `<model>_internal.h` kept out of line (`noinline`: one copy per bundle, each call site a call),
called by the LSTM's gate products and the SVDF's feature product on DSP cores without MVE
(`backends.cortex_m.schedules.extern_helpers`), whose weights the int8 lowering lays out once at compile time
(`tvm_ext.kernels.extern_mac.interleave_weights`: per tile of four units, each group of four inputs' sixteen
weights together, unit after unit).

Its own library (`INTERLEAVED_MAC_HELPERS`), so that only a bundle that calls it defines it: every other
bundle's `<model>_internal.h` stays as it was.

The C is hand-written: `templates/dual_mac_interleaved.h.in` (its contract in its leading comment), unit-tested
on the host and under QEMU by `tests/c/test_dual_mac_interleaved.c`
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.backend import HelperLibrary
from backends.cortex_m.family import CORTEX_M_FAMILY
from packager.template_files import helper_template_c

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS

DUAL_MAC_INTERLEAVED_TEMPLATE = "dual_mac_interleaved.h.in"
INTERLEAVED_GROUP = 4
"""Inputs per group: a group's weights are INTERLEAVED_GROUP inputs of each of the four channels, in a row (the
interleaved layout's tile, ``tvm_ext.kernels.extern_mac.INTERLEAVED_TILE``, not imported: that would close an
import cycle between the packages; tests/backends/cortex_m/test_extern_helpers.py checks they agree)."""
assert INTERLEAVED_GROUP == DUAL_MAC_CHANNELS == 4, "the template's C reads tiles of 4 channels x groups of 4 inputs"


def dual_mac_interleaved_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s8x4_interleaved"


def dual_mac_interleaved_c(prefix: str) -> str:
    """The helper's C definition for the bundle `prefix`."""
    return helper_template_c(__package__, DUAL_MAC_INTERLEAVED_TEMPLATE, prefix)


INTERLEAVED_MAC_HELPERS = HelperLibrary("cortex_m_interleaved_mac", dual_mac_interleaved_c, family=CORTEX_M_FAMILY)


DUAL_MAC_INTERLEAVED16_TEMPLATE = "dual_mac_interleaved16.h.in"
"""The same products over the interleaved layout's weights widened to int16 at compile time
(`<prefix>_dual_mac_s16x4_interleaved`: no widening of the weights in the loop, 11.5 instructions per 16 MACs
against 19.5), for the gate products whose widened weights the flash holds (`tvm_ext.transform.int8.lstm`)."""


def dual_mac_interleaved16_helper_name(prefix: str) -> str:
    """The C name of the int16-weight helper in the bundle `prefix`."""
    return f"{prefix}_dual_mac_s16x4_interleaved"


def dual_mac_interleaved16_c(prefix: str) -> str:
    """The int16-weight helper's C definition for the bundle `prefix`."""
    return helper_template_c(__package__, DUAL_MAC_INTERLEAVED16_TEMPLATE, prefix)


INTERLEAVED16_MAC_HELPERS = HelperLibrary("cortex_m_interleaved_mac16", dual_mac_interleaved16_c,
                                          family=CORTEX_M_FAMILY)
"""Its own library: a bundle whose gate weights stay int8 defines only `INTERLEAVED_MAC_HELPERS`, as before."""
