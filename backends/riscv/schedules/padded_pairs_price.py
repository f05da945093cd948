"""Which CONV_2D layers pad their output channels to whole tiles of eight and take paired weights on RV32 cores
(`tvm_ext.transform.int8.conv`'s padded pairs, `backends.backend.KernelSchedules.padded_pairs_pay`): those whose
channels, padded to whole tiles of four (`KernelSchedules.dense_unit_tile`), would end in a tile of four, which
the four-channel window MAC (`<prefix>_mac_s8x4`) takes with one MUL per product, where the paired MAC of eight
channels takes two products per MUL (`templates/mac_s8x8_pairs.h.in`), its zero channels' sums computed and never
read; where the instructions saved pay the kernel's larger code at the one price of code."""

from __future__ import annotations

from backends.code_price import INSTRUCTIONS_PER_BYTE, code_gain
from backends.riscv.helpers import FOUR_CHANNELS, MAC_CHANNELS

SAVED_PER_MAC = 0.5
"""The instructions a layer's MAC (of its own channels, not the padding's) the paired tiles of eight save over the
tiles of four, at the least measured on rv32imc: resnet18_w9's 3x3 convolutions of 9 channels (padded to 16, where
four padded them to 12) 6.4 -> 5.9 a MAC; 18 channels (24 against 20) 4.9 -> 4.0, 36 channels (40 against 36) 4.2
-> 3.1; pools_prelu_37x29's 19 channels (24 against 20) 4.6 -> 4.0."""
CODE_BYTES = 330
"""The code a kernel takes more with the paired tiles, about the most measured on rv32imc (gcc -O2 -mtune=size):
resnet18_w9's 3x3 kernels of 36 channels 342 -> 584 B, of 18 channels 434 -> 568 B (their window MAC's two calls,
the border's copied window and the interior's rows, where the tiles of four called the fused four-channel tiles);
unseen resnet18_w6_52x44's three 3x3 kernels of 12 channels over 7x6 pixels, 54,432 MACs each, 974 B more in all
(the paired MAC's copy brought in) for 89,070 fewer instructions, which this price keeps out."""
MIN_MACS = int(CODE_BYTES * INSTRUCTIONS_PER_BYTE / SAVED_PER_MAC)
"""The fewest MACs of one call at which a layer takes the paired tiles: where the instructions saved pay the code
(`code_gain`, the one price of a choice)."""
MIN_WINDOW = 32
"""The fewest inputs of a window (taps times input channels) whose layer takes the paired tiles: over a shorter one
the paired MAC's sums and calls cost about what its products save (rv32imc yolo_tiny_80_int8's first 3x3 convolution
over 3 channels, 27 inputs, 12 channels: 11,576,231 -> 11,501,415 instructions for 282 B more code, the bundle's
first paired layer bringing the paired MAC's copy)."""


def padded_pairs_pay(channels: int, taps: int, window: int, macs: int) -> bool:
    """Whether a CONV_2D of ``channels`` output channels, a window of ``taps`` taps and ``window`` inputs (taps times
    input channels) and ``macs`` MACs a call pads its channels to whole tiles of eight and takes paired weights: more
    than four channels (four or fewer would pad to twice the tile of four), whose tiles of four end in one that eight
    does not cover (a count of tiles of four that is odd: 9-12, 17-20, ...; those padded to whole tiles of eight by
    four already take the tiled or the int8 window MACs), a window of more than one tap (a 1x1 convolution's tiles of
    four read one row, inlined: unseen efficientnet_lite_w025_76x60's 1x1 ones of 9-49 channels took 2,154 B more
    code for 483,288 fewer instructions) and at least MIN_WINDOW inputs, and at least MIN_MACS MACs."""
    fours = -(-channels // FOUR_CHANNELS)
    return channels > FOUR_CHANNELS and fours * FOUR_CHANNELS % MAC_CHANNELS != 0 and taps > 1 \
        and window >= MIN_WINDOW and code_gain(-CODE_BYTES, -int(SAVED_PER_MAC * macs)) >= 0
