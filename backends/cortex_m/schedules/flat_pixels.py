"""A convolution's output rows and columns as one pixel index, where its windows lie evenly along it.

The two-pixel dual MAC (``backends.cortex_m.schedules.dual_mac``) pairs neighbouring output pixels of the schedule's pixel loop.
Per row, a row of odd width leaves its last pixel alone: kws's 1x1 convolutions over 25 x 5 pixels ran 25
lone pixels at the one-pixel cost. Where pixel ``p`` of the fused index ``row * columns + column`` reads
its input window at ``p`` times a constant stride and writes its accumulators likewise (a 1x1 convolution of
stride 1 without padding: a matrix multiply over rows x columns pixels), the reduction and its epilogue
iterate by that index before the schedule tiles them, so the pairs run across rows: 125 pixels are 62 pairs
and one lone pixel, not 25 x (2 pairs + 1). Only the iteration changes (and the layout of the kernel's own
accumulators): each output's sum keeps its order (bit-exact). The window's loops of one iteration (a 1x1
window's) come out of the new layout as spatial axes; they still sit below the channels, as before.
"""

from __future__ import annotations

import itertools
from typing import Callable, Optional

from tvm import s_tir, tirx

from backends.cortex_m.schedules.dual_mac import DUAL_MAC_PIXELS, AccessOffsets, MacReduction, mac_reduction


def flatten_odd_pixel_rows(sch: s_tir.Schedule, block, loops: list, first_reduce: int,
                           reduction_of: Callable[[s_tir.SBlock], Optional[MacReduction]] = mac_reduction,
                           odd_only: bool = True) -> Optional[tuple[list, int]]:
    """Iterate the int8 MAC reduction ``block`` (its loops ``loops`` trivially bound: batch, rows, columns,
    output channels, then from ``first_reduce`` the reduction) and its epilogue by one fused pixel index
    ``row * columns + column`` when the columns are odd (a row would leave a pixel unpaired), there are
    several rows, the input window and the accumulators move by one constant stride per fused pixel over
    the whole image (the weights not at all), and the accumulators are an NHWC buffer of the kernel's own
    read by one epilogue block over the same axes (both then iterated, and the accumulators laid out, by
    the fused pixel: a pair's second pixel lies one pixel after the first wherever it is). Returns the new
    loops and the index of the first reduction loop, or None (left as it was). ``reduction_of``: the block's MAC
    reduction (store, input, weight loads), or None where it is none the core's helpers take (by default an int8 x
    int8 one; the RISC-V backend's also over paired weight words). Without ``odd_only``, columns of any count (Helium,
    whose one-row windows run pixel by pixel through the fused channel tiles, `conv_tiles.pays_two_pixels`: one pixel
    loop, not a row loop around a column loop, whose bookkeeping gcc spilled around the inlined tiles:
    mobilenet_v2_050_64_int8 on cortex-m55, its 1x1 kernel of 8x8 pixels 316 -> 258 B)."""
    if first_reduce != 4:
        return None
    rows, columns = sch.get(loops[1]), sch.get(loops[2])
    if not all(isinstance(loop.extent, tirx.IntImm) for loop in (rows, columns)):
        return None
    extents = (int(rows.extent), int(columns.extent))
    if (odd_only and extents[1] % DUAL_MAC_PIXELS == 0) or extents[0] < 2:
        return None
    realize = sch.get(loops[-1]).body
    reduction = reduction_of(realize.block) if isinstance(realize, s_tir.SBlockRealize) else None
    if reduction is None or not (realize.iter_values[1].same_as(rows.loop_var)
                                 and realize.iter_values[2].same_as(columns.loop_var)):
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = AccessOffsets(bindings, [rows.loop_var, columns.loop_var])
    try:
        even = all(_even_along_pixels(offsets, access, extents) for access in (reduction.data, reduction.store))
        still = offsets.step(reduction.weight, 0) == 0 and offsets.step(reduction.weight, 1) == 0
    except KeyError:
        return None  # an index form we do not evaluate (a padded tap): keep the rows
    if not even or not still or not _nhwc(reduction.store.buffer.shape, extents) \
            or not any(reduction.store.buffer.same_as(own) for own in sch.get(sch.get_sblock("root")).alloc_buffers):
        return None
    consumers = sch.get_consumers(block)
    if len(consumers) != 1 or not _nhwc([iv.dom.extent for iv in sch.get(consumers[0]).iter_vars], extents):
        return None

    def fused(batch, row, column, *rest):
        return (batch, row * extents[1] + column, *rest)

    axes = len(realize.block.iter_vars)
    # The epilogue first: where its loops are not its own (a PAD after the convolution computed in them, as
    # MobileNetV1 pads an odd-width image before a stride-2 depthwise), it refuses before the reduction's loops
    # change, and the caller's loops stay the reduction's (refused second, they no longer existed).
    try:
        sch.transform_block_layout(consumers[0], tirx.IndexMap.from_func(fused, ndim=4, index_dtype="int32"))
        sch.transform_block_layout(block, tirx.IndexMap.from_func(fused, ndim=axes, index_dtype="int32"))
    except s_tir.ScheduleError:
        return None  # not a loop nest of their own (an epilogue iterated by pixels, if it was, is harmless)
    sch.transform_layout(block, ("write", 0), fused)
    return sch.get_loops(block), first_reduce - 1


def _nhwc(shape, extents: tuple[int, int]) -> bool:
    """Whether ``shape`` is four constant extents, the middle two ``extents`` (rows, columns)."""
    return len(shape) == 4 and all(isinstance(extent, tirx.IntImm) for extent in shape) \
        and (int(shape[1]), int(shape[2])) == extents


def _even_along_pixels(offsets: AccessOffsets, access, extents: tuple[int, int]) -> bool:
    """Whether ``access`` at every (row, column) of ``extents`` lies at its origin plus the fused pixel
    index times its step along the columns (KeyError: an index form we do not evaluate)."""
    origin = offsets.offset(access, [0, 0])
    stride = offsets.step(access, 1)
    return all(offsets.offset(access, [row, column]) == origin + (row * extents[1] + column) * stride
               for row, column in itertools.product(range(extents[0]), range(extents[1])))
