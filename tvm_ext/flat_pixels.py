"""A convolution's output rows and columns as one pixel index, where its windows lie evenly along it.

The two-pixel dual MAC (``tvm_ext.dual_mac``) pairs neighbouring output pixels of the schedule's pixel loop.
Per row, a row of odd width leaves its last pixel alone: kws's 1x1 convolutions over 25 x 5 pixels ran 25
lone pixels at the one-pixel cost. Where pixel ``p`` of the fused index ``row * columns + column`` reads
its input window at ``p`` times a constant stride and writes its accumulators likewise (a 1x1 convolution of
stride 1 without padding: a matrix multiply over rows x columns pixels), the row and column loops are fused
first, so the pairs run across rows: 125 pixels are 62 pairs and one lone pixel, not 25 x (2 pairs + 1).
Only the loops are fused: each output's sum keeps its order (bit-exact).
"""

from __future__ import annotations

import itertools
from typing import Optional

from tvm import s_tir, tirx

from tvm_ext.dual_mac import DUAL_MAC_PIXELS, AccessOffsets, mac_reduction


def fuse_odd_pixel_rows(sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> Optional[tuple[list, int]]:
    """Fuse the output row and column loops of the channel-tiled int8 MAC reduction ``block`` (its loops
    ``loops``: the row loop, the column loop and the channel tile's outer loop just above the reduction,
    which starts at ``first_reduce``) into one pixel loop when the columns are odd (a row would leave a
    pixel unpaired), there are several rows, and the input window and the accumulators move by one
    constant stride per fused pixel over the whole image (the weights not at all), the accumulators an
NHWC buffer of those rows and columns (laid out by the fused pixel from then on). Returns the new loops
    and the index of the first reduction loop, or None (left as it was)."""
    if first_reduce < 3:
        return None
    rows, columns = sch.get(loops[first_reduce - 3]), sch.get(loops[first_reduce - 2])
    if not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0
               for loop in (rows, columns)):
        return None
    if int(columns.extent) % DUAL_MAC_PIXELS == 0 or int(rows.extent) < 2 or not rows.body.same_as(columns):
        return None
    realize = sch.get(loops[-1]).body
    reduction = mac_reduction(realize.block) if isinstance(realize, s_tir.SBlockRealize) else None
    if reduction is None:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = AccessOffsets(bindings, [rows.loop_var, columns.loop_var])
    extents = (int(rows.extent), int(columns.extent))
    try:
        even = all(_even_along_pixels(offsets, access, extents) for access in (reduction.data, reduction.store))
        still = offsets.step(reduction.weight, 0) == 0 and offsets.step(reduction.weight, 1) == 0
    except KeyError:
        return None  # an index form we do not evaluate: keep the rows
    shape = [int(extent) if isinstance(extent, tirx.IntImm) else None for extent in reduction.store.buffer.shape]
    if not even or not still or len(shape) != 4 or tuple(shape[1:3]) != extents:
        return None
    # The accumulators by the fused pixel too: a pair's second pixel then lies one pixel after the first
    # (indexed by row and column, the pair's region spans two rows, and so would its scratch buffer).
    sch.transform_layout(block, ("write", 0), lambda n, row, column, channel: (n, row * extents[1] + column, channel))
    sch.fuse(loops[first_reduce - 3], loops[first_reduce - 2])
    return sch.get_loops(block), first_reduce - 1


def _even_along_pixels(offsets: AccessOffsets, access, extents: tuple[int, int]) -> bool:
    """Whether ``access`` at every (row, column) of ``extents`` lies at its origin plus the fused pixel
    index times its step along the columns (KeyError: an index form we do not evaluate)."""
    origin = offsets.offset(access, [0, 0])
    stride = offsets.step(access, 1)
    return all(offsets.offset(access, [row, column]) == origin + (row * extents[1] + column) * stride
               for row, column in itertools.product(range(extents[0]), range(extents[1])))
