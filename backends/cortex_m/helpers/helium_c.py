"""The Helium (Armv8.1-M MVE) implementations of the Cortex-M helpers: TFLite Micro's per-target override, where
a kernel keeps its reference signature and the target swaps its body. Each template defines the helpers of the
DSP template it replaces, under the same names, arguments and contracts, so the kernels scheduled for the
DSP core call them unchanged; a Helium bundle's library (`backends.cortex_m.helpers.HELIUM_HELPERS`) defines
these in place of the DSP ones, chosen by the profile's `simd = "mve"` (`backends.cortex_m.helpers.helpers_of`).

- `helium_dual_mac.h.in`: `<prefix>_dual_mac_s8x4`, `_s16x4` and `_s8x2x4` as 16 int8 (8 int16) lanes per
  vector load and one VMLADAVA per channel, the row's last lanes predicated (VCTP), no scalar tail;
- `helium_row_dot.h.in`: `<prefix>_row_dot_s8x4` the same way.

The others (the q15 pair, the depthwise MAC) keep their DSP bodies: an Armv8.1-M core with MVE has the DSP
extension. Each is unit-tested by its DSP twin's test, built for cortex-m55 and run under QEMU mps3-an547
(`tests/backends/cortex_m/test_cortex_m_helpers_c.py`).
"""

from __future__ import annotations

from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_TEMPLATE, MAC_HELPER_TEMPLATES
from backends.cortex_m.helpers.row_dot_c import ROW_DOT_TEMPLATE

HELIUM_DUAL_MAC_TEMPLATE = "helium_dual_mac.h.in"
HELIUM_ROW_DOT_TEMPLATE = "helium_row_dot.h.in"
HELIUM_OVERRIDES = {DUAL_MAC_TEMPLATE: HELIUM_DUAL_MAC_TEMPLATE, ROW_DOT_TEMPLATE: HELIUM_ROW_DOT_TEMPLATE}
"""The DSP templates a Helium bundle replaces, and their replacements."""
HELIUM_MAC_TEMPLATES = tuple(HELIUM_OVERRIDES.get(name, name) for name in MAC_HELPER_TEMPLATES)
"""The MAC helpers' templates of a Helium bundle, in the DSP bundle's order."""
