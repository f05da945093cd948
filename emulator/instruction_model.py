"""An estimate of a kernel call's executed instructions before anything is built, for `tvm-ext-compile --analyze`.

Without a build there is no QEMU count, so a call's instructions are estimated from its plan facts alone:

    instructions = MACs x INSTRUCTIONS_PER_MAC[kind] + activation bytes read and written x INSTRUCTIONS_PER_BYTE

`kind` is the first model operator of the call (the one a fused call leads). The figures are our int8 kernels'
measured under QEMU -icount on cortex-m4f (person_detect, 30 calls: `python scripts/calibrate_units.py BUNDLE`
prints the per-MAC table of any emulated bundle); a kind not listed takes DEFAULT_INSTRUCTIONS_PER_MAC. Times then
follow from `emulator.cycle_model` (cycles per instruction of the core, at the profile's clock). It ignores how
each core's compiler and SIMD change the count, float kernels' own costs and the layout of each layer: an
estimate to compare layers and profiles, never a measurement (a built bundle's report.md counts them).
"""

from __future__ import annotations

from types import MappingProxyType

INSTRUCTIONS_PER_MAC = MappingProxyType({"CONV_2D": 1.77, "Conv": 1.77, "DEPTHWISE_CONV_2D": 4.96})
"""Instructions per multiply-accumulate by operator kind (person_detect on cortex-m4f, QEMU -icount; measured
again on 2026-11-30 after the depthwise tiles: they were 1.9 and 6.2)."""

DEFAULT_INSTRUCTIONS_PER_MAC = 3.0
"""A kind not measured: between the convolutions' figures (a fully connected layer's inner loop is a conv's)."""

INSTRUCTIONS_PER_BYTE = 6.6
"""Per activation byte read or written: person_detect's AVERAGE_POOL_2D (16,974 instructions for 2,560 bytes),
the work of a call without MACs (pools, softmax, element-wise operators, copies)."""

DESCRIPTION = (f"estimate, not a measurement: MACs x instructions per MAC ({INSTRUCTIONS_PER_MAC['CONV_2D']} "
               f"convolution, {INSTRUCTIONS_PER_MAC['DEPTHWISE_CONV_2D']} depthwise, {DEFAULT_INSTRUCTIONS_PER_MAC} "
               f"other kinds) + activation bytes x {INSTRUCTIONS_PER_BYTE}, our int8 kernels' figures under QEMU on "
               "cortex-m4f")
"""One line saying what an estimated instruction count is (shown beside every figure made from it), made from
the figures themselves."""


def estimated_instructions(kind: str | None, macs: int, activation_bytes: int) -> float:
    """Estimated instructions of one kernel call whose leading model operator is `kind` (None: a call that
    implements no model operator, such as an output copy), doing `macs` multiply-accumulates and reading and
    writing `activation_bytes` bytes of activations."""
    per_mac = INSTRUCTIONS_PER_MAC.get(kind, DEFAULT_INSTRUCTIONS_PER_MAC) if kind is not None else 0.0
    return macs * per_mac + activation_bytes * INSTRUCTIONS_PER_BYTE
