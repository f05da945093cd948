"""Which CONV_2D kernels of a model take tiled weights on RV32 cores (`tvm_ext.transform.int8.conv`'s tiled OHWI
weights, `backends.riscv.schedules.mac.tiled_mac_replacement`): the bundle's one out-of-line tiled window MAC
(`<prefix>_mac_s8x8_tiled_rows`) in place of each kernel's inlined int8 window MAC (`<prefix>_mac_s8x8`, its channel
stride folded into immediates), where the code it saves pays its calls' instructions at the one price of code."""

from __future__ import annotations

from collections.abc import Sequence

from backends.code_price import INSTRUCTIONS_PER_BYTE

INLINED_MAC_BYTES = 570
"""A kernel's code more with the int8 window MAC inlined than calling the tiled copy (bytes), about the least
measured on rv32imc (gcc -O2 -mtune=size): yolo_tiny_80x48_w11's 3x3 kernel of 30 channels 1,044 -> 474 B, 70 channels
1,004 -> 482; resnet8_w11_32x44's 3x3 stride-2 kernel of 21 channels 1,010 -> 406."""
COPY_BYTES = 648
"""The tiled copy's own code (bytes, once per bundle; rv32imc, its four-input pass and its tail)."""
CALL_INSTRUCTIONS = 30
"""Instructions more per call of the copy (a pixel's channel tile) than the inlined MAC's, about the most measured
on rv32imc for windows of MIN_WINDOW inputs or more (its registers saved and restored, the sums loaded and stored, its
sizes read at run time): yolo_tiny_80x48_w11's 3x3 kernel of 30 channels over 17 inputs 4,207,245 -> 4,234,713 (29 a
call), resnet8_w11_32x44's 3x3 ones of 21 channels over 11 and 21 inputs 25 and 27 a call."""
MIN_WINDOW = 32
"""The fewest inputs of a window (taps times input channels) whose kernel takes the tiled copy: a shorter one's
inlined MAC is unrolled whole on its constant length (resnet8_w11_32x44's 1x1 kernel over 11 inputs: 68 instructions
a call more through the copy, 565,957 -> 637,346)."""


def tiled_convs_pay(convs: Sequence[tuple[int, int]]) -> frozenset[int]:
    """The indices of ``convs`` that take tiled weights, from each kernel's (window inputs, its channel tiles' calls
    per inference: output pixels times tiles of eight, over every layer it computes): those of windows of at least
    MIN_WINDOW inputs whose INLINED_MAC_BYTES pay their calls' CALL_INSTRUCTIONS at the one price of code, all of
    them where their gains together pay the copy's COPY_BYTES too, else none (rv32imc yolo_tiny_80x48_w11: its five
    3x3 kernels of 30 to 70 channels, code 10,662 -> 8,056 B; resnet8_w11_32x44: none, its two 3x3 kernels of 21
    channels would save 526 B for 55,000 instructions more)."""
    gains = {index: INLINED_MAC_BYTES * INSTRUCTIONS_PER_BYTE - CALL_INSTRUCTIONS * calls
             for index, (window, calls) in enumerate(convs) if window >= MIN_WINDOW}
    paying = {index: gain for index, gain in gains.items() if gain > 0}
    return frozenset(paying) if sum(paying.values()) > COPY_BYTES * INSTRUCTIONS_PER_BYTE else frozenset()
