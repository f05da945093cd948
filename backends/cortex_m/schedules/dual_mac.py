"""The dual 16-bit multiply-accumulate (SMLAD) of DSP cores, reached from a scheduled MAC kernel.

On a profile with ``simd = "dsp"`` the reduction of a CONV_2D or FULLY_CONNECTED kernel tiled to 4 output
channels (``tvm_ext.schedule.kernel_schedule``) is replaced by one call of ``<prefix>_dual_mac_s8x4`` per output pixel and
channel tile: a `static inline` C helper of the bundle (``backends.cortex_m.helpers.dual_mac_c``) that reads four int8
inputs and four int8 weights per 32-bit load, widens them to int16 pairs with SXTB16 and multiply-accumulates
two pairs per SMLAD. The helper reads the inputs as ``rows`` runs of ``row_len`` contiguous bytes
(``x_row_stride`` bytes apart: the kernel rows of a convolution window) and each channel's weights as one
contiguous run (OHWI), so the weights need no other compile-time layout: SXTB16 splits the input word and the
weight word the same way (bytes 0 and 2, then 1 and 3), so the pairs line up.

Which reductions qualify (``dual_mac_replacement``): int32 ``acc[..] += int32(x[..]) * int32(w[..])`` over int8 x
(or int16 x: TFLite's 16x8 operators whose sums fit int32, one pixel per call, ``<prefix>_dual_mac_s16x4``) and int8
w (or, over int16 x, int16 w: a 16x8 layer's weights the lowering widened, ``<prefix>_dual_mac_s16x4_w16``), both read affinely with the innermost reduction index contiguous, and no padding test (a padded
convolution's interior qualifies once ``tvm_ext.schedule.border_split`` has separated it from the border). The sums
are integer sums in another order: bit-exact.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import tvm
import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.helpers import CORTEX_M_HELPERS, DUAL_MAC_W16_HELPERS
from backends.cortex_m.helpers.dual_mac_c import (DUAL_MAC_CHANNELS, DUAL_MAC_INPUT_TYPES, dual_mac_2px_helper_name,
                                                  dual_mac_helper_name, dual_mac_w16_helper_name)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.index_expr import INDEX_OPERATORS, evaluate_index, substitute_index

DUAL_MAC_OP = "tvm_ext.dual_mac_s8x4"
DUAL_MAC_2PX_OP = "tvm_ext.dual_mac_s8x2x4"
DUAL_MAC_S16_OP = "tvm_ext.dual_mac_s16x4"  # DUAL_MAC_OP's call on int16 inputs (TFLite's 16x8 operators)
DUAL_MAC_S16_W16_OP = "tvm_ext.dual_mac_s16x4_w16"  # ... over int16 weights (a 16x8 layer's, widened by the lowering)
_OPS = {("int8", "int8"): (DUAL_MAC_OP, DUAL_MAC_2PX_OP), ("int16", "int8"): (DUAL_MAC_S16_OP, None),
        ("int16", "int16"): (DUAL_MAC_S16_W16_OP, None)}
"""(one pixel, two pixels or None) per (input type, weight type): backends.cortex_m.helpers.dual_mac_c's
DUAL_MAC_INPUT_TYPES over int8 weights, and int16 inputs over int16 weights (`dual_mac_w16.h.in`)."""
_WEIGHT_TYPES = ("int8", "int16")
DUAL_MAC_PIXELS = 2  # output pixels the two-pixel helper accumulates beside its four channels


def register_mac_helper(op: str, helper_name: Callable[[str], str], access: Optional[HelperAccess] = None) -> None:
    """Register ``op``, a call of the Cortex-M helper library's ``helper_name(prefix)``, with the elements it
    reads and writes (``tvm_ext.tir.helper_calls.register_helper_call``)."""
    register_helper_call(op, CORTEX_M_HELPERS, helper_name, access)


def window_mac_access(channels: int) -> HelperAccess:
    """A window MAC's call (acc, x, w, x_row_stride, w_channel_stride, rows, row_len) over `channels` output
    channels: acc[c] for c < channels, x[r * x_row_stride + k] and w[c * w_channel_stride + r * row_len + k] for
    r < rows, k < row_len (the dual MAC's, 4 channels; the RISC-V window MAC's, 8)."""
    return HelperAccess((
        PointerAccess(0, (Axis(channels, 1),)),
        PointerAccess(1, (Axis(Arg(5), Arg(3)), Axis(Arg(6), 1))),
        PointerAccess(2, (Axis(channels, Arg(4)), Axis(Arg(5), Arg(6)), Axis(Arg(6), 1))),
    ))


def window_mac_2px_access(channels: int) -> HelperAccess:
    """The two-pixel window MAC's call (acc_a, acc_b, x, w, x_row_stride, w_channel_stride, rows, row_len,
    x_pixel_stride) over `channels`: acc_a[c] and acc_b[c] for c < channels,
    x[p * x_pixel_stride + r * x_row_stride + k] for p < 2, and w[c * w_channel_stride + r * row_len + k] for
    r < rows, k < row_len."""
    return HelperAccess((
        PointerAccess(0, (Axis(channels, 1),)),
        PointerAccess(1, (Axis(channels, 1),)),
        PointerAccess(2, (Axis(DUAL_MAC_PIXELS, Arg(8)), Axis(Arg(6), Arg(4)), Axis(Arg(7), 1))),
        PointerAccess(3, (Axis(channels, Arg(5)), Axis(Arg(6), Arg(7)), Axis(Arg(7), 1))),
    ))


DUAL_MAC_ACCESS = window_mac_access(DUAL_MAC_CHANNELS)
for _data in DUAL_MAC_INPUT_TYPES:  # the same record: it counts elements of the pointers' own types
    register_mac_helper(_OPS[_data, "int8"][0], functools.partial(dual_mac_helper_name, data=_data), DUAL_MAC_ACCESS)
register_helper_call(DUAL_MAC_S16_W16_OP, DUAL_MAC_W16_HELPERS, dual_mac_w16_helper_name, DUAL_MAC_ACCESS)

DUAL_MAC_2PX_ACCESS = window_mac_2px_access(DUAL_MAC_CHANNELS)
register_mac_helper(DUAL_MAC_2PX_OP, dual_mac_2px_helper_name, DUAL_MAC_2PX_ACCESS)


# --- loads and stores ---------------------------------------------------------------------------------------


def accessed_buffer(access):
    """The buffer a load (TensorLoad) or a store (BufferStore) accesses."""
    return access.buffer if isinstance(access, tirx.BufferStore) else access.source


# --- the reduction the helper computes ----------------------------------------------------------------------


@dataclass(frozen=True)
class MacReduction:
    """What one scheduled update block reads: the input and weight loads, the accumulator store."""

    store: tirx.BufferStore
    data: TensorLoad
    weight: TensorLoad


def _load_of(expr, dtypes: tuple[str, ...]) -> Optional[TensorLoad]:
    """The load of ``int32(load)`` when the load's type is one of ``dtypes``, else None."""
    if isinstance(expr, tirx.Cast) and str(expr.ty.dtype) == "int32" and isinstance(expr.value, TensorLoad):
        return expr.value if str(expr.value.source.dtype) in dtypes else None
    return None


def mac_reduction(block: s_tir.SBlock, data_dtypes: tuple[str, ...] = ("int8",),
                  weight_dtypes: tuple[str, ...] = ("int8",)) -> Optional[MacReduction]:
    """The block's ``acc = acc + int32(x) * int32(w)`` over x of one of ``data_dtypes`` and w of one of
    ``weight_dtypes`` (by default int8), or None for any other body."""
    return accumulation(block, "int32", lambda factor: _load_of(factor, data_dtypes),
                        lambda factor: _load_of(factor, weight_dtypes))


def accumulation(block: s_tir.SBlock, acc_dtype: str, data_of: Callable, weight_of: Callable) -> Optional[MacReduction]:
    """The block's ``acc = acc + a * b`` over an accumulator of ``acc_dtype``, with ``data_of(a)`` and
    ``weight_of(b)`` the loads the factors read (None: not a factor of that form), or None for any other body."""
    store = block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != acc_dtype:
        return None
    value = store.value
    if not isinstance(value, tirx.Add) or not isinstance(value.a, TensorLoad) or not isinstance(value.b, tirx.Mul):
        return None
    if not value.a.source.same_as(store.buffer) or not all(
            tvm_ffi.structural_equal(i, j) for i, j in zip(value.a.indices, store.indices)):
        return None
    data, weight = data_of(value.b.a), weight_of(value.b.b)
    if data is None or weight is None:
        return None
    return MacReduction(store, data, weight)


def int8_data_update(realize: s_tir.SBlockRealize, loops: list,
                     channels: int) -> Optional[tuple[tirx.BufferStore, TensorLoad, tirx.PrimExpr]]:
    """(the store, the int8 input load, the weight factor) of ``realize``'s update ``acc = acc + int32(x) * weight``
    over an int32 accumulator and int8 x, inside ``loops`` (For nodes: at least two, each from 0 with a constant
    extent, the innermost of ``channels``): the update a helper of re-laid-out weights decodes (the RISC-V paired
    MAC's, the stacked MAC's); None for any other update or loops."""
    store = realize.block.body
    if len(loops) < 2 or int(loops[-1].extent) != channels or not all(
            isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops):
        return None
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int32":
        return None
    value = store.value
    if not (isinstance(value, tirx.Add) and isinstance(value.a, TensorLoad) and isinstance(value.b, tirx.Mul)
            and value.a.source.same_as(store.buffer)):
        return None
    data = value.b.a
    if not (isinstance(data, tirx.Cast) and isinstance(data.value, TensorLoad)
            and str(data.value.source.dtype) == "int8"):
        return None
    return store, data.value, value.b.b


def dual_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The helper's call block that computes what ``loops`` (For nodes: the reduction loops, then optionally
    a loop of DUAL_MAC_PIXELS output pixels, then the unit-stride loop of DUAL_MAC_CHANNELS output channels,
    innermost, around ``realize``) compute, or None where it would not compute exactly that."""
    window = mac_window(realize, loops, DUAL_MAC_INPUT_TYPES, DUAL_MAC_CHANNELS, _WEIGHT_TYPES)
    if window is None:
        return None
    return _call_block(window.reduction, window.bindings, window.inner, window.geometry)


@dataclass(frozen=True)
class MacWindow:
    """A tiled MAC reduction a window helper computes: its loads and store, the block's bindings of its
    iteration variables, the inner loops' variables (outermost first) and the window's geometry."""

    reduction: MacReduction
    bindings: dict
    inner: list
    geometry: WindowGeometry


def mac_window(realize: s_tir.SBlockRealize, loops: list, data_dtypes: tuple[str, ...],
               channels: int, weight_dtypes: tuple[str, ...] = ("int8",)) -> Optional[MacWindow]:
    """What a window helper of ``channels`` output channels (one or DUAL_MAC_PIXELS pixels, inputs of one of
    ``data_dtypes``, weights of one of ``weight_dtypes``: by default int8) needs to compute what ``loops`` (For
    nodes: the reduction loops, then optionally a loop of DUAL_MAC_PIXELS output pixels, then the unit-stride loop
    of the ``channels``, innermost, around ``realize``) compute; None where the loads do not have the window's
    geometry."""
    node = realize.block
    reduction = mac_reduction(node, data_dtypes, weight_dtypes)
    if reduction is None or len(loops) < 2 or int(loops[-1].extent) != channels:
        return None
    if not all(isinstance(loop.extent, tirx.IntImm) and int(loop.min) == 0 for loop in loops):
        return None
    bindings = {iv.var: value for iv, value in zip(node.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        # A loop just outside the channels along which the accumulator moves is a loop of output pixels.
        pixels = len(loops) > 2 and offsets.step(reduction.store, len(loops) - 2) != 0
        reduce_loops = loops[:-2] if pixels else loops[:-1]
        if not reduce_loops or (pixels and int(loops[-2].extent) != DUAL_MAC_PIXELS):
            return None
        geometry = window_geometry(reduction, offsets, [int(loop.extent) for loop in reduce_loops], pixels,
                                   channels)
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    return MacWindow(reduction, bindings, inner, geometry) if geometry is not None else None


@dataclass(frozen=True)
class WindowGeometry:
    """The helper's strides and extents, in elements: ``rows`` runs of ``row_len`` inputs ``x_row_stride``
    apart, each channel's weights ``w_channel_stride`` apart (the reduction's weights contiguous); with two
    pixels, the second pixel's inputs ``x_pixel_stride`` and its accumulators ``acc_pixel_stride`` after the
    first's (None: one pixel)."""

    x_row_stride: int
    w_channel_stride: int
    rows: int
    row_len: int
    x_pixel_stride: Optional[int] = None
    acc_pixel_stride: Optional[int] = None


class AccessOffsets:
    """Element offsets of a block's loads and stores at points of its inner loops (``inner``: the loop
    variables, every other variable at 0), from the block's ``bindings`` of iteration variables."""

    def __init__(self, bindings: dict, inner: list) -> None:
        self.bindings, self.inner = bindings, inner
        self.outer = {var: 0 for var in _free_vars(bindings) if not any(var.same_as(v) for v in inner)}
        self.origin = [0] * len(inner)
        # The matchers ask several accesses at one point and one access at many points: the block's values per
        # point (and values of `outer`, which a caller may set: depthwise_spread) and each access's (index,
        # extent) pairs are computed once (reading TVM's containers and evaluating the bindings dominated).
        self._values_at: dict[tuple[tuple[int, ...], tuple[int, ...]], dict] = {}
        self._layouts: dict = {}

    def offset(self, access, point: list[int]) -> int:
        """The element offset ``access`` reads or writes with the inner loops at ``point`` (compact row-major)."""
        values = self._block_values(point)
        offset = 0
        for index, extent in self._layout(access):
            offset = offset * int(extent) + evaluate_index(index, values)
        return offset

    def index(self, access, point: list[int]) -> list[int]:
        """The indices ``access`` reads or writes with the inner loops at ``point``, one per buffer axis."""
        block_values = self._block_values(point)
        return [evaluate_index(index, block_values) for index in access.indices]

    def _layout(self, access) -> tuple[tuple[object, object], ...]:
        """``access``'s index expressions, each with its buffer axis's extent (as TVM's containers hold them)."""
        layout = self._layouts.get(access)
        if layout is None:
            layout = tuple(zip(list(access.indices), list(accessed_buffer(access).shape)))
            self._layouts[access] = layout
        return layout

    def _block_values(self, point: list[int]) -> dict:
        """The block's iteration variables' values with the inner loops at ``point`` (the caller must not
        change the dict: it is kept for the next question at the same point)."""
        key = (tuple(point), tuple(self.outer.values()))
        cached = self._values_at.get(key)
        if cached is None:
            values = dict(self.outer)
            values.update(zip(self.inner, point))
            cached = {block_var: evaluate_index(value, values) for block_var, value in self.bindings.items()}
            self._values_at[key] = cached
        return cached

    def value(self, expr, point: list[int]) -> int:
        """The value of the index expression ``expr`` (over the block's iteration variables) at ``point``."""
        return evaluate_index(expr, self._block_values(point))

    def step(self, access, axis: int) -> int:
        """How far ``access`` moves when inner loop ``axis`` steps from the origin by one."""
        point = list(self.origin)
        point[axis] = 1
        return self.offset(access, point) - self.offset(access, self.origin)


def window_geometry(reduction: MacReduction, offsets: AccessOffsets, extents: list[int],
                    pixels: bool, channels: int = DUAL_MAC_CHANNELS) -> Optional[WindowGeometry]:
    """The helper's geometry when the loads fit it: the last reduction loops (``extents``) read the input
    contiguously (each a run inside the next), the first one (of several) steps by a constant row stride, and
    every one of the ``channels`` output channels (the innermost loop) reads its weights as one contiguous run
    in the reduction's order; with ``pixels`` the loop after the reduction moves the input and the
    accumulators, not the weights."""
    origin, offset, step = offsets.origin, offsets.offset, offsets.step
    channel = len(extents) + (1 if pixels else 0)  # the channel loop's axis

    # Inputs: the first reduction loop steps the rows; where it has one iteration (a 1-row kernel) and the
    # inputs are not one run, the first loop that steps does (a 1xK kernel dilated along its columns).
    candidates = [0]
    if extents[0] == 1:
        candidates += [axis for axis in range(1, len(extents) - 1) if extents[axis] > 1][:1]
    window = next(filter(None, (_input_rows(reduction.data, step, extents, first) for first in candidates)), None)
    if window is None:
        return None
    rows, row_len, x_row_stride = window
    # Weights: the whole reduction contiguous per channel, the channels a constant stride apart.
    run = 1
    for axis in range(len(extents) - 1, -1, -1):
        if extents[axis] > 1 and step(reduction.weight, axis) != run:
            return None
        run *= extents[axis]
    if step(reduction.data, channel) != 0:
        return None  # the input must not depend on the output channel
    w_channel_stride = step(reduction.weight, channel)
    if w_channel_stride < run or step(reduction.store, channel) != 1:
        return None
    if any(step(reduction.store, axis) != 0 for axis in range(len(extents))):
        return None
    x_pixel_stride = step(reduction.data, len(extents)) if pixels else 0
    acc_pixel_stride = step(reduction.store, len(extents)) if pixels else 0
    if pixels and (step(reduction.weight, len(extents)) != 0 or acc_pixel_stride < channels):
        return None  # the pixels must share the weights and keep their accumulators apart
    # Linearity over the whole window (a floordiv/floormod index could step evenly at the origin only).
    last_pixel = DUAL_MAC_PIXELS - 1 if pixels else 0
    corner = [e - 1 for e in extents] + ([last_pixel] if pixels else []) + [channels - 1]
    expected_x = (offset(reduction.data, origin) + (rows - 1) * x_row_stride + row_len - 1
                  + last_pixel * x_pixel_stride)
    expected_w = offset(reduction.weight, origin) + (channels - 1) * w_channel_stride + run - 1
    expected_acc = offset(reduction.store, origin) + last_pixel * acc_pixel_stride + channels - 1
    if (offset(reduction.data, corner) != expected_x or offset(reduction.weight, corner) != expected_w
            or offset(reduction.store, corner) != expected_acc):
        return None
    if x_row_stride == row_len:  # the rows follow each other (a copied window): one run, one loop
        rows, row_len = 1, rows * row_len
        x_row_stride = row_len
    if pixels:
        return WindowGeometry(x_row_stride, w_channel_stride, rows, row_len, x_pixel_stride, acc_pixel_stride)
    return WindowGeometry(x_row_stride, w_channel_stride, rows, row_len)


def _input_rows(data: TensorLoad, step: Callable, extents: list[int], first: int) -> Optional[tuple[int, int, int]]:
    """(rows, row_len, x_row_stride) of the input window whose rows reduction loop ``first`` steps (the loops
    before it have one iteration): each later loop a run after the next one, the innermost contiguous (a loop
    of one iteration never steps: a 1x1 window iterated by fused pixels reads nothing along it); None otherwise."""
    run = 1
    for axis in range(len(extents) - 1, first, -1):
        if extents[axis] > 1 and step(data, axis) != run:
            return None
        run *= extents[axis]
    if first == len(extents) - 1:
        return (1, extents[first], extents[first]) if step(data, first) == 1 else None
    return extents[first], run, step(data, first)


def _free_vars(bindings: dict) -> list:
    found: list = []
    stack = list(bindings.values())
    while stack:
        expr = stack.pop()
        if isinstance(expr, tirx.Var):
            if not any(expr.same_as(v) for v in found):
                found.append(expr)
        elif isinstance(expr, tirx.Cast):
            stack.append(expr.value)
        elif type(expr) in INDEX_OPERATORS:
            stack += [expr.a, expr.b]
    return found


def _call_block(reduction: MacReduction, bindings: dict, inner: list,
                geometry: WindowGeometry) -> Optional[s_tir.SBlockRealize]:
    """The call block of the helper of the reduction's input and weight types (_OPS), None where there is none."""
    ops = _OPS.get((str(reduction.data.source.dtype), str(reduction.weight.source.dtype)))
    return None if ops is None else window_call_block(*ops, reduction, bindings, inner, geometry)


def window_call_block(one_pixel: str, two_pixels: Optional[str], reduction: MacReduction, bindings: dict,
                      inner: list, geometry: WindowGeometry, channels: int = DUAL_MAC_CHANNELS
                      ) -> Optional[s_tir.SBlockRealize]:
    """The call block of the helper ``one_pixel`` (geometry of one pixel) or ``two_pixels`` (of DUAL_MAC_PIXELS
    pixels; None: no such helper) for ``channels`` output channels, with the window's sizes as the helpers of
    this module take them (x_row_stride, w_channel_stride, rows, row_len[, x_pixel_stride])."""
    sizes = [geometry.x_row_stride, geometry.w_channel_stride, geometry.rows, geometry.row_len]
    if geometry.x_pixel_stride is None:
        return helper_call_block(one_pixel, reduction, bindings, inner, sizes, channel_tile(reduction, channels))
    if two_pixels is None:
        return None
    offsets = AccessOffsets(bindings, inner)
    corner = [0] * len(inner)
    corner[-2:] = [DUAL_MAC_PIXELS - 1, channels - 1]
    tile = [offsets.index(reduction.store, corner)[axis] - first + 1
            for axis, first in enumerate(offsets.index(reduction.store, offsets.origin))]
    return helper_call_block(two_pixels, reduction, bindings, inner, [*sizes, geometry.x_pixel_stride], tile,
                             second_pixel=len(inner) - 2)


def with_padded_window(realize: s_tir.SBlockRealize, length: int) -> Optional[s_tir.SBlockRealize]:
    """The one-pixel int8 call block ``realize`` (of DUAL_MAC_OP over one run: a copied window) reading ``length``
    inputs instead of its row's, where each channel's weights are at least ``length`` long; None for any other
    call. The caller vouches that inputs past the row are zeros (a window padded by its copy): their products add
    nothing."""
    call = realize.block.body.value if isinstance(realize.block.body, tirx.Evaluate) else None
    if not isinstance(call, tvm.ir.Call) or not isinstance(call.op, tvm.ir.Op) or call.op.name != DUAL_MAC_OP:
        return None
    w_channel_stride, rows, row_len = (int(arg) for arg in call.args[4:7])
    if rows != 1 or not row_len <= length <= w_channel_stride:
        return None
    padded = tirx.call_intrin("int32", DUAL_MAC_OP, *call.args[:3], length, w_channel_stride, 1, length)
    block = realize.block
    return s_tir.SBlockRealize(realize.iter_values, realize.predicate, s_tir.SBlock(
        block.iter_vars, block.reads, block.writes, block.name_hint, tirx.Evaluate(padded), block.init,
        block.alloc_buffers, block.match_buffers, block.annotations))


def channel_tile(reduction: MacReduction, channels: int) -> list[int]:
    """The extents, per axis of the reduction's accumulators, of ``channels`` consecutive ones on the last axis:
    what a helper of one pixel and ``channels`` output channels writes."""
    return [1] * (len(reduction.store.indices) - 1) + [channels]


def helper_call_block(op: str, reduction: MacReduction, bindings: dict, inner: list, sizes: list[int],
                      tile_extents: list[int], second_pixel: Optional[int] = None,
                      operands: Optional[tuple[TensorLoad, ...]] = None) -> s_tir.SBlockRealize:
    """An opaque block calling the helper ``op`` with the accumulators, input and weights at the window's
    origin (the inner loops at 0), each followed by ``sizes`` as it expects them. The accumulators it writes:
    ``tile_extents`` per axis from the origin (`channel_tile` for one pixel's channels).
    With ``second_pixel`` (the index in ``inner`` of a loop of pixels) the second pixel's accumulators (that
    loop at 1) follow the first's as a pointer of their own: a local accumulator buffer is compacted after
    this call is made, so its strides are not known here. ``operands``: the loads whose pointers follow the
    accumulators' (by default the input's and the weights', ``reduction.data`` and ``reduction.weight``)."""

    def at(load, point: dict) -> TensorLoad:
        block_values = {var: substitute_index(value, point) for var, value in bindings.items()}
        return tirx.BufferLoad(accessed_buffer(load), [substitute_index(i, block_values) for i in load.indices])

    at_origin = {var: tirx.const(0, str(var.ty.dtype)) for var in inner}
    acc = at(reduction.store, at_origin)
    read = [at(load, at_origin) for load in (operands or (reduction.data, reduction.weight))]
    pointers = [tirx.address_of(acc)]
    if second_pixel is not None:
        var = inner[second_pixel]
        pointers.append(tirx.address_of(at(reduction.store, {**at_origin, var: tirx.const(1, str(var.ty.dtype))})))
    call = tirx.call_intrin("int32", op, *pointers, *(tirx.address_of(load) for load in read), *sizes)
    # The helper writes the tile's accumulators and reads the whole input and weight parameters as far as
    # this block's dependences go.
    tile = tirx.BufferRegion(acc.source,
                             [tvm.ir.Range.from_min_extent(i, e) for i, e in zip(acc.indices, tile_extents)])
    reads = [tile, *(_whole(load.source) for load in read)]
    block = s_tir.SBlock([], reads, [tile], "dual_mac", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def _whole(buffer) -> tirx.BufferRegion:
    """All of ``buffer``."""
    return tirx.BufferRegion(buffer, [tvm.ir.Range.from_min_extent(0, d) for d in buffer.shape])
