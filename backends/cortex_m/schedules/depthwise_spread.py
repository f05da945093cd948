"""On DSP cores, a depthwise reduction of a depth multiplier above 1 tiled to four output channels as one call of the
depthwise spread helper (``backends.cortex_m.helpers.depthwise_spread_c``).

With a multiplier m, output channel o reads input channel o // m: a tile of four output channels (from a multiple
of 4) reads one input channel per tap where m is a multiple of 4, two (each read by two output channels) where m is
2, and four consecutive ones only where m is 1 (``depthwise_mac``'s helper). The other two forms kept the scalar
loop nest (the layer sweep's 7x7 depthwise of multiplier 8 on 12x12x3: 6.4 instructions per MAC on cortex-m4f).
``spread_replacement`` gives the call of ``<prefix>_depthwise_spread_s8x4m4`` / ``_m2`` (one out-of-line copy each
per bundle, for the interior's windows and a padded border's clipped ones; ``_inline_`` for a window of up to
SPREAD_INLINE_TAPS taps, where the copy's call costs more than it saves) where the loops' loads are of that form
and the window has more than one tap (a border kept as a loop over taps under position tests calls nothing per tap:
measured on the layer sweep's 7x7 kernel of multiplier 8 on cortex-m4f, a call per tap, inlined, ran 30
instructions a tap where the scalar loop ran 27; out of line, a window's call runs 10 a tap): the weights four
consecutive channels a tap, the inputs of the tile's channels at the offsets (0, 0, 0, 0) or (0, 0, 1, 1) from
its first, at every tile (checked for the outer loop variables at every value up to SPREAD_CHECKED_TILES, so an
index such as o // 6 that gives one input to some tiles and two to others is refused), and the window steps by
constant strides. Each channel's sum is added in the same order: bit-exact.
"""

from __future__ import annotations

import functools
from typing import Optional

from tvm import s_tir, tirx

from backends.cortex_m.helpers import DEPTHWISE_SPREAD_HELPERS
from backends.cortex_m.helpers.depthwise_spread_c import SPREAD_INPUTS, SPREAD_TAGS, depthwise_spread_helper_name
from backends.cortex_m.schedules.depthwise_mac import mac_helper_replacement
from backends.cortex_m.schedules.dual_mac import (DUAL_MAC_CHANNELS, AccessOffsets, MacReduction, channel_tile,
                                                helper_call_block, mac_reduction)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

SPREAD_LANES = {(0, 0, 0, 0): 1, (0, 0, 1, 1): 2}
"""The inputs' offsets of a tile's four channels from its first, and the inputs a tap that gives (SPREAD_INPUTS)."""
SPREAD_CHECKED_TILES = 256
"""The values of each outer loop variable at which a call's input offsets are checked to have the same form (a
multiplier m that is not a multiple of 4 gives another form by the tile m // 4 + 1 at the latest)."""
SPREAD_OPS = {inputs: f"tvm_ext.depthwise_spread_s8x4{SPREAD_TAGS[inputs]}" for inputs in SPREAD_INPUTS}
"""The helper's op per inputs a tap (its out-of-line copy)."""
SPREAD_INLINE_OPS = {inputs: f"tvm_ext.depthwise_spread_inline_s8x4{SPREAD_TAGS[inputs]}" for inputs in SPREAD_INPUTS}
"""The same sums inlined, per inputs a tap."""
SPREAD_INLINE_TAPS = 9
"""The most taps of a window whose call is inlined (measured on cortex-m4f: ``depthwise_spread.h.in``'s comment)."""


def spread_access(inputs: int) -> HelperAccess:
    """The call's (acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols) elements: acc[c]
    for c < 4, x[r * x_row_stride + k * x_col_stride + i] for i < ``inputs``, w[r * w_row_stride + k * w_col_stride
    + c], for r < rows, k < cols."""
    lanes = (Axis(inputs, 1),) if inputs > 1 else ()
    return HelperAccess((
        PointerAccess(0, (Axis(DUAL_MAC_CHANNELS, 1),)),
        PointerAccess(1, (Axis(Arg(7), Arg(3)), Axis(Arg(8), Arg(4)), *lanes)),
        PointerAccess(2, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(DUAL_MAC_CHANNELS, 1))),
    ))


for _inputs in SPREAD_INPUTS:
    for _inlined, _ops in ((False, SPREAD_OPS), (True, SPREAD_INLINE_OPS)):
        register_helper_call(_ops[_inputs], DEPTHWISE_SPREAD_HELPERS,
                             functools.partial(depthwise_spread_helper_name, inputs=_inputs, inlined=_inlined),
                             spread_access(_inputs))


def spread_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The spread helper's call block computing what ``loops`` (up to two window loops from 0, then the loop of four
    output channels) around ``realize`` compute, or None where the loads do not have the module docstring's form
    or the window is one tap."""
    reduction = mac_reduction(realize.block)
    window, channel = loops[:-1], loops[-1]
    if reduction is None or len(window) > 2 or not all(
            isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops) \
            or int(channel.extent) != DUAL_MAC_CHANNELS:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    try:
        form = spread_sizes(reduction, AccessOffsets(bindings, inner), [int(loop.extent) for loop in window])
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    if form is None or form[1][4] * form[1][5] < 2:
        return None
    inputs, sizes = form
    ops = SPREAD_INLINE_OPS if sizes[4] * sizes[5] <= SPREAD_INLINE_TAPS else SPREAD_OPS
    return helper_call_block(ops[inputs], reduction, bindings, inner, sizes,
                             channel_tile(reduction, DUAL_MAC_CHANNELS))


def _lanes(access, offsets: AccessOffsets, window: list[int]) -> tuple[int, ...]:
    """The offsets of ``access`` at the four channels from its offset at the first, the window loops at ``window``."""
    first = offsets.offset(access, [*window, 0])
    return tuple(offsets.offset(access, [*window, lane]) - first for lane in range(DUAL_MAC_CHANNELS))


def spread_sizes(reduction: MacReduction, offsets: AccessOffsets,
                 extents: list[int]) -> Optional[tuple[int, list[int]]]:
    """(the inputs a tap, [x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols]) when the window (the
    loops of ``extents``) steps by constant strides, the weights and accumulators are four consecutive channels and
    the inputs of the tile's channels one of SPREAD_LANES' forms, the same at the window's corner and for every
    outer loop variable's values up to SPREAD_CHECKED_TILES (the others at 0); else None."""
    data, weight, store = reduction.data, reduction.weight, reduction.store
    channel = len(extents)
    if offsets.step(weight, channel) != 1 or offsets.step(store, channel) != 1:
        return None
    if any(offsets.step(store, axis) != 0 for axis in range(channel)):
        return None
    origin, corner = [0] * channel, [extent - 1 for extent in extents]
    lanes = _lanes(data, offsets, origin)
    inputs = SPREAD_LANES.get(lanes)
    if inputs is None or _lanes(data, offsets, corner) != lanes:
        return None
    for var in list(offsets.outer):
        for value in range(1, SPREAD_CHECKED_TILES):
            offsets.outer[var] = value
            if _lanes(data, offsets, origin) != lanes:
                offsets.outer[var] = 0
                return None
        offsets.outer[var] = 0
    steps = [(offsets.step(data, axis), offsets.step(weight, axis)) for axis in range(channel)]
    (x_row, w_row), rows = ((0, 0), 1) if channel < 2 else (steps[0], extents[0])
    (x_col, w_col), cols = ((0, 0), 1) if channel < 1 else (steps[-1], extents[-1])
    # Linearity over the whole window (a floordiv/floormod index could step evenly at the origin only).
    for access, row, col in ((data, x_row, x_col), (weight, w_row, w_col)):
        expected = offsets.offset(access, [*origin, 0]) + (rows - 1) * row + (cols - 1) * col
        if offsets.offset(access, [*corner, 0]) != expected:
            return None
    return inputs, [x_row, x_col, w_row, w_col, rows, cols]


def dsp_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The DSP cores' MAC helpers' call block for a kernel's reduction (``depthwise_mac.mac_helper_replacement``), else
    the spread helper's (``spread_replacement``); None where none fits. (Helium's falls back to the first only: a
    Helium bundle defines no DSP-only library.)"""
    return mac_helper_replacement(realize, loops) or spread_replacement(realize, loops)
