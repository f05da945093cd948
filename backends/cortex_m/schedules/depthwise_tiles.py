"""On Helium cores, a depthwise pixel's loop over its 16-channel tiles as one call of a fused depthwise helper
(and on DSP cores, its four-channel tiles: see below).

After Helium's depthwise schedule (``helium_depthwise``) and the epilogue calls (``requantize_epilogue``), one
output pixel of an int8 DEPTHWISE_CONV_2D runs a loop over its channel tiles whose iteration zeroes the tile's
accumulators (16 or 8), adds the window's products (``<prefix>_depthwise_mac_s8x16``: an interior pixel; a padded
layer's border pixels take clipped windows and padding products under tests of the pixel's position that do
not depend on the tile) and requantizes them (``<prefix>_requantize_s8``). The accumulators go through memory
three times per tile: zeroed, loaded and stored by the MAC helper (VLD2/VST2), reloaded with the biases by the
epilogue (kws_ref_model's interior 16-channel tile: about 35 of its 278 instructions).
``depthwise_tiles_calls`` replaces such a loop (or a pixel's one tile, a layer of 8 or 16 channels) by
``if (the tests that lead to the interior) <prefix>_depthwise_tiles_s8 else <prefix>_depthwise_border_s8``
(``_b16``: int16 biases; ``backends.cortex_m.helpers.helium_c``'s ``helium_depthwise16.h.in``), whose tiles start
their four vector accumulators at the biases and requantize them from the registers. The interior's call is
inlined (its window straight-line taps). Every border case takes the one border call: its arguments say where
the image lies in the window (the clipped window's first tap, its place and size, chosen by the same position
tests as nested Selects), the helper copies those taps into a window of the padding's value on the stack and
runs the interior's tile on it, so the code does not grow with the border cases (inlining each case's taps
doubled kws_ref_model's code); a 3x3 window's border helper (``_depthwise_border3x3_s8``) is one out-of-line copy
for the bundle. Where the border does not fit (a window of more than WINDOW_TAPS taps, a padding of another
value), only the interior's: ``if (the tests) fused call; else the loop`` with that leaf made empty in the loop
(no pixel reaching the else branch runs it). kws_ref_model's 3x3 layers on cortex-m55: 155,040 -> 136,553
instructions each, code 6,432 -> 5,612 B (the outlined box helper and the border cases' taps gone). A 3x3
window's interior call is one out-of-line copy per bundle and bias type (``_depthwise_tiles3x3_s8``;
HELIUM_TILES.outlined) in the kernels the bundle's choice gives it (``shared_tiles``: the kernels whose inlined
code weighs more than the copy's calls cost, where the copy and those calls weigh less than their inlined
code; made from every kernel scheduled first with the helper inlined, ``form_uses``, and passed back into their
schedule as the record ``TileHelpers.shared``); so is a kx1 window's, called as one row of k taps
(``TileHelpers.column_as_row``) of the copy for one row of any taps (``_depthwise_tiles1xn_s8``, the taps' count
an argument, in a rolled loop: with steps of three taps and the one or two left, 868 B and 321,621 instructions below): str_ww_ref_model's 3x1, 5x1, 10x1 and 15x1 kernels (8 to 192 tile iterations) held
372-870 B each inlined, 50-84 B each and the 616 B copy out of line; on cortex-m55 code 4,692 -> 2,892 B
(cortex-m4f 3,952), 299,492 -> 319,193 instructions (0.734x -> 0.783x TFLM+CMSIS-NN), bit-exact; and so is a 5x5
window's (``_depthwise_tiles5x5_s8``: its rows a rolled loop, a row's five taps written out):
efficientnet_lite_w030_112_int8's five 5x5 kernels held 3,468-4,216 B each inlined; on cortex-m55 code 37,588 ->
26,320 B, 14,785,965 -> 14,701,240 instructions (inlined, a tile's 25 taps spill).

On DSP cores (``DSP_TILES``) the same replacement takes a pixel's loop over its four-channel tiles
(``depthwise_mac``'s window call, ``requantize_small_c``'s epilogue): the interior's call is
``<prefix>_depthwise_tiles_s8x4`` (``_b16``), whose tiles start their four sums at the biases in registers
(``backends.cortex_m.helpers.depthwise_mac_c``'s ``depthwise_tiles.h.in``), inlined, or for a 3x3 or 5x5 window
of a kernel of fewer than DSP_INLINE_TILES tile iterations one out-of-line copy per bundle (a kx1 window called as
one row of k taps, ``TileHelpers.column_as_row``). mobilenet_v2_050_64_int8 on cortex-m4f: 18,962,828 ->
18,813,205 instructions, code 34,064 -> 33,592 B; efficientnet_lite_w030_112_int8 42,232,976 -> 40,787,534,
47,060 -> 45,764 B. Its border pixels take the DSP border helper (``<prefix>_depthwise_border_s8x4``, ``_b16``; a
3x3 or 5x5 window's one out-of-line copy per bundle, ``border3x3`` / ``border5x5``) as Helium's do, for windows of
up to DSP_WINDOW_TAPS taps: each tap read through a pointer into the image or to the padding, where the loop ran
the box helper and the padding products per case, tile and channel (the padding products are calls of
DSP_PAD_OP, ``dsp_replacement``, which the border call takes in; ``tvm_ext.schedule.border_split`` cuts a border
into rectangles however many where the window has at most that many taps, the MacSchedules'
``collapses_border``). A kernel without interior pixels (every window overhangs: a 5x5 window over 4x4
pixels) calls the border helper at every pixel, its window read from the weights' buffer (``_Tiles.window``).
The test leading to the interior goes through ``<prefix>_depthwise_likely`` (DSP_LIKELY_OP). Measured on
cortex-m4f (instructions, code B), before / after: efficientnet_lite_w030_112_int8 39,983,772, 44,712 /
37,675,621, 39,892; mobilenet_v2_050_64_int8 18,493,659, 33,388 / 18,176,934, 25,424.

A loop qualifies when (proved by TVM's integer analysis over the enclosing loops' ranges) each iteration is,
in this order: stores of zero into exactly the accumulators the epilogue reads, the window and padding calls
on them (under position tests not reading the tile's variable, each with an else branch), one requantization
(int32 or int16 biases) of those channels; the inputs, weights (the padding boxes' too), outputs, biases,
multipliers and shifts all move one tile's channels per tile, and each call's sizes are constants. A border
leaf fits when its clipped window and padding boxes (of one value, an int8) are disjoint boxes of the
interior's window at its strides that cover it (or the padding's value is 0). The accumulators are written
and read only inside one iteration, so leaving them out changes no output: the same integer sums (acc + bias,
and the padding's value times a tap's weight as the product of the copied value with it, wrap as int32 either
way), bit-exact.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.bias_forms import BIAS_TYPES, bias_form, by_bias
from backends.cortex_m.helpers.depthwise_mac_c import dsp_depthwise_pad_helper_name, dsp_depthwise_tiles_helper_name
from backends.cortex_m.helpers.helium_c import helium_depthwise_tiles_helper_name
from backends.code_price import INSTRUCTIONS_PER_BYTE, code_gain
from backends.cortex_m.schedules.conv_tiles import (LoopOffsets, _region, at_first_tile, call_of, flat_offset,
                                                   op_executions, pointee, tile_loop_stmts, zeroed_stores)
from backends.cortex_m.schedules.depthwise_mac import (DEPTHWISE_BOX_W16_OP, DEPTHWISE_MAC_OP, DEPTHWISE_MAC_W16_OP,
                                                       mac_helper_replacement)
from backends.cortex_m.schedules.depthwise_spread import spread_replacement
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_CHANNELS, _whole, register_mac_helper
from backends.cortex_m.schedules.helium_depthwise import (BOX_OP, DEPTHWISE_TILES, MAC_OP, PAD_ACCESS, PAD_OP,
                                                         padding_replacement)
from backends.cortex_m.schedules.requantize_epilogue import REQUANTIZE_S8_OPS, REQUANTIZE_SMALL_OPS, stored_channels
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess, register_truth_hint
from tvm_ext.tir.tir_walk import walk, with_root_loops_replaced

DEPTHWISE_TILES_OPS = by_bias("tvm_ext.depthwise_tiles_s8")
"""The fused helper's op per bias type (the epilogue's, ``requantize_epilogue.REQUANTIZE_S8_OPS``)."""
# (out, x, w, bias, multiplier, shift, zero_point, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows,
# cols, channels): out and the epilogue's constants `channels` elements; x[r * x_row_stride + k * x_col_stride + c]
# and w[r * w_row_stride + k * w_col_stride + c] for r < rows, k < cols, c < channels.
DEPTHWISE_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(13), 1),)),
    PointerAccess(1, (Axis(Arg(11), Arg(7)), Axis(Arg(12), Arg(8)), Axis(Arg(13), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(9)), Axis(Arg(12), Arg(10)), Axis(Arg(13), 1))),
    *(PointerAccess(pointer, (Axis(Arg(13), 1),)) for pointer in (3, 4, 5)),
))
SHARED_BORDER = " shared"
"""The suffix of a border form whose out-of-line copy runs the interior's copy of the same window on the copied
window (``helium_depthwise16.h.in``'s ``_depthwise_border3x3_shared_s8``: ``TileHelpers.shared_borders``)."""
BORDER_OPS = {(bias, form): bias_form("tvm_ext.depthwise_border" + {"any": "", "3x3": "3x3", "5x5": "5x5",
                                                                     "3x3" + SHARED_BORDER: "3x3_shared"}[form] + "_s8",
                                      bias)
              for bias in BIAS_TYPES for form in ("any", "3x3", "5x5", "3x3" + SHARED_BORDER)}
"""A border pixel's fused helper per bias type and form ("3x3", "5x5": a 3x3 or 5x5 window's, one out-of-line copy per
bundle holding its own tile, the 5x5's window of more than WINDOW_TAPS taps on the stack; "3x3 shared": the same
running the interior's copy, ``_depthwise_tiles3x3_s8``, on its copied
window, where the bundle's choice gives it the kernels, ``TileHelpers.shared_borders``; "any": any other window,
inlined): the tiles' arguments, then where the image lies in the window."""
# (out, x, w, bias, multiplier, shift, zero_point, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows,
# cols, top, left, inside_rows, inside_cols, value, channels): as the tiles' call, w the whole window's weights, x
# its first tap inside the image (top, left), of inside_rows x inside_cols taps there: x's record (each a constant
# or a choice of constants, which stream_order reads case by case; the whole window from that tap was a row and a
# column past the image's last at its last pixel: ds_cnn_w44_49x10 on cortex-m4f, a depthwise kernel run backwards
# 704 B above its input where 440 B do).
BORDER_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(Arg(18), 1),)),
    PointerAccess(1, (Axis(Arg(15), Arg(7)), Axis(Arg(16), Arg(8)), Axis(Arg(18), 1))),
    PointerAccess(2, (Axis(Arg(11), Arg(9)), Axis(Arg(12), Arg(10)), Axis(Arg(18), 1))),
    *(PointerAccess(pointer, (Axis(Arg(18), 1),)) for pointer in (3, 4, 5)),
))
WINDOW_TAPS = 9
"""The most taps of a window whose border pixels take Helium's border helper (its stack copy of one tile's window:
``<PREFIX>_DEPTHWISE16_WINDOW_TAPS`` in ``helium_depthwise16.h.in``); a wider window's border keeps the loop."""
DSP_WINDOW_TAPS = 25
"""The same for the DSP cores' border helper (``<PREFIX>_DEPTHWISE_WINDOW_TAPS`` in ``depthwise_tiles.h.in``: a
word a tap)."""
DSP_BORDER_OPS = {(bias, form): bias_form(f"tvm_ext.depthwise_border{'' if form == 'any' else form}_s8x4w16", bias)
                  for bias in BIAS_TYPES for form in ("any", "3x3", "5x5")}
"""The DSP cores' border helper per (bias type, form): BORDER_OPS' arguments, the weights int16 (widened at compile
time: `tvm_ext.transform.int8.conv`); "3x3" and "5x5" one out-of-line copy per bundle each, "any" (another window)
inlined."""
for (_bias, _form), _op in DSP_BORDER_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_tiles_helper_name, bias=_bias,
                                               window="" if _form == "any" else _form, kind="border",
                                               weights="int16"), BORDER_ACCESS)
DSP_LIKELY_OP = "tvm_ext.depthwise_likely"
"""A kernel's test that leads to its interior pixels, told to the compiler as likely true (``<prefix>_depthwise_likely``:
__builtin_expect). With the border pixels one call of the border helper, gcc 12.2 -O2 otherwise weighs both
branches alike, keeps the pixel loops' values in registers and spills the interior tile's sums at every tap
(mobilenet_v2_050_64_int8's 3x3 layer on 32x32x16: 32 stack accesses among its taps instead of 2)."""
register_mac_helper(DSP_LIKELY_OP, lambda prefix: f"{prefix}_depthwise_likely")
register_truth_hint(DSP_LIKELY_OP)
DSP_PAD_OPS = {"int8": "tvm_ext.depthwise_pad_s8x4", "int16": "tvm_ext.depthwise_pad_s8x4w16"}
"""The DSP cores' padding products of a border pixel's four-channel tile per weight type: PAD_OP's arguments
(channels 4)."""
DSP_PAD_OP = DSP_PAD_OPS["int8"]
for _weights, _op in DSP_PAD_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_pad_helper_name, weights=_weights), PAD_ACCESS)
for _bias, _op in DEPTHWISE_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(helium_depthwise_tiles_helper_name, bias=_bias), DEPTHWISE_TILES_ACCESS)
DSP_TILES_OPS = by_bias("tvm_ext.depthwise_tiles_s8x4")
"""The DSP cores' fused helper per bias type (``backends.cortex_m.helpers.depthwise_mac_c``'s
``depthwise_tiles.h.in``): the same call as DEPTHWISE_TILES_OPS' (channels a multiple of 4), inlined."""
DSP_TILES_W16_OPS = by_bias("tvm_ext.depthwise_tiles_s8x4w16")
"""The same over int16 weights (widened at compile time)."""
for _bias, _op in DSP_TILES_W16_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_tiles_helper_name, bias=_bias, weights="int16"),
                        DEPTHWISE_TILES_ACCESS)
DSP_TILES_STEPPED_OPS = by_bias("tvm_ext.depthwise_tiles_stepped_s8x4w16")
"""The same call, each tile's pointers stepped on instead of indexed by its channel offset
(``<prefix>_depthwise_tiles_stepped_s8x4w16``): what ``depthwise_pairs`` gives a kernel whose interior pays for it."""
for _bias, _op in DSP_TILES_STEPPED_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_tiles_helper_name, bias=_bias, kind="tiles_stepped",
                                               weights="int16"), DEPTHWISE_TILES_ACCESS)
DSP_OUTLINED_SIDES = (3, 5)
"""The square windows (sides in taps) whose fused helper has one out-of-line copy per bundle."""
DSP_TILES_OUTLINED_OPS = {(f"{side}x{side}", bias): bias_form(f"tvm_ext.depthwise_tiles{side}x{side}_s8x4w16", bias)
                          for side in DSP_OUTLINED_SIDES for bias in BIAS_TYPES}
"""Those copies' ops per (window form, ``window_form``, bias type), over int16 weights."""
for _bias, _op in DSP_TILES_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_tiles_helper_name, bias=_bias), DEPTHWISE_TILES_ACCESS)
for (_form, _bias), _op in DSP_TILES_OUTLINED_OPS.items():
    register_mac_helper(_op, functools.partial(dsp_depthwise_tiles_helper_name, bias=_bias, window=_form,
                                               weights="int16"), DEPTHWISE_TILES_ACCESS)


def window_form(rows: int, cols: int) -> str:
    """The form of a window of ``rows`` x ``cols`` taps that keys the fused helper's out-of-line copies
    (``TileHelpers.outlined``): "1xn" for one row of several taps (whatever their count: the copy takes it as an
    argument), else "<rows>x<cols>" (a square window's copy has its taps written out)."""
    return "1xn" if rows == 1 < cols else f"{rows}x{cols}"


@dataclass(frozen=True)
class TileHelpers:
    """A core's helpers of a depthwise tile loop: the window call an interior tile makes (``mac_op``; with
    ``sized`` its last argument is the tile's channel count, else the call takes a fixed count), the
    epilogue's op per bias type (``requantize``), the fused helper's (``tiles``), and the border helper's per
    (bias type, form) (``border``: "any", or a square window's "3x3" / "5x5" out-of-line copy where there is one;
    None: the border pixels keep the loop), which takes windows of at most ``window_taps`` taps whose border
    leaves call ``box_op`` (a clipped window) and ``pad_op`` (the padding's products); ``outlined``, where given,
    the fused helper's out-of-line copies per (square window's side, bias type), which a kernel of such a window
    calls unless it runs at least ``inline_tiles`` tile iterations (its pixels times its tiles), where the
    inlined helper's fewer instructions per tile pay for its code."""

    mac_op: str
    sized: bool
    requantize: dict[str, str]
    tiles: dict[str, str]
    border: Optional[dict[tuple[str, str], str]]
    outlined: Optional[dict[tuple[str, str], str]] = None
    inline_tiles: int = 0
    box_op: str = BOX_OP
    pad_op: str = PAD_OP
    window_taps: int = WINDOW_TAPS
    border_everywhere: bool = False
    """Whether a kernel without interior pixels (every window overhangs the image) takes the border helper at every
    pixel (its window read from the weights' buffer: ``_Tiles.window``)."""
    likely: Optional[str] = None
    """The op (None: none) that tells the C compiler the test leading to the interior is likely true, around
    that test where the border pixels take the border helper."""
    column_as_row: bool = False
    """Whether a window of one column and several rows (a kx1 window: time-axis depthwise layers of audio models)
    calls the fused helper as one row of taps (its sizes and strides transposed: the same taps, another order)."""
    shared: Optional[frozenset[str]] = None
    """The window forms (``window_form``) whose interior every kernel calls the out-of-line copy of, the others
    inlining the fused helper: the bundle's choice (``SharedTiles``, ``shared_tiles``), made from what all its
    kernels use; None: ``inline_tiles`` decides per kernel."""
    shared_borders: frozenset[str] = frozenset()
    """The square window forms ("3x3") whose border pixels call the border copy that runs the interior's copy
    (``border``'s form + SHARED_BORDER) instead of the one holding its own tile: the bundle's choice
    (``helium_shared_borders.shared_borders``)."""

    def calls_copy(self, form: str, iterations: int) -> bool:
        """Whether a kernel of ``iterations`` tile iterations calls the out-of-line copy of the fused helper for
        windows of ``form`` (one it has: ``outlined``), else inlines it."""
        if self.shared is not None:
            return form in self.shared
        return iterations < self.inline_tiles


HELIUM_TILES_OUTLINED_OPS = {(form, bias): bias_form(f"tvm_ext.depthwise_tiles{form}_s8", bias)
                             for form in ("3x3", "5x5", "1xn") for bias in BIAS_TYPES}
"""Helium's fused helper's out-of-line copies per (window form, ``window_form``, bias type)
(``helium_depthwise16.h.in``'s ``_depthwise_tiles3x3_s8``: a 3x3 window's taps written out; ``_depthwise_tiles5x5_s8``:
a 5x5 window's rows rolled, a row's taps written out;
``_depthwise_tiles1xn_s8``: one row of any taps, a kx1 window called as a row, ``TileHelpers.column_as_row``)."""
for (_form, _bias), _op in HELIUM_TILES_OUTLINED_OPS.items():
    register_mac_helper(_op, functools.partial(helium_depthwise_tiles_helper_name, bias=_bias, window=_form),
                        DEPTHWISE_TILES_ACCESS)
HELIUM_TILES = TileHelpers(MAC_OP, True, REQUANTIZE_S8_OPS, DEPTHWISE_TILES_OPS, BORDER_OPS,
                           HELIUM_TILES_OUTLINED_OPS, column_as_row=True, shared=frozenset())
"""Helium's: the 16-lane window helper, the vector epilogue, the border helper; a 3x3 window's interior, and a
kx1 window's as one row of k taps, inlined, or out of line where the bundle shares that form's copy
(``shared_tiles``: ``replace(HELIUM_TILES, shared=...)``; inlined, a kx1 window called as a row compiles to the
same code as called as a column)."""


@dataclass(frozen=True)
class CopyCost:
    """What one window form's out-of-line copy of the fused helper weighs in a bundle's code (bytes) and what
    calling it instead of inlining the helper costs a kernel (instructions)."""

    inlined: int
    """A kernel's code more with the fused helper inlined than with its call of the copy (bytes), for a layer of
    whole tiles of 16 channels."""
    inlined_overlapping: int
    """As ``inlined``, for a layer whose channels are not whole tiles of 16 (the copy's last tile overlapping the
    one before; inlined, tiles of 8 channels or a predicated last tile: less code)."""
    copy: int
    """The copy's own code (bytes, once per bundle and bias type)."""
    call: int
    """Instructions more per call of the copy (its arguments, the strides it keeps on the stack)."""
    tile: int
    """Instructions more per tile of 16 channels."""
    rolled_tap: int
    """Instructions more per tap of a tile whose taps the copy rolls (its loop's)."""
    rolled_below: Optional[int]
    """The copy rolls the taps of a layer of fewer channels than this (its one predicated tile); None: every tile's."""
    rolled_copy: int = 0
    """The copy's code more where a kernel of fewer channels than ``rolled_below`` calls it (bytes: the compiler
    keeps that tile's path only then)."""
    split_pixel: Optional[int] = None
    """Instructions more per pixel (all its tiles) for a kernel whose inlined helper writes out a whole tile and a
    predicated one (``splits``: more than 16 channels, 8 not dividing them), whose inlined forms run little faster
    than the copy's overlapping last tile; None: ``call`` and ``tile`` as for any kernel."""

    def splits(self, channels: int) -> bool:
        """Whether a kernel of ``channels`` channels inlines a whole tile of 16 and a predicated one
        (``inlined_bytes``' twice ``inlined``) and its calls of the copy are priced by ``split_pixel``."""
        tile = DEPTHWISE_TILES[0]
        return self.split_pixel is not None and channels > tile and channels % (tile // 2) != 0

    def inlined_bytes(self, channels: int) -> int:
        """A kernel's code more with the fused helper inlined on ``channels`` channels than calling the copy
        (bytes), by the tiles the inlined helper writes out (``helium_depthwise16.h.in``'s ``_tiles_any``):
        ``inlined`` for whole tiles of 16, ``inlined_overlapping`` for whole tiles of 8, twice ``inlined`` for a
        whole tile of 16 and a predicated last one (more than 16 channels, 8 not dividing them: ds_cnn_w30_49x10's
        30 channels, measured 2,492 B the kernel), else ``inlined`` (one predicated tile)."""
        tile = DEPTHWISE_TILES[0]
        if channels % tile == 0:
            return self.inlined
        if channels % (tile // 2) == 0:
            return self.inlined_overlapping
        return 2 * self.inlined if channels > tile else self.inlined

    def rolls(self, channels: int) -> bool:
        """Whether a kernel of ``channels`` channels calling the copy grows it by ``rolled_copy``."""
        return self.rolled_below is not None and channels < self.rolled_below


HELIUM_COPY_COSTS = {"3x3": CopyCost(inlined=1_000, inlined_overlapping=500, copy=1_020, call=100, tile=8,
                                     rolled_tap=4, rolled_below=DEPTHWISE_TILES[0], rolled_copy=774, split_pixel=15),
                     "5x5": CopyCost(inlined=2_200, inlined_overlapping=1_100, copy=800, call=100, tile=0,
                                     rolled_tap=4, rolled_below=DEPTHWISE_TILES[0], rolled_copy=774),
                     "1xn": CopyCost(inlined=620, inlined_overlapping=288, copy=616, call=100, tile=8, rolled_tap=4,
                                     rolled_below=None)}
"""Helium's copies, per window form, measured on cortex-m55 (arm-none-eabi-gcc 12.2 -O2, nm, after heliumres-30).
Bytes, a 3x3 kernel inlining the fused helper / calling the copy (``inlined``, ``inlined_overlapping``: about the
least a kernel saves): person_detect's (int32 biases) 24x24x16 at stride 2 1,116 / 212, 12x12x32 s2 1,126 / 212,
6x6x64 s2 1,148 / 226, 3x3x128 s2 1,170 / 234, 3x3x256 1,284 / 268, 24x24x32 1,348 / 358, 12x12x64 1,384 / 338,
6x6x128 1,396 / 342 (904-1,054 B saved); of channels not whole tiles of 16: person_detect's 48x48x8 832 / 358
(474), two 10x10 kernels (SAME 100 pixels, VALID 64; int16 biases) of 40 channels 856 / 324, 618 / 90 (532,
528) and of 24 channels 872 / 320, 584 / 86 (552, 498). The copy ``_depthwise_tiles3x3_s8`` 1,020 B (``_b16``
1,018-1,020), 1,794 B once a kernel of fewer than 16 channels calls it (person_detect's 48x48x8: the rolled
tile's 774 B, ``rolled_copy``). A one-row (kx1) kernel inlining / calling the copy: str_ww_ref_model's 3x1 of 40
channels 372 / 84 (288), of 128 channels 5x1 802 / 84, 10x1 870 / 84, 15x1 670 / 50 (620-786); the copy
``_depthwise_tiles1xn_s8`` 616 B. A 5x5 kernel inlining / calling the copy (its rows a rolled loop, a row's five taps
written out): efficientnet_lite_w030_112_int8's (int32 biases, channels whole tiles of 16) 14x14x96 3,468 / 966,
7x7x144 3,492 / 966, 7x7x192 3,486 / 980, 14x14x48 at stride 2 3,830 / 1,592, 4x4x192 s2 4,216 / 1,922 (2,238-2,526
saved); ``inlined_overlapping`` half, ``rolled_copy`` the 3x3 copy's, not measured; the copy
``_depthwise_tiles5x5_s8`` 794 B; every kernel faster calling it (1,619-49,708 instructions less each, 14,785,965 ->
14,701,240 the model: inlined, 25 taps a tile spill), so ``tile`` 0. Instructions, the two 10x10 kernels inlining /
calling the copy: 40 channels
110,906 / 132,197 (2,560 / 2,520 B of code), 24 channels 71,848 / 91,165 (2,532 / 2,504 B); person_detect
every 3x3 kernel inlining 4,146,060, this rule's choice (all but the 48x48x8 kernel share) 4,278,641, every one
calling the copy 4,590,719; measured by heliumshare-30, person_detect's kernels inlining / calling the copy:
24x24x32 (484 interior pixels, 2 tiles) 306,543 / 358,078, 12x12x64 (100, 4 tiles) 156,518 / 172,240, 24x24x16
at stride 2 (529, 1 tile) 149,997 / 194,999, 48x48x8 (2,116 pixels, its 8 channels' taps rolled in the copy)
390,543 / 687,861 (the second with the border copy's rolled rows). A 3x3 kernel of a whole tile and a predicated
one inlined (``split_pixel``), inlining / calling the copy: ds_cnn_w30_49x10's 25x5x30, 75,328 / 73,080 a call (the
copy faster); a DS-CNN's 31x7x44 on 61x13 (four calls of 217 pixels), the bundle 1,573,822 / 1,586,434 (15 a pixel
more) and 5,256 / 4,108 B of code, where cortex-m4f's is 4,640 B: priced at ``call`` and ``tile`` (124 a pixel), it
stayed inlined and broke the code rule."""


@dataclass(frozen=True)
class KernelUse:
    """A kernel's use of one window form of the fused helper (its interior call, scheduled inlined)."""

    kernel: str
    """The kernel's (PrimFunc's) name."""
    calls: int
    """Its calls per inference."""
    pixels: int
    """Its interior call's executions per call of the kernel (the loops around it: its border pixels too)."""
    channels: int
    taps: int

    def copy_instructions(self, cost: CopyCost) -> int:
        """The instructions per inference the kernel's calls of the copy ``cost`` would add."""
        if cost.splits(self.channels):
            return self.calls * self.pixels * cost.split_pixel
        tiles = -(-self.channels // DEPTHWISE_TILES[0])
        rolled = cost.rolled_below is None or self.channels < cost.rolled_below
        per_tile = cost.tile + (cost.rolled_tap * self.taps if rolled else 0)
        return self.calls * self.pixels * (cost.call + tiles * per_tile)

    def gain(self, cost: CopyCost, instructions_per_byte: int) -> int:
        """What calling the copy ``cost`` instead of inlining saves, in instructions per inference (its inlined
        bytes, ``CopyCost.inlined_bytes``, at ``instructions_per_byte`` each, less ``copy_instructions``)."""
        return code_gain(cost.inlined_bytes(self.channels), self.copy_instructions(cost), instructions_per_byte)


FormKey = tuple[str, str]
"""A copy of the fused helper: its window form (``window_form``) and bias type (``BIAS_TYPES``), one copy each
(``HELIUM_TILES_OUTLINED_OPS``)."""


@dataclass(frozen=True)
class SharedTiles:
    """A bundle's choice of the fused helper's forms (``TileHelpers.shared``): per copy (window form, bias type),
    the facts and the kernels that call it."""

    uses: tuple[tuple[FormKey, tuple[KernelUse, ...]], ...]
    """Per copy (``FormKey``) of a form that has an out-of-line copy, the kernels that would call it
    (``form_uses``)."""
    sharing: tuple[tuple[FormKey, frozenset[str]], ...]
    """Per copy the bundle has, the kernels (names) that call it; every other kernel inlines the helper."""

    def forms_of(self) -> dict[str, frozenset[str]]:
        """Per kernel that calls a copy, the forms whose copy it calls."""
        forms: dict[str, set[str]] = {}
        for (form, _), kernels in self.sharing:
            for kernel in kernels:
                forms.setdefault(kernel, set()).add(form)
        return {kernel: frozenset(shared) for kernel, shared in forms.items()}


def form_uses(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int],
              helpers: TileHelpers = HELIUM_TILES) -> dict[FormKey, tuple[KernelUse, ...]]:
    """Per copy (window form with an out-of-line copy, ``helpers.outlined``, and bias type), the kernels of
    ``kernels`` (name -> PrimFunc, scheduled with the fused helper inlined) whose interior calls it: their calls
    per inference (``calls``: name -> calls; a kernel not in it counts once), the call's executions, channels and
    taps."""
    outlined = set(helpers.outlined or {})
    bias_of = {op: bias for bias, op in helpers.tiles.items()}
    uses: dict[FormKey, list[KernelUse]] = {}
    for name, func in kernels.items():
        for call, pixels in op_executions(func.body, set(bias_of)):
            sizes = [call.args[FUSED_ARGS[size]] for size in ("rows", "cols", "channels")]
            if not all(isinstance(size, tirx.IntImm) for size in sizes):
                continue
            rows, cols, channels = (int(size) for size in sizes)
            key = (window_form(rows, cols), bias_of[call.op.name])
            if key in outlined:
                uses.setdefault(key, []).append(KernelUse(name, calls.get(name, 1), pixels, channels, rows * cols))
    return {key: tuple(found) for key, found in uses.items()}


def shared_tiles(uses: Mapping[FormKey, tuple[KernelUse, ...]],
                 costs: Mapping[str, CopyCost] = HELIUM_COPY_COSTS,
                 instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> SharedTiles:
    """The bundle's choice from its kernels' ``uses`` (``form_uses``), copy by copy (one per window form and bias
    type), each byte of code worth ``instructions_per_byte`` instructions per inference: a kernel's gain from
    calling the copy is its inlined code's bytes (``CopyCost.inlined_bytes``: its channels' tiles) less the
    instructions the calls add (``KernelUse.gain``, summed over its interior calls of the form); the kernels sorted
    by gain, the best-paying first, the prefix whose gains most exceed the copy's bytes (``costs``: per form,
    ``CopyCost``; its rolled tile's too once a caller needs it) call it, if any does; every other kernel inlines
    the helper. So one kernel of a form keeps it inlined however often it is called (the copy would only add its
    calls), and several small ones share it."""
    sharing = []
    for key, found in sorted(uses.items()):
        cost = costs.get(key[0])
        if cost is None:
            continue
        gains: dict[str, int] = {}
        for use in found:
            gains[use.kernel] = gains.get(use.kernel, 0) + use.gain(cost, instructions_per_byte)
        ranked = sorted(gains, key=lambda kernel: (-gains[kernel], kernel))
        rolling = {use.kernel for use in found if cost.rolls(use.channels)}
        best, best_count, total, rolled = 0, 0, -cost.copy * instructions_per_byte, False
        for count, kernel in enumerate(ranked, 1):
            total += gains[kernel]
            if kernel in rolling and not rolled:  # the first caller whose taps the copy rolls: its rolled tile
                rolled = True
                total -= cost.rolled_copy * instructions_per_byte
            if total > best:
                best, best_count = total, count
        if best_count:
            sharing.append((key, frozenset(ranked[:best_count])))
    return SharedTiles(tuple(sorted(uses.items())), tuple(sharing))


DSP_INLINE_TILES = 512
"""The tile iterations (pixels x four-channel tiles, border pixels' too) from which a DSP kernel's 3x3 or 5x5
interior inlines the fused helper, else calls its out-of-line copy. Inlined, a tile runs some 17 instructions
fewer than in the copy (whose strides are arguments) but the kernel's code grows about 275 B. Measured on
cortex-m4f (instructions, code B), before the fused helper / every 3x3 kernel inlined / none (the copy's nine
taps written out): mobilenet_v2_050_64_int8 18,962,828, 34,064 / 18,728,816, 36,336 / 19,011,924, 32,268. With
the copies looping over rows, from 2,048 on / from 3,000 on: mobilenet 18,813,205, 33,592 (both);
efficientnet_lite_w030_112_int8 (before 42,232,976, 47,060) 40,787,534, 45,764 / 40,960,144, 43,400;
vww_96_int8 (before 17,242,205, 22,936) 17,082,282, 22,916 / 17,180,653, 21,904. Once the border pixels took the
border helper (their loops' code gone), from 2,048 on / from 512 on / every kernel inlined:
mobilenet_v2_050_64_int8 18,176,934, 25,424 / 18,078,130, 27,548 / 18,071,448, 28,212;
efficientnet_lite_w030_112_int8 37,675,621, 39,892 / 37,569,769, 43,072 (both); vww_96_int8 16,647,123,
15,400 / 16,554,382, 17,568 / 16,552,791, 17,780; kws_ref_model 5,305,893, 5,044 / 5,250,625, 5,268 (both).
With the weights widened to int16 (a tap 8 instructions), from 512 on / from 256 on: vww_96_int8 13,819,626,
13,216 / 13,818,327, 13,416; person_detect 12,847,382, 12,392 / 12,846,083, 12,592; mobilenet_v2_050_64_int8
15,309,520, 17,632 / 15,299,191, 18,192; mobilenet_v3s_min_050_80_int8 7,100,670, 16,948 / 7,076,967, 18,000;
kws_ref_model, str_ww_ref_model, efficientnet_lite_w030_112_int8 the same: 512 kept."""
DSP_TILES = TileHelpers(DEPTHWISE_MAC_W16_OP, False, REQUANTIZE_SMALL_OPS, DSP_TILES_W16_OPS, DSP_BORDER_OPS,
                        DSP_TILES_OUTLINED_OPS, DSP_INLINE_TILES, DEPTHWISE_BOX_W16_OP, DSP_PAD_OPS["int16"],
                        DSP_WINDOW_TAPS, column_as_row=True, border_everywhere=True, likely=DSP_LIKELY_OP)
"""The DSP cores': four channels per window call (``depthwise_mac``), the written-out epilogue
(``requantize_small_c``), the border pixels' one call of the border helper (their padding products calls of
DSP_PAD_OP: ``dsp_replacement``); a kx1 window as a row of k taps: ``depthwise_mac.h.in`` puts its schedule
barriers between a row's taps, none between rows of one tap, where gcc then hoisted every tap's loads and spilled
(str_ww_ref_model on cortex-m4f, its 3x1, 5x1, 10x1 and 15x1 layers 213,503 -> 207,077 instructions)."""
DSP_TILES_S8 = TileHelpers(DEPTHWISE_MAC_OP, False, REQUANTIZE_SMALL_OPS, DSP_TILES_OPS, None,
                           column_as_row=True)
"""The DSP cores' fused interior tiles over int8 weights, for a layer the int8 lowering does not widen (a window of
more than DSP_WINDOW_TAPS taps, `tvm_ext.transform.int8.conv`): no border helper (it reads int16 weights; such a
window's border keeps its loop, as it did), no out-of-line copy (there are none of such windows)."""


def dsp_replacement(realize: s_tir.SBlockRealize, loops: list,
                    outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The DSP cores' MAC helpers' call block (``depthwise_mac.mac_helper_replacement``; a depthwise tile of a depth
    multiplier above 1: ``depthwise_spread.spread_replacement``) for what the For nodes
    ``loops`` around ``realize`` compute, else, for a border pixel's padding products over a four-channel tile,
    DSP_PAD_OP's (which the border helper's call then takes in, ``depthwise_tiles_call``); None where none fits."""
    return (mac_helper_replacement(realize, loops, outlined_depthwise)
            or spread_replacement(realize, loops)
            or padding_replacement(realize, loops, DSP_PAD_OPS["int8"], DUAL_MAC_CHANNELS)
            or padding_replacement(realize, loops, DSP_PAD_OPS["int16"], DUAL_MAC_CHANNELS, "int16"))


for (_bias, _form), _op in BORDER_OPS.items():
    register_mac_helper(_op, functools.partial(helium_depthwise_tiles_helper_name, bias=_bias, border=_form), BORDER_ACCESS)


def _uses(expr, var) -> bool:
    """Whether ``expr`` reads the variable ``var``."""
    return any(node.same_as(var) for node in walk(expr))


def _leaves(stmt: tirx.Stmt, var, conditions: tuple = ()) -> Optional[list[tuple[tirx.Stmt, tuple]]]:
    """The leaves of ``stmt``, a tree of position tests not reading ``var`` (itself a leaf when it is no test),
    each with the tests that lead to it (a test's negation for its else branch); None where a test reads
    ``var`` or has no else branch."""
    if not isinstance(stmt, tirx.IfThenElse):
        return [(stmt, conditions)]
    # a test without an else branch: its other pixels' outputs are the loop's, which no leaf would write
    if _uses(stmt.condition, var) or stmt.else_case is None:
        return None
    then = _leaves(stmt.then_case, var, (*conditions, stmt.condition))
    other = _leaves(stmt.else_case, var, (*conditions, tirx.Not(stmt.condition)))
    return None if then is None or other is None else then + other


def _with_leaves(stmt: tirx.Stmt, replace) -> tirx.Stmt:
    """``stmt`` (``_leaves``'s tree) with each leaf ``replace(leaf)``."""
    if isinstance(stmt, tirx.IfThenElse):
        return tirx.IfThenElse(stmt.condition, _with_leaves(stmt.then_case, replace),
                               _with_leaves(stmt.else_case, replace))
    return replace(stmt)


def _calls(leaf: tirx.Stmt, ops: tuple[str, ...]) -> list[Optional[tvm.ir.Call]]:
    """The calls of ``ops`` of ``leaf`` (one call block, or a sequence of them), None for any other
    statement."""
    stmts = list(leaf.seq) if isinstance(leaf, tirx.SeqStmt) else [leaf]
    return [call_of(stmt, ops) for stmt in stmts]


FUSED_ARGS = {name: index for index, name in enumerate((
    "out", "x", "w", "bias", "multiplier", "shift", "zero_point", "x_row_stride", "x_col_stride", "w_row_stride",
    "w_col_stride", "rows", "cols", "channels"))}
"""The fused helper's arguments (``_Tiles.fused``: the outputs, ``block``'s first; the inputs and weights; the
epilogue's, ``epilogue_args``; the window's sizes; the channels, ``block``'s last) by name: their positions."""


class _Tiles(LoopOffsets):
    """A depthwise tile loop's common parts: its requantization, the analysis over the enclosing loops."""

    def __init__(self, loop: tirx.For, enclosing: tuple, requantization: tvm.ir.Call, channels: int,
                 helpers: TileHelpers = HELIUM_TILES) -> None:
        super().__init__((*enclosing, loop))
        self.loop, self.requantization, self.channels, self.helpers = loop, requantization, channels, helpers
        self.total = int(loop.extent) * channels
        self.iterations = functools.reduce(
            lambda count, outer: count * (int(outer.extent) if isinstance(outer.extent, tirx.IntImm) else 1),
            (*enclosing, loop), 1)
        """The tile loop's iterations in all: its own times its enclosing loops' (constant extents)."""
        self.bias_type = next(bias for bias, op in helpers.requantize.items() if op == requantization.op.name)

    def address(self, arg):
        """``arg`` at the first tile."""
        return at_first_tile(arg, self.loop.loop_var)

    def moves_one_tile(self, arg) -> bool:
        """Whether the element ``arg`` points at moves one tile's channels per tile."""
        load = pointee(arg)
        return load is not None and (int(self.loop.extent) == 1 or self.step(load, self.loop.loop_var) == self.channels)

    def targets(self, calls: list, acc: TensorLoad) -> bool:
        """Whether each of ``calls`` accumulates into ``acc`` (the elements the epilogue reads)."""
        for call in calls:
            target = pointee(call.args[0])
            if target is None or not target.source.same_as(acc.source) \
                    or self.constant(flat_offset(target) - flat_offset(acc)) != 0:
                return False
        return True

    def epilogue_moves(self) -> bool:
        """Whether the requantization's outputs, biases, multipliers and shifts move one tile per tile."""
        requantization = self.requantization
        return all(self.moves_one_tile(arg) for arg in (requantization.args[0], *requantization.args[2:5]))

    def block(self, op: str, args: list, loads: list) -> s_tir.SBlockRealize:
        """The call block of ``op`` on ``args`` and every channel (the last argument but for a lookup table after
        the requantization, where the epilogue has one: its table, last), reading the whole buffers of ``loads`` and
        the epilogue's, writing the outputs."""
        requantization = self.requantization
        start = self.address(requantization.args[0])
        table = list(requantization.args[7:])  # the epilogue's lookup table (RISC-V's LUT tiles), else none
        call = tirx.call_intrin("int32", op, start, *args, self.total, *table)
        reads = [_whole(load.source) for load in (*loads, *(pointee(arg) for arg in (*requantization.args[2:5],
                                                                                      *table)))]
        block = s_tir.SBlock([], reads, [_region(pointee(start), self.total)], "depthwise_tiles", tirx.Evaluate(call))
        return s_tir.SBlockRealize([], True, block)

    def epilogue_args(self) -> list:
        """The requantization's biases, multipliers, shifts (at the first tile) and zero point."""
        requantization = self.requantization
        return [*(self.address(arg) for arg in requantization.args[2:5]), requantization.args[5]]

    def fused(self, leaf: tirx.Stmt, acc: TensorLoad) -> Optional[s_tir.SBlockRealize]:
        """The fused call computing ``leaf`` (one window call on the accumulators ``acc`` over the tile's
        channels: an interior pixel) and the requantization, or None."""
        calls = _calls(leaf, (self.helpers.mac_op,))
        if len(calls) != 1 or calls[0] is None or calls[0].op.name != self.helpers.mac_op:
            return None
        mac = calls[0]
        sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[3:]]
        if self.helpers.sized:
            if sizes[-1] != self.channels:
                return None
            sizes = sizes[:-1]
        if None in sizes or not self.targets([mac], acc) or not self.epilogue_moves() \
                or not all(self.moves_one_tile(arg) for arg in mac.args[1:3]):
            return None
        if self.helpers.column_as_row and sizes[5] == 1 < sizes[4]:
            x_row, x_col, w_row, w_col, rows, _ = sizes
            sizes = [x_col, x_row, w_col, w_row, 1, rows]
        args = [self.address(mac.args[1]), self.address(mac.args[2]), *self.epilogue_args(), *sizes]
        assert len(args) + 2 == len(FUSED_ARGS)
        op = self.helpers.tiles[self.bias_type]
        form = window_form(sizes[4], sizes[5])
        if self.helpers.outlined is not None and self.helpers.calls_copy(form, self.iterations):
            op = self.helpers.outlined.get((form, self.bias_type), op)
        return self.block(op, args, [pointee(arg) for arg in mac.args[1:3]])

    def box(self, w_arg, w_origin: TensorLoad, strides: tuple[int, int], rows: int, cols: int) -> Optional[tuple]:
        """(top, left) of the taps of the weights at ``w_arg`` in the window whose first tap's weights are
        ``w_origin`` (weights at ``strides``), a box of ``rows`` x ``cols`` taps inside the window of the
        interior's sizes, else None."""
        load = pointee(self.address(w_arg))
        if load is None or not load.source.same_as(w_origin.source) or not self.moves_one_tile(w_arg):
            return None
        offset = self.constant(flat_offset(load) - flat_offset(w_origin))
        row_stride, col_stride = strides
        if offset is None or offset < 0 or row_stride <= 0 or col_stride <= 0:
            return None
        top, rest = divmod(offset, row_stride)
        left, lane = divmod(rest, col_stride)
        return (top, left) if lane == 0 else None

    def border_case(self, leaf: tirx.Stmt, acc: TensorLoad, whole: list[int], w: tirx.PrimExpr) -> Optional[tuple]:
        """(x's element, top, left, rows, cols, value, taps) of ``leaf``: a (clipped) window call and padding
        calls on the accumulators ``acc``, at the strides of the window ``whole`` (x_row, x_col, w_row, w_col,
        rows, cols: the interior pixel's, or ``window``'s) whose first tap's weights are at ``w``, the clipped
        window's taps (top, left, rows x cols of them) inside the whole window and the padding's value (None
        without padding calls), ``taps`` the window's taps the calls cover; else None."""
        helpers = self.helpers
        calls = _calls(leaf, (helpers.mac_op, helpers.box_op, helpers.pad_op))
        if not calls or None in calls or calls[0].op.name not in (helpers.mac_op, helpers.box_op) \
                or any(call.op.name != helpers.pad_op for call in calls[1:]) or not self.targets(calls, acc):
            return None
        mac, pads = calls[0], calls[1:]
        sizes = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in mac.args[3:]]
        if helpers.sized:
            if sizes[-1] != self.channels:
                return None
            sizes = sizes[:-1]
        if None in sizes or sizes[:4] != whole[:4] or not self.moves_one_tile(mac.args[1]):
            return None
        origin, strides = pointee(w), (whole[2], whole[3])
        boxes = [(self.box(mac.args[2], origin, strides, sizes[4], sizes[5]), sizes[4], sizes[5])]
        values = set()
        for pad in pads:  # (acc, w, w_row_stride, w_col_stride, rows, cols, value, channels)
            if any(not isinstance(arg, tirx.IntImm) for arg in pad.args[2:]) or int(pad.args[7]) != self.channels \
                    or (int(pad.args[2]), int(pad.args[3])) != strides:
                return None
            boxes.append((self.box(pad.args[1], origin, strides, int(pad.args[4]), int(pad.args[5])),
                          int(pad.args[4]), int(pad.args[5])))
            values.add(int(pad.args[6]))
        taps: set[tuple[int, int]] = set()
        for corner, rows, cols in boxes:
            if corner is None or corner[0] + rows > whole[4] or corner[1] + cols > whole[5]:
                return None
            box = {(corner[0] + r, corner[1] + k) for r in range(rows) for k in range(cols)}
            if box & taps:
                return None
            taps |= box
        if len(values) > 1:
            return None
        (top, left), rows, cols = boxes[0]
        x = pointee(self.address(mac.args[1]))
        return x, top, left, rows, cols, next(iter(values), None), taps

    def window(self, leaves: list) -> Optional[tuple[list[int], tirx.PrimExpr]]:
        """(the window's strides and size, as an interior window call's sizes, and its first tap's weights at the
        first tile) of a kernel without interior pixels, read from the first of ``leaves``' window call (the
        strides) and the weights' buffer (the window's whole extent: [.., rows, cols, channels] at those strides),
        or None."""
        calls = _calls(leaves[0][0], (self.helpers.mac_op, self.helpers.box_op, self.helpers.pad_op))
        if not calls or calls[0] is None or calls[0].op.name not in (self.helpers.mac_op, self.helpers.box_op) \
                or not all(isinstance(arg, tirx.IntImm) for arg in calls[0].args[3:7]):
            return None
        x_row, x_col, w_row, w_col = (int(arg) for arg in calls[0].args[3:7])
        weights = pointee(calls[0].args[2])
        if weights is None or not all(isinstance(extent, tirx.IntImm) for extent in weights.source.shape):
            return None
        total = functools.reduce(lambda count, extent: count * int(extent), weights.source.shape, 1)
        if w_col != self.channels or w_row <= 0 or w_row % w_col or total % w_row:
            return None
        origin = tirx.BufferLoad(weights.source, [tirx.const(0, str(i.ty.dtype)) for i in weights.indices])
        return [x_row, x_col, w_row, w_col, total // w_row, w_row // w_col], tirx.address_of(origin)

    def border(self, tree: tirx.Stmt, leaves: list, acc: TensorLoad, whole: list[int], w: tirx.PrimExpr) \
            -> Optional[s_tir.SBlockRealize]:
        """The border helper's call computing, for the pixels whose position tests ``tree`` leads to any of
        ``leaves``, what the leaf they reach computes; its clipped window's place and size chosen by the same
        tests (Select), so that every border case runs one copy of the helper; None where some leaf does not
        fit (a padding of another value, taps neither in the image nor padded with a value other than 0).
        ``whole``: the window's strides and size (x_row, x_col, w_row, w_col, rows, cols), ``w`` its first tap's
        weights at the first tile."""
        own_copy = (self.bias_type, f"{whole[4]}x{whole[5]}") in self.helpers.border  # a window of its own form
        if (whole[4] * whole[5] > self.helpers.window_taps and not own_copy) or not self.epilogue_moves():
            return None
        cases = [self.border_case(leaf, acc, whole, w) for leaf, _ in leaves]
        if None in cases or len({case[5] for case in cases if case[5] is not None}) > 1:
            return None
        value = next((case[5] for case in cases if case[5] is not None), 0)
        window = {(r, k) for r in range(whole[4]) for k in range(whole[5])}
        if not -128 <= value <= 127 or any(case[6] != window and value != 0 for case in cases):
            return None
        x_loads = [case[0] for case in cases]
        if any(not load.source.same_as(x_loads[0].source)
               or [str(i.ty.dtype) for i in load.indices] != [str(i.ty.dtype) for i in x_loads[0].indices]
               for load in x_loads):
            return None
        indices = [_select(tree, [load.indices[axis] for load in x_loads]) for axis in range(len(x_loads[0].indices))]
        x = tirx.address_of(tirx.BufferLoad(x_loads[0].source, indices))
        geometry = [_select(tree, [tirx.const(case[part], "int32") for case in cases]) for part in range(1, 5)]
        args = [x, w, *self.epilogue_args(), *(tirx.const(size, "int32") for size in whole), *geometry,
                tirx.const(value, "int32")]
        form = f"{whole[4]}x{whole[5]}"
        if form in self.helpers.shared_borders:
            form += SHARED_BORDER
        op = self.helpers.border.get((self.bias_type, form), self.helpers.border[(self.bias_type, "any")])
        return self.block(op, args, [x_loads[0], pointee(w)])


def _select(tree: tirx.Stmt, values: list) -> tirx.PrimExpr:
    """The expression choosing ``values[i]`` where the position tests of ``tree`` lead to its leaf i (in
    ``_leaves``' order): nested Selects of its tests, a value where all its leaves' are equal."""
    order = iter(values)

    def chosen(stmt: tirx.Stmt) -> tirx.PrimExpr:
        if not isinstance(stmt, tirx.IfThenElse):
            return next(order)
        then, other = chosen(stmt.then_case), chosen(stmt.else_case)
        return then if tvm_ffi.structural_equal(then, other) else tirx.Select(stmt.condition, then, other)

    return chosen(tree)


def depthwise_tiles_call(loop: tirx.For, enclosing: tuple, helpers: TileHelpers = HELIUM_TILES) -> Optional[tirx.Stmt]:
    """The fused calls computing what ``loop`` (inside the loops ``enclosing``) computes: ``if (tests to the
    interior) interior call else border call`` (or the interior call alone without position tests), else
    ``if (tests to the interior) interior call else loop`` with that leaf empty; None where ``loop`` is not a loop
    over depthwise tiles of the module docstring's form. ``helpers``: the core's (HELIUM_TILES, DSP_TILES)."""
    stmts = tile_loop_stmts(loop)
    if stmts is None or len(stmts) < 3:
        return None
    tile = loop.loop_var
    leaves = _leaves(stmts[-2], tile)
    requantization = call_of(stmts[-1], tuple(helpers.requantize.values()))
    channels = None if requantization is None else stored_channels(requantization)
    if leaves is None or channels is None:
        return None
    read = pointee(requantization.args[1])
    zeroed = [zeroed_stores(stmt, read.source) if read is not None else None for stmt in stmts[:-2]]
    if any(part is None for part in zeroed):
        return None
    zeroed = [store for part in zeroed for store in part]
    tiles = _Tiles(loop, enclosing, requantization, channels, helpers)
    # the zeroed accumulators: exactly those the epilogue reads (by one store)
    if len(zeroed) != 1 or not tiles.zeroes_and_reads(zeroed, read, read, channels):
        return None
    fused = [tiles.fused(leaf, read) for leaf, _ in leaves]
    interior = [index for index, call in enumerate(fused) if call is not None]
    if not interior and helpers.border is not None and helpers.border_everywhere and tiles.epilogue_moves():
        window = tiles.window(leaves)  # no interior pixel: every pixel's the border helper's
        return tiles.border(stmts[-2], leaves, read, *window) if window is not None else None
    if len(interior) != 1:
        return None
    conditions = leaves[interior[0]][1]
    if not conditions:
        return fused[interior[0]]
    mac = _calls(leaves[interior[0]][0], (helpers.mac_op,))[0]
    border = tiles.border(stmts[-2], leaves, read, [int(arg) for arg in mac.args[3:9]], tiles.address(mac.args[2])) \
        if helpers.border is not None else None
    if border is not None:
        test = functools.reduce(tirx.And, conditions)
        if helpers.likely is not None:
            test = tirx.NE(tirx.call_intrin("int32", helpers.likely, tirx.Cast("int32", test)), tirx.const(0, "int32"))
        return tirx.IfThenElse(test, fused[interior[0]], border)
    order = iter(range(len(leaves)))
    rest = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind,
                    tirx.SeqStmt([*stmts[:-2], _with_leaves(stmts[-2], lambda other: tirx.Evaluate(
                        tirx.const(0, "int32")) if next(order) == interior[0] else other), stmts[-1]]),
                    loop.thread_binding, loop.annotations)
    return tirx.IfThenElse(functools.reduce(tirx.And, conditions), fused[interior[0]], rest)


def _one_tile_call(loop: tirx.For, enclosing: tuple, helpers: TileHelpers = HELIUM_TILES) -> Optional[tirx.Stmt]:
    """``loop`` with its body replaced by the fused calls where that body is one tile's iteration (a layer of
    one tile: no loop over tiles; seen as a loop of one tile), else None."""
    tile = tirx.Var("tile", "int32")
    one = tirx.For(tile, tirx.const(0, "int32"), tirx.const(1, "int32"), tirx.ForKind.SERIAL, loop.body)
    body = depthwise_tiles_call(one, (*enclosing, loop), helpers)
    if body is None:
        return None
    return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread_binding, loop.annotations)


def depthwise_tiles_calls(func: tirx.PrimFunc, helpers: TileHelpers = HELIUM_TILES) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each loop over depthwise channel tiles of the
    module docstring's form (or a pixel loop's body that is one tile's iteration) replaced by its fused calls
    (``helpers``: the core's, by default Helium's); any other function unchanged."""
    return with_root_loops_replaced(
        func, lambda loop, enclosing: depthwise_tiles_call(loop, enclosing, helpers)
        or _one_tile_call(loop, enclosing, helpers), enclosing=True)
