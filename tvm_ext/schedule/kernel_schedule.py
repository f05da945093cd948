"""Schedules for fused kernels: compute everything in place, with no kernel-internal buffers left where
TVM's scheduling can avoid them.

Why: on a microcontroller every intermediate buffer inside a kernel costs arena bytes (a padded copy of a
conv input, a bias-add result, a dequantized weight). Inlining producers into consumers removes them;
what remains becomes a scratch buffer that the memory planner places in the arena.
"""

from __future__ import annotations

import math
from typing import Optional

import tvm_ffi
from tvm import ir, s_tir, tirx
from tvm.ir.expr import Expr as PrimExpr

from backends.backend import MacSchedules
from tvm_ext.schedule.border_split import split_border
from tvm_ext.schedule.flat_elements import flatten_elements
from tvm_ext.schedule.float_schedule import accumulates_float, tile_pixels
from tvm_ext.tir.kernel_names import with_window_recorded
from tvm_ext.tir.tir_walk import buffer_loads, walk


def _written(sch: s_tir.Schedule, block) -> set:
    """The buffers `block` writes."""
    return {region.source for region in sch.get(block).writes}


def _read_repeatedly(sch: s_tir.Schedule, producer) -> bool:
    """Whether a consumer of `producer` loads its buffer at more than one place: inlining would copy the
    producer's whole expression into each (the requantization arithmetic then grows without bound)."""
    written = _written(sch, producer)
    for consumer in sch.get_consumers(producer):
        loads = buffer_loads(sch.get(consumer).body)
        if any(loads[buffer] > 1 for buffer in written):
            return True
    return False


def _broadcast_by(sch: s_tir.Schedule, producer, consumer) -> bool:
    """Whether `consumer` iterates more times than `producer` writes elements: it reads an element of the
    producer's result at several of its iterations (a per-row value along its row; a convolution's weight,
    dequantized, at each output pixel). A reduction only where it reads no window of the producer (its input,
    which border_split and the MAC helpers read inlined) and a loop computes the producer once per element
    without computing all of it at once (_slice_loop): else a copy of the whole result would cost more arena
    than its arithmetic repeated in the reduction costs time."""
    iterations = math.prod(int(iv.dom.extent) for iv in sch.get(consumer).iter_vars)
    if iterations <= _elements_written(sch, producer) or _reads_each_element_once(sch, producer, consumer):
        return False
    if not _is_reduction(sch, consumer):
        return True
    return not _reads_window(sch, producer, consumer) and _slice_loop(sch, producer, consumer) is not None


def _reads_each_element_once(sch: s_tir.Schedule, producer, consumer) -> bool:
    """Whether every load `consumer` makes of `producer`'s buffers indexes each dimension by one of its own
    iteration variables plus a constant, a different variable per dimension, and leaves out none that iterates
    more than once: no two of its iterations read the same element. A CONCATENATION or a PAD iterates more
    times than each producer writes elements but reads each element once, in its branch of a select: inlined
    there, the producer's arithmetic is not repeated (computed at the consumer instead, each producer's
    one-element buffer is written under a condition GCC's -Wmaybe-uninitialized cannot match to the read's)."""
    block = sch.get(consumer)
    iterating = {iv.var for iv in block.iter_vars if int(iv.dom.extent) > 1}
    written = _written(sch, producer)
    loads = [node for node in walk(block.body) if isinstance(node, ir.TensorLoad) and node.source in written]
    for load in loads:
        variables = [_offset_variable(index) for index in load.indices]
        indexed = [var for var in variables if var is not None]
        if len(indexed) != len(variables) or len(set(indexed)) != len(indexed) or not iterating <= set(indexed):
            return False
    return bool(loads)


def _offset_variable(index: PrimExpr) -> Optional[tirx.Var]:
    """The variable of an index ``v``, ``v + c`` or ``v - c`` (``c`` a constant), else None."""
    if isinstance(index, (tirx.Add, tirx.Sub)) and isinstance(index.b, tirx.IntImm):
        index = index.a
    return index if isinstance(index, tirx.Var) else None


def _reads_window(sch: s_tir.Schedule, producer, consumer) -> bool:
    """Whether reduction `consumer` reads `producer`'s result at an index that combines one of its
    data-parallel variables with one of its reduced ones (``yy + ry``: a window of a convolution or a pool)."""
    block = sch.get(consumer)
    kinds = {iv.var: int(iv.iter_type) for iv in block.iter_vars}
    written = _written(sch, producer)
    for node in walk(block.body):
        if isinstance(node, ir.TensorLoad) and node.source in written:
            for index in node.indices:
                read = {kinds[var] for var in _vars(index) if var in kinds}
                if {int(tirx.IterVar.DataPar), int(tirx.IterVar.CommReduce)} <= read:
                    return True
    return False


def _slice_loop(sch: s_tir.Schedule, producer, consumer):
    """The loop at which `producer` is computed once per element for reduction `consumer` (_last_loop_indexing)
    when a loop of more than one iteration encloses it or is it (a slice of the result: one output channel's
    weights), else None."""
    last = _last_loop_indexing(sch, producer, consumer)
    if last is None:
        return None
    for loop in sch.get_loops(consumer):
        extent = sch.get(loop).extent
        if not (isinstance(extent, tirx.IntImm) and int(extent) == 1):
            return last
        if sch.get(loop).same_as(sch.get(last)):
            return None
    return None


def _computes(value: PrimExpr) -> bool:
    """Whether `value` does arithmetic: more than a constant or a load at a position its indices compute
    from loop variables alone (a copy, a reshape), cast or not. A table lookup (a load at a position read
    from data) computes."""
    if isinstance(value, tirx.Cast):
        return _computes(value.value)
    if isinstance(value, ir.TensorLoad):
        return any(isinstance(node, ir.TensorLoad) for index in value.indices for node in walk(index))
    return not isinstance(value, (tirx.IntImm, tirx.FloatImm))


def _recomputed_when_inlined(sch: s_tir.Schedule, producer) -> bool:
    """Whether inlining `producer` would repeat its arithmetic: a consumer broadcasts it (_broadcast_by) and
    it computes (a requantized add, a table lookup; not a copy, whose inlined load costs nothing more)."""
    body = sch.get(producer).body
    computes = not isinstance(body, tirx.BufferStore) or _computes(body.value)
    return computes and any(_broadcast_by(sch, producer, consumer) for consumer in sch.get_consumers(producer))


def _vars(expr: PrimExpr) -> set:
    """The variables in `expr`, itself included."""
    return {node for node in walk(expr) if isinstance(node, ir.Var)}


def _last_loop_indexing(sch: s_tir.Schedule, producer, consumer):
    """The innermost of the consumer's outer loops that each index the producer's result (or iterate once),
    where the producer computed inside it is computed once per element it writes; None when the outermost
    loop already broadcasts it (then it is computed apart, before the consumer)."""
    realize = next(node for node in walk(sch.mod["main"].body)
                   if isinstance(node, s_tir.SBlockRealize) and node.block.same_as(sch.get(consumer)))
    bindings = dict(zip((iv.var for iv in realize.block.iter_vars), realize.iter_values))
    written = _written(sch, producer)
    indexing = {loop_var for node in walk(realize.block.body) if isinstance(node, ir.TensorLoad)
                and node.source in written for index in node.indices for var in _vars(index)
                if var in bindings for loop_var in _vars(bindings[var])}
    last = None
    for loop in sch.get_loops(consumer):
        extent = sch.get(loop).extent
        if sch.get(loop).loop_var not in indexing and not (isinstance(extent, tirx.IntImm) and int(extent) == 1):
            break
        last = loop
    return last


def _compute_at_consumers(sch: s_tir.Schedule, root) -> None:
    """Compute each producer its consumer reads repeatedly inside the consumer's innermost loop: one
    element at a time, so its buffer shrinks to a few bytes instead of a whole tensor. A producer the
    consumer broadcasts goes only as deep as it is computed once per element (_last_loop_indexing: a per-row
    value at the row loop). Not a reduction whose consumer reads one element of it per output (an epilogue
    such as LEAKY_RELU's, which tests the requantized value and requantizes it again): inline_intermediates
    places that consumer beside the reduction's tiled accumulators, which the reduction computed inside the
    consumer would prevent."""
    for block in reversed(sch.get_child_blocks(root)):
        consumers = sch.get_consumers(block)
        loops = sch.get_loops(consumers[0]) if len(consumers) == 1 else []
        if not loops:  # no single consumer, or a scalar one: the producer stays apart
            continue
        if _is_reduction(sch, block) and _reads_one_element(sch, block, consumers[0]):
            continue
        if _broadcast_by(sch, block, consumers[0]):
            loop = _last_loop_indexing(sch, block, consumers[0])
        elif _read_repeatedly(sch, block):
            loop = loops[-1]
        else:
            continue
        if loop is None:
            continue
        try:
            sch.compute_at(block, loop)
        except s_tir.ScheduleError:
            continue


def _is_reduction(sch: s_tir.Schedule, block) -> bool:
    """Whether `block` reduces over one of its iteration variables (a MAC accumulation, a pool's sum)."""
    return any(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(block).iter_vars)


def _reads_one_element(sch: s_tir.Schedule, producer, consumer) -> bool:
    """Whether every load `consumer` makes of the buffers `producer` writes reads the same element (the same
    index expressions): its repeated loads are of one value, not a window of the producer's."""
    written = _written(sch, producer)
    loads = [node for node in walk(sch.get(consumer).body) if isinstance(node, ir.TensorLoad)
             and node.source in written]
    return all(tvm_ffi.structural_equal(list(load.indices), list(loads[0].indices)) for load in loads)


def _writes_beyond_its_producers(sch: s_tir.Schedule, consumer) -> bool:
    """Whether `consumer` writes more elements than one of its producers: a PAD of the producer's result. TVM's
    reverse_compute_at accepts a PAD whose padding is only after the data (its index into the producer is the
    identity) and computes it inside the producer's loops, at the producer's elements alone: the padding would
    never be written."""
    written = _elements_written(sch, consumer)
    return any(written > _elements_written(sch, producer) for producer in sch.get_producers(consumer))


def _elements_written(sch: s_tir.Schedule, block) -> int:
    """The elements of the buffers `block` writes (whole buffers: their shapes)."""
    return sum(math.prod(int(extent) for extent in region.source.shape) for region in sch.get(block).writes)


def _inline_until_done(sch: s_tir.Schedule, root, inline) -> None:
    """Apply `inline` (compute_inline or reverse_compute_inline) to every child block it accepts, round after
    round over the blocks in order, until a round inlines none.

    A block refused when nothing has been inlined since its last attempt is not asked again: the schedule is
    the same as then (a refused primitive leaves it unchanged, and the checks below read only the schedule), so
    the answer would be too; that skips the last round's repeated refusals. Blocks are known by name, so this
    applies only while the names are unique."""
    refused: dict[str, int] = {}  # block name -> inlines done when it was last refused
    inlined = 0
    changed = True
    while changed:
        changed = False
        blocks = sch.get_child_blocks(root)
        names = [sch.get(block).name_hint for block in blocks]
        unique = len(set(names)) == len(names)
        for block, name in zip(blocks, names):
            if unique and refused.get(name) == inlined:
                continue
            if _refuses_inlining(sch, block, inline):
                refused[name] = inlined
                continue
            try:
                inline(block)
            except s_tir.ScheduleError:
                refused[name] = inlined
                continue
            inlined += 1
            changed = True


def _refuses_inlining(sch: s_tir.Schedule, block, inline) -> bool:
    """Whether `block` is kept out of `inline` although TVM would accept it (see the checks' docstrings)."""
    if inline == sch.compute_inline:
        return _read_repeatedly(sch, block) or _recomputed_when_inlined(sch, block)
    # A consumer broadcasting its producer: the producer's loops cannot write all of it.
    return inline == sch.reverse_compute_inline and _writes_beyond_its_producers(sch, block)


def _reduction_blocks(sch: s_tir.Schedule, root) -> list:
    return [block for block in sch.get_child_blocks(root) if _is_reduction(sch, block)]


def inline_intermediates(func: tirx.PrimFunc, channel_tile: int = 1, mac: Optional[MacSchedules] = None,
                         float_tiles: tuple[int, ...] = ()) -> tirx.PrimFunc:
    """Inline producers and epilogues; give each reduction a one-element accumulator, or ``channel_tile``
    accumulators for as many output channels where that count divides the channels (see _tile_channels);
    a float reduction takes the first of ``float_tiles`` (tvm_ext.schedule.float_schedule) that divides them instead,
    and without padding also accumulates neighbouring pixels (float_schedule.tile_pixels);
    with a backend's MAC schedules ``mac`` (``backends.backend.MacSchedules``), an integer reduction first tries
    the tiles ``mac.channel_tiles`` gives it (none where ``mac.keeps_scalar`` says so), and a tiled integer
    reduction a MAC helper computes becomes its call;
    a padded integer convolution's border is split from its interior (tvm_ext.schedule.border_split);
    with ``mac.flat_elements``, an elementwise block's loop nest is one loop (tvm_ext.schedule.flat_elements);
    last, ``mac.epilogue_calls`` turns requantization epilogues into its helpers' calls where it has any.

    Contract: the result computes exactly the same values in the same order of floating-point operations
    per output element (only where values are stored changes).
    """
    sch = s_tir.Schedule(func)
    try:
        root = sch.get_sblock("root")
    except s_tir.ScheduleError:
        # One TE extern stage (e.g. SVDF's state update) is the whole function: nothing to move; with `mac`
        # the helpers compute the loops written in their forms (backends.cortex_m.schedules.extern_helpers).
        return mac.extern_calls(func) if mac is not None else func
    if any(not sch.get(block).iter_vars for block in sch.get_child_blocks(root)):
        # An opaque block (a TE extern stage, e.g. the int8 softmax) hides its reads and writes from the
        # schedule's dependence analysis: moving stages around it could reorder them. Leave it as written.
        return func
    _inline_until_done(sch, root, sch.compute_inline)
    _inline_until_done(sch, root, sch.reverse_compute_inline)
    _compute_at_consumers(sch, root)
    if getattr(mac, "flat_elements", False):
        flatten_elements(sch, root)
    inlined = sch.mod["main"]  # its window is still read by its reduction (see with_window_recorded)
    odd_rows: list[tuple[str, int]] = []  # (update block, first reduction loop) to pair after scheduling
    for block in _reduction_blocks(sch, root):
        loops = sch.get_loops(block)
        iter_types = [iv.iter_type for iv in sch.get(block).iter_vars]
        first_reduce = iter_types.index(tirx.IterVar.CommReduce)
        if first_reduce >= len(loops):
            continue
        if mac is not None:  # odd rows of a matrix multiply: pairs across them
            loops, first_reduce = mac.flatten_odd_pixel_rows(sch, block, loops, first_reduce) or (loops, first_reduce)
        consumers = sch.get_consumers(block)
        float_tiled = bool(float_tiles) and accumulates_float(sch, block)
        own_tiles = mac.channel_tiles(sch, block) if mac is not None and not float_tiled else ()
        scalar = not float_tiled and getattr(mac, "keeps_scalar", None) is not None \
            and mac.keeps_scalar(sch, block, loops, first_reduce)
        tiles = float_tiles if float_tiled else () if scalar else (*own_tiles, channel_tile)
        whole = getattr(mac, "whole_channel_tile", False) and not float_tiled
        tiled = next((t for t in (_tile_channels(sch, block, loops, first_reduce, tile, whole or tile in own_tiles)
                                  for tile in tiles)
                      if t is not None), None)
        pairs = mac is not None and tiled is not None and not float_tiled and mac.pays_two_pixels(sch, block, *tiled)
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
        elif mac is not None and tiled is not None:
            mac.helper_call(sch, block, loops, first_reduce)
    scheduled = sch.mod["main"]
    for name, first_reduce in odd_rows:  # only with `mac`: the pairs are its helpers'
        scheduled = mac.pair_odd_pixel_row(scheduled, name, first_reduce)
    split = split_border(scheduled, mac)
    return with_window_recorded(inlined, mac.epilogue_calls(split) if mac is not None else split)


def _tile_channels(sch: s_tir.Schedule, block, loops, first_reduce: int, tile: int, whole: bool = False):
    """Accumulate ``tile`` output channels (the loop just outside the reduction) at once: the channel loop
    is split, its inner part moved below the reduction loops and unrolled, so each input value loaded in
    the reduction feeds ``tile`` multiply-accumulates held in registers. Returns the new loops and the
    index of the first reduction loop, or None (tile 1, or a channel count it does not divide, or equals
    unless ``whole``: a backend's own tile, ``MacSchedules.channel_tiles``, may hold every channel, and so may
    the profile's tile where the backend's MAC schedules say ``whole_channel_tile``).
    The order of the additions into each output element is unchanged."""
    if tile <= 1 or first_reduce == 0:
        return None
    channels = sch.get(loops[first_reduce - 1]).extent
    if not isinstance(channels, tirx.IntImm) or int(channels) % tile or (int(channels) == tile and not whole):
        return None
    if not all(isinstance(sch.get(loop).body, tirx.For) for loop in loops[first_reduce - 1:-1]):
        return None  # another statement sits between the loops: they cannot be reordered
    outer, inner = sch.split(loops[first_reduce - 1], [None, tile])
    reductions = loops[first_reduce:]
    sch.reorder(outer, *reductions, inner)
    sch.unroll(inner)
    return sch.get_loops(block), first_reduce

