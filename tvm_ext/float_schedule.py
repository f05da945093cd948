"""How many output channels a float MAC kernel accumulates at once, chosen by the target profile.

Why: on a core with a floating-point unit (cortex-m4f, m7, m33: 32 single-precision registers) a float
convolution's inner loop loads one input value and one weight per output channel of the tile, and issues one
fused multiply-accumulate per channel. Eight accumulators (with eight weights and the input value: 17
registers) halve the loop's share of each MAC against four; the weights of one tile are contiguous in the
HWIO layout TOPI reads, so no re-layout is needed. Cores without an FPU call a software float routine per
MAC, where the tile changes little: they keep the integer kernels' tile.

The order of the additions into each output element is unchanged (tvm_ext.schedule._tile_channels).
"""

from __future__ import annotations

from tvm import s_tir

from target.profile import Profile

FPU_CHANNEL_TILES: tuple[int, ...] = (8, 4)
"""The float tiles tried on an FPU core, widest first: the first one that divides a kernel's channels."""


def float_channel_tiles(profile: Profile) -> tuple[int, ...]:
    """The channel tiles a float reduction tries on `profile`'s core, widest first: FPU_CHANNEL_TILES on an
    Arm M-profile core with an FPU; empty elsewhere (float MAC kernels keep the integer kernels' tile)."""
    return FPU_CHANNEL_TILES if profile.hardware_float and profile.arch.startswith("armv") else ()


def accumulates_float(sch: s_tir.Schedule, block) -> bool:
    """Whether the reduction `block` writes a float accumulator."""
    return all(str(region.source.dtype).startswith("float") for region in sch.get(block).writes)
