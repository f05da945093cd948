"""The register tile of a float MAC kernel (output channels x output pixels), chosen by the target profile.

Why: on a core with a floating-point unit (cortex-m4f, m7, m33: 32 single-precision registers) a float
convolution's inner loop loads one input value and one weight per output channel of the tile, and issues one
fused multiply-accumulate per channel. Eight accumulators (with eight weights and the input value: 17
registers) halve the loop's share of each MAC against four; the weights of one tile are contiguous in the
HWIO layout TOPI reads, so no re-layout is needed. Cores without an FPU call a software float routine per
MAC, where the tile changes little: they keep the integer kernels' tile. A channel-tiled kernel also takes
PIXEL_TILE neighbouring pixels, so each weight loaded feeds as many MACs (a 1x1 convolution is then a matrix
multiply tiled 2 x 8).

The order of the additions into each output element is unchanged (tvm_ext.schedule.kernel_schedule._tile_channels).
The hook: tvm_ext.schedule.kernel_schedule.inline_intermediates, with the tiles the profile's backend gives (a backend's
`KernelSchedules.float_channel_tiles`: FPU_CHANNEL_TILES on a Cortex-M with an FPU).
"""

from __future__ import annotations

from typing import Optional

from tvm import s_tir, tirx


FPU_CHANNEL_TILES: tuple[int, ...] = (8, 4)
"""The float tiles tried on an FPU core, widest first: the first one that divides a kernel's channels."""

PIXEL_TILE = 2
"""Neighbouring output pixels a float convolution accumulates with its channel tile: each weight
loaded then feeds PIXEL_TILE MACs (8 channels x 2 pixels: 16 accumulators, 8 weights, 2 inputs in 26 of the
32 single-precision registers)."""


def accumulates_float(sch: s_tir.Schedule, block) -> bool:
    """Whether the reduction `block` writes a float accumulator."""
    return all(str(region.source.dtype).startswith("float") for region in sch.get(block).writes)


def tile_pixels(sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> Optional[tuple[list, int]]:
    """Accumulate PIXEL_TILE output pixels of a channel-tiled float reduction at once, the convolution as a
    matrix multiply of pixels by output channels: the pixel loop (just outside the channel tile's outer loop,
    ``loops[first_reduce - 2]``) is split and its inner part moved beside the channel tile, below the
    reduction, and unrolled. Returns the new loops and index of the first reduction loop, or None (a pixel
    count PIXEL_TILE does not divide). A padded input's tile tests all its pixels at once, outside the MAC
    loop (tvm_ext.codegen.padding_test_hoist). The order of the additions into each output element is unchanged."""
    if first_reduce < 2 or not isinstance(sch.get(loops[first_reduce - 2]).body, tirx.For):
        return None  # no pixel loop, or another statement between it and the channel loop
    pixels = sch.get(loops[first_reduce - 2]).extent
    if not isinstance(pixels, tirx.IntImm) or int(pixels) % PIXEL_TILE:
        return None
    outer, inner = sch.split(loops[first_reduce - 2], [None, PIXEL_TILE])
    sch.reorder(outer, loops[first_reduce - 1], *loops[first_reduce:-1], inner)
    sch.unroll(inner)
    return sch.get_loops(block), first_reduce

