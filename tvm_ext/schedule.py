"""Schedules for fused kernels: compute everything in place, with no kernel-internal buffers left where
TVM's scheduling can avoid them.

Why: on a microcontroller every intermediate buffer inside a kernel costs arena bytes (a padded copy of a
conv input, a bias-add result, a dequantized weight). Inlining producers into consumers removes them;
what remains becomes a scratch buffer that the memory planner places in the arena.
"""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx

from target.profile import Profile
from tvm_ext.border_split import split_border
from tvm_ext.depthwise_mac import mac_helper_call
from tvm_ext.extern_helpers import extern_helper_calls
from tvm_ext.flat_pixels import flatten_odd_pixel_rows
from tvm_ext.float_schedule import accumulates_float, tile_pixels
from tvm_ext.kernel_names import with_window_recorded
from tvm_ext.pixel_pairs import pair_odd_pixel_row
from tvm_ext.tir_walk import buffer_loads, walk


def output_channel_tile(profile: Profile) -> int:
    """Output channels a MAC kernel accumulates at once on ``profile``'s core: 2 on Armv6-M (eight low
    registers), 4 elsewhere (four accumulators, the two pointers and the loop counter stay in registers)."""
    return 2 if profile.arch == "armv6-m" else 4


def uses_dual_mac(profile: Profile) -> bool:
    """Whether MAC kernels on ``profile``'s core call the SMLAD helper (``tvm_ext.dual_mac``): cores with the
    DSP extension (``simd = "dsp"``)."""
    return profile.simd == "dsp"


def _read_repeatedly(sch: s_tir.Schedule, producer) -> bool:
    """Whether a consumer of `producer` loads its buffer at more than one place: inlining would copy the
    producer's whole expression into each (the requantization arithmetic then grows without bound)."""
    written = [region.source for region in sch.get(producer).writes]
    for consumer in sch.get_consumers(producer):
        loads = buffer_loads(sch.get(consumer).body)
        if any(loads[buffer] > 1 for buffer in written):
            return True
    return False


def _compute_at_consumers(sch: s_tir.Schedule, root) -> None:
    """Compute each producer its consumer reads repeatedly inside the consumer's innermost loop: one
    element at a time, so its buffer shrinks to a few bytes instead of a whole tensor."""
    for block in reversed(sch.get_child_blocks(root)):
        consumers = sch.get_consumers(block)
        loops = sch.get_loops(consumers[0]) if len(consumers) == 1 else []
        if loops and _read_repeatedly(sch, block):  # a scalar consumer has no loop: the producer stays apart
            try:
                sch.compute_at(block, loops[-1])
            except s_tir.ScheduleError:
                continue


def _writes_beyond_its_producers(sch: s_tir.Schedule, consumer) -> bool:
    """Whether `consumer` writes more elements than one of its producers: a PAD of the producer's result. TVM's
    reverse_compute_at accepts a PAD whose padding is only after the data (its index into the producer is the
    identity) and computes it inside the producer's loops, at the producer's elements alone: the padding would
    never be written."""
    written = _elements_written(sch, consumer)
    return any(written > _elements_written(sch, producer) for producer in sch.get_producers(consumer))


def _elements_written(sch: s_tir.Schedule, block) -> int:
    """The elements of the buffers `block` writes (whole buffers: their shapes)."""
    total = 0
    for region in sch.get(block).writes:
        elements = 1
        for extent in region.source.shape:
            elements *= int(extent)
        total += elements
    return total


def _inline_all(sch: s_tir.Schedule, root, inline) -> bool:
    """Apply `inline` (compute_inline or reverse_compute_inline) to every child block it accepts."""
    changed = False
    for block in sch.get_child_blocks(root):
        if inline == sch.compute_inline and _read_repeatedly(sch, block):
            continue
        try:
            inline(block)
            changed = True
        except s_tir.ScheduleError:
            continue
    return changed


def _reduction_blocks(sch: s_tir.Schedule, root) -> list:
    blocks = []
    for block in sch.get_child_blocks(root):
        iter_types = [iv.iter_type for iv in sch.get(block).iter_vars]
        if tirx.IterVar.CommReduce in iter_types:
            blocks.append(block)
    return blocks


def inline_intermediates(func: tirx.PrimFunc, channel_tile: int = 1, dual_mac: bool = False,
                         float_tiles: tuple[int, ...] = ()) -> tirx.PrimFunc:
    """Inline producers and epilogues; give each reduction a one-element accumulator, or ``channel_tile``
    accumulators for as many output channels where that count divides the channels (see _tile_channels);
    a float reduction takes the first of ``float_tiles`` (tvm_ext.float_schedule) that divides them instead,
    and without padding also accumulates neighbouring pixels (float_schedule.tile_pixels);
    with ``dual_mac``, a tiled int8 reduction a MAC helper computes becomes its call (tvm_ext.depthwise_mac);
    a padded integer convolution's border is split from its interior (tvm_ext.border_split).

    Contract: the result computes exactly the same values in the same order of floating-point operations
    per output element (only where values are stored changes).
    """
    sch = s_tir.Schedule(func)
    try:
        root = sch.get_sblock("root")
    except s_tir.ScheduleError:
        # One TE extern stage (e.g. SVDF's state update) is the whole function: nothing to move; on DSP cores
        # the helpers compute the loops written in their forms (tvm_ext.extern_helpers).
        return extern_helper_calls(func) if dual_mac else func
    if any(not sch.get(block).iter_vars for block in sch.get_child_blocks(root)):
        # An opaque block (a TE extern stage, e.g. the int8 softmax) hides its reads and writes from the
        # schedule's dependence analysis: moving stages around it could reorder them. Leave it as written.
        return func
    while _inline_all(sch, root, sch.compute_inline):
        pass
    while _inline_all(sch, root, sch.reverse_compute_inline):
        pass
    _compute_at_consumers(sch, root)
    inlined = sch.mod["main"]  # its window is still read by its reduction (see with_window_recorded)
    odd_rows: list[tuple[str, int]] = []  # (update block, first reduction loop) to pair after scheduling
    for block in _reduction_blocks(sch, root):
        loops = sch.get_loops(block)
        iter_types = [iv.iter_type for iv in sch.get(block).iter_vars]
        first_reduce = iter_types.index(tirx.IterVar.CommReduce)
        if first_reduce >= len(loops):
            continue
        if dual_mac:  # odd rows of a matrix multiply: pairs across them (tvm_ext.flat_pixels)
            loops, first_reduce = flatten_odd_pixel_rows(sch, block, loops, first_reduce) or (loops, first_reduce)
        consumers = sch.get_consumers(block)
        float_tiled = bool(float_tiles) and accumulates_float(sch, block)
        tiles = float_tiles if float_tiled else (channel_tile,)
        tiled = next((t for t in (_tile_channels(sch, block, loops, first_reduce, tile) for tile in tiles)
                      if t is not None), None)
        pairs = dual_mac and tiled is not None and not float_tiled and _pays_two_pixels(sch, block, *tiled)
        pixel_tiled = tile_pixels(sch, block, *tiled) if tiled is not None and (float_tiled or pairs) else None
        odd_row = pairs and pixel_tiled is None  # a pixel count two does not divide: pairs after scheduling
        tiled = pixel_tiled or tiled
        if tiled is not None:
            loops, first_reduce = tiled
        sch.decompose_reduction(block, loops[first_reduce])
        if len(consumers) == 1 and first_reduce > 0 and not _writes_beyond_its_producers(sch, consumers[0]):
            try:
                sch.reverse_compute_at(consumers[0], loops[first_reduce - 1])
            except s_tir.ScheduleError:
                pass
        if odd_row:
            odd_rows.append((sch.get(block).name_hint, first_reduce))
        elif dual_mac and tiled is not None:
            mac_helper_call(sch, block, loops, first_reduce)
    scheduled = sch.mod["main"]
    for name, first_reduce in odd_rows:
        scheduled = pair_odd_pixel_row(scheduled, name, first_reduce)
    return with_window_recorded(inlined, split_border(scheduled, dual_mac))


TWO_PIXEL_MIN_REDUCTION = 32
"""The shortest reduction (MACs per output) a dual-MAC kernel tiles two pixels for: shorter ones (vww's 1x1
convolutions on 8 and 16 channels, measured under QEMU) lose more to the two-pixel helper's two passes than
its shared weights save."""


def _pays_two_pixels(sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> bool:
    """Whether the channel-tiled int8 reduction ``block`` (its loops ``loops``, the channel tile innermost)
    accumulates two pixels per dual-MAC call: a reduction of at least TWO_PIXEL_MIN_REDUCTION, int8 inputs (16x8's
    int16 ones have a one-pixel helper only, packager.dual_mac_c), and no padded input (an ``if_then_else`` tap:
    its pixels stay untiled, for the border split, tvm_ext.border_split, to find one test per pixel)."""
    length = 1
    for loop in loops[first_reduce:-1]:
        extent = sch.get(loop).extent
        if not isinstance(extent, tirx.IntImm):
            return False
        length *= int(extent)
    padded = any(isinstance(node, tvm.ir.Call) and node.op.name == "prim.if_then_else"
                 for node in walk(sch.get(block).body))
    int16_input = any(str(region.source.dtype) == "int16" for region in sch.get(block).reads)
    return length >= TWO_PIXEL_MIN_REDUCTION and not padded and not int16_input


def _tile_channels(sch: s_tir.Schedule, block, loops, first_reduce: int, tile: int):
    """Accumulate ``tile`` output channels (the loop just outside the reduction) at once: the channel loop
    is split, its inner part moved below the reduction loops and unrolled, so each input value loaded in
    the reduction feeds ``tile`` multiply-accumulates held in registers. Returns the new loops and the
    index of the first reduction loop, or None (tile 1, or a channel count it does not divide).
    The order of the additions into each output element is unchanged."""
    if tile <= 1 or first_reduce == 0:
        return None
    channels = sch.get(loops[first_reduce - 1]).extent
    if not isinstance(channels, tirx.IntImm) or int(channels) % tile or int(channels) == tile:
        return None
    if not all(isinstance(sch.get(loop).body, tirx.For) for loop in loops[first_reduce - 1:-1]):
        return None  # another statement sits between the loops: they cannot be reordered
    outer, inner = sch.split(loops[first_reduce - 1], [None, tile])
    reductions = loops[first_reduce:]
    sch.reorder(outer, *reductions, inner)
    sch.unroll(inner)
    return sch.get_loops(block), first_reduce

