"""The speed targets of kernel kinds on an RV32IM core (issue 30): no DSP, no SIMD, 31 registers.

Instructions per unit of each kind (`packager.kernel_kinds`: MACs, or bytes) that a careful scalar kernel reaches on
RV32IM under QEMU -icount (a compressed instruction counts as one): report.md marks a call more than
`packager.kernel_kinds.OVER_TARGET` times above its kind's, as it does on the DSP cores
(`backends.cortex_m.kind_targets`). Each target is the instruction count of the kernel's inner step, spread over the
units it serves, with its loop's overhead:

- a convolution or fully connected MAC: a tile of eight output channels in registers, their weights paired two
  channels to a word (one MUL computes two products: `schedules.mac`), so an input byte's step is one LB, four LW,
  four MUL and four ADD over eight MACs, 1.6 a MAC; 2.5 with the window's and the tile's loops and the paired sums'
  split (measured, rv32imc: conv1d_audio_98x20's 24-, 32- and 48-channel convolutions 2.7-2.8 a MAC, ad01_int8's
  FULLY_CONNECTED layers 2.7);
- a depthwise, transpose, matrix-multiply, recurrent or other MAC: 3.0, one input and one weight each loaded per
  product (no pairing across output channels: two loads, a MUL and an ADD over a tile's loads of four bytes);
- a pool or reduction, per input byte: 3.0 (an LB and an ADD, or the maximum as a compare and a branch over a move,
  and the window's steps);
- a softmax per output byte: 30.0 (its exponent's and reciprocal's fixed-point steps on 32-bit MULH/MUL, where
  Armv7E-M has SMMLA and saturating instructions: the DSP cores' 20 and half again);
- a resize per output byte: 2.0 (a byte's load and store and its source index);
- an elementwise operator per output byte: 12.0 (one byte loaded, its zero point and a 32x32 -> 64-bit rescale as
  MUL and MULH with the rounding's nudge, the shift, the clamp and the store: the DSP cores' 8 and half again for
  the saturations RV32IM does without);
- a requantization per output byte: 6.0;
- data movement per output byte: 1.5 (a word loaded and stored per four bytes where rows are aligned, a byte's LB and
  SB with the pointer steps over rows of odd channel counts).
"""

from __future__ import annotations

from typing import Mapping

from packager import kernel_kinds as kinds
from target.profile import Profile

RV32_TARGETS: Mapping[kinds.KernelKind, float] = dict((
    (kinds.CONVOLUTION, 2.5), (kinds.FULLY_CONNECTED, 2.5),  # paired weights, eight channels a tile
    (kinds.DEPTHWISE, 3.0), (kinds.TRANSPOSE_CONVOLUTION, 3.0), (kinds.BATCH_MATMUL, 3.0),  # unpaired
    (kinds.RECURRENT, 3.0), (kinds.OTHER_MACS, 3.0),
    (kinds.POOL, 3.0), (kinds.SOFTMAX, 30.0), (kinds.RESIZE, 2.0), (kinds.ELEMENTWISE, 12.0),
    (kinds.REQUANTIZATION, 6.0), (kinds.DATA_MOVEMENT, 1.5),
))
"""Instructions per unit of each kind on an RV32IM core (see the module docstring)."""


def kind_targets(profile: Profile) -> Mapping[kinds.KernelKind, float]:
    """The targets of `profile`'s core: every RISC-V profile's is an RV32IM core (RV32IMC, RV32IMAFC: an int8
    kernel runs no float instruction, so the F extension changes none)."""
    return RV32_TARGETS
