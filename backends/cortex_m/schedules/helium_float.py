"""Helium's float MAC schedule: a float CONV_2D or FULLY_CONNECTED reduction tiled to output channels (and to
PIXEL_TILE pixels: ``tvm_ext.schedule.float_schedule``) as one call of ``<prefix>_fmac_f32`` (one pixel) or
``<prefix>_fmac_f32x2`` (two) per tile (``backends.cortex_m.helpers.templates.helium_float.h.in``: four float lanes
per vector, the weights of a tap's channels one VLDRW, one VMUL by the scalar input and one VADD per vector and
pixel).

On an FPU core the scalar kernel spends per tap and tile of 8 channels x 2 pixels 8 weight loads, 2 input loads
and 16 multiply-adds (each a VMUL and a VADD: the bundle's C is ISO C99, which contracts nothing); the helper 2
weight vector loads, 2 input loads, 4 VMULs and 4 VADDs. Which reductions qualify (``float_mac_replacement``): float32
``acc[..] = acc[..] + x[..] * w[..]`` read affinely with no padding test, whose innermost loop is the tile's
output channels (unit stride in the weights, TOPI's HWIO layout, and in the accumulators, not in the input),
optionally a loop of PIXEL_TILE pixels outside it (moving the input and the accumulators, not the weights), the
reduction loops outside those reading the input as ``rows`` runs of ``row_len`` contiguous elements and the
weights a constant tap stride apart within a row. Each channel's products are added in the same order with the
same two roundings per step: the scalar kernel's sums bit for bit (but for denormals, which MVE's float lanes
flush to zero; the helper's contract). A padded reduction (its test inside the loops: float kernels are not
border-split) keeps its scalar loops.
"""

from __future__ import annotations

import functools
from typing import Optional

import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.helpers import HELIUM_FLOAT_HELPERS
from backends.cortex_m.helpers.helium_c import fmac_f32_helper_name
from backends.cortex_m.schedules.dual_mac import AccessOffsets, MacReduction, _input_rows, helper_call_block
from tvm_ext.schedule.float_schedule import PIXEL_TILE
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

FMAC_F32_OP = "tvm_ext.fmac_f32"
FMAC_F32X2_OP = "tvm_ext.fmac_f32x2"

FMAC_F32_ACCESS = HelperAccess((
    # (acc, x, w, x_row_stride, w_row_stride, w_tap_stride, rows, row_len, channels)
    PointerAccess(0, (Axis(Arg(8), 1),)),
    PointerAccess(1, (Axis(Arg(6), Arg(3)), Axis(Arg(7), 1))),
    PointerAccess(2, (Axis(Arg(6), Arg(4)), Axis(Arg(7), Arg(5)), Axis(Arg(8), 1))),
))
FMAC_F32X2_ACCESS = HelperAccess((
    # (acc_a, acc_b, x, w, x_row_stride, w_row_stride, w_tap_stride, rows, row_len, channels, x_pixel_stride)
    PointerAccess(0, (Axis(Arg(9), 1),)),
    PointerAccess(1, (Axis(Arg(9), 1),)),
    PointerAccess(2, (Axis(PIXEL_TILE, Arg(10)), Axis(Arg(7), Arg(4)), Axis(Arg(8), 1))),
    PointerAccess(3, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(Arg(9), 1))),
))
register_helper_call(FMAC_F32_OP, HELIUM_FLOAT_HELPERS, functools.partial(fmac_f32_helper_name, pixels=1),
                     FMAC_F32_ACCESS)
register_helper_call(FMAC_F32X2_OP, HELIUM_FLOAT_HELPERS, functools.partial(fmac_f32_helper_name, pixels=2),
                     FMAC_F32X2_ACCESS)


def _float_load(expr) -> Optional[TensorLoad]:
    """``expr`` when it is a load of a float32 buffer, else None."""
    return expr if isinstance(expr, TensorLoad) and str(expr.source.dtype) == "float32" else None


def float_mac_reduction(block: s_tir.SBlock) -> Optional[MacReduction]:
    """The block's ``acc = acc + x * w`` over float32 loads (acc, x and w), or None for any other body."""
    store = block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "float32":
        return None
    value = store.value
    if not isinstance(value, tirx.Add) or not isinstance(value.a, TensorLoad) or not isinstance(value.b, tirx.Mul):
        return None
    if not value.a.source.same_as(store.buffer) or not all(
            tvm_ffi.structural_equal(i, j) for i, j in zip(value.a.indices, store.indices)):
        return None
    data, weight = _float_load(value.b.a), _float_load(value.b.b)
    if data is None or weight is None:
        return None
    return MacReduction(store, data, weight)


def float_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The call block of ``<prefix>_fmac_f32`` (or ``_f32x2`` with a loop of PIXEL_TILE pixels) computing what
    ``loops`` (For nodes: the reduction loops, optionally the pixel loop, then the channel loop, innermost) around
    ``realize`` compute, or None where the loads do not fit it (the module docstring)."""
    reduction = float_mac_reduction(realize.block)
    if reduction is None or len(loops) < 2:
        return None
    if not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0
               for loop in loops):
        return None
    channels = int(loops[-1].extent)
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        pixels = len(loops) > 2 and offsets.step(reduction.store, len(loops) - 2) != 0
        if pixels and int(loops[-2].extent) != PIXEL_TILE:
            return None
        extents = [int(loop.extent) for loop in (loops[:-2] if pixels else loops[:-1])]
        sizes = _float_window(reduction, offsets, extents, pixels, channels)
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    if sizes is None:
        return None
    tile = [1] * (len(reduction.store.indices) - 1) + [channels]
    if not pixels:
        return helper_call_block(FMAC_F32_OP, reduction, bindings, inner, [*sizes[:-1], channels], tile)
    corner = [0] * len(inner)
    corner[-2:] = [PIXEL_TILE - 1, channels - 1]
    tile = [last - first + 1 for last, first in zip(offsets.index(reduction.store, corner),
                                                     offsets.index(reduction.store, offsets.origin))]
    return helper_call_block(FMAC_F32X2_OP, reduction, bindings, inner, [*sizes[:-1], channels, sizes[-1]], tile,
                             second_pixel=len(inner) - 2)


def _float_window(reduction: MacReduction, offsets: AccessOffsets, extents: list[int], pixels: bool,
                  channels: int) -> Optional[list[int]]:
    """[x_row_stride, w_row_stride, w_tap_stride, rows, row_len, x_pixel_stride] in elements when the reduction
    loops (``extents``) read the input as rows of contiguous runs and the weights a constant tap stride apart
    within a row, the channel loop (innermost) steps weights and accumulators by one and not the input, and the
    pixel loop (with ``pixels``) moves input and accumulators, not the weights; else None. Checked at the far
    corner too (a floordiv/floormod index could step evenly at the origin only)."""
    step, offset, origin = offsets.step, offsets.offset, offsets.origin
    data, weight, store = reduction.data, reduction.weight, reduction.store
    channel = len(extents) + (1 if pixels else 0)
    if step(data, channel) != 0 or step(weight, channel) != 1 or step(store, channel) != 1:
        return None
    if any(step(store, axis) != 0 for axis in range(len(extents))):
        return None
    candidates = [0]
    if extents[0] == 1:
        candidates += [axis for axis in range(1, len(extents) - 1) if extents[axis] > 1][:1]
    first, window = next(((first, found) for first, found in ((first, _input_rows(data, step, extents, first))
                                                              for first in candidates) if found), (0, None))
    if window is None:
        return None
    rows, row_len, x_row_stride = window
    # Weights: within a row (the loops after `first`) one tap stride over the flattened taps; rows `first` apart.
    tap_axes = [axis for axis in range(first + 1, len(extents)) if extents[axis] > 1]
    w_tap_stride = step(weight, tap_axes[-1]) if tap_axes else channels
    if first == len(extents) - 1:  # one loop: the row itself
        w_tap_stride, w_row_stride = step(weight, first), 0
        rows, row_len, x_row_stride = 1, extents[first], extents[first]
    else:
        run = 1
        for axis in range(len(extents) - 1, first, -1):
            if extents[axis] > 1 and step(weight, axis) != run * w_tap_stride:
                return None
            run *= extents[axis]
        w_row_stride = step(weight, first)
    if w_tap_stride < channels and row_len > 1:
        return None  # a tap's channels would overlap the next tap's
    x_pixel_stride = step(data, len(extents)) if pixels else 0
    if pixels and (step(weight, len(extents)) != 0 or step(store, len(extents)) < channels):
        return None  # the pixels must share the weights and keep their accumulators apart
    last_pixel = PIXEL_TILE - 1 if pixels else 0
    corner = [e - 1 for e in extents] + ([last_pixel] if pixels else []) + [channels - 1]
    expected_x = offset(data, origin) + (rows - 1) * x_row_stride + row_len - 1 + last_pixel * x_pixel_stride
    expected_w = offset(weight, origin) + (rows - 1) * w_row_stride + (row_len - 1) * w_tap_stride + channels - 1
    expected_acc = offset(store, origin) + last_pixel * step(store, len(extents)) + channels - 1 if pixels else \
        offset(store, origin) + channels - 1
    if offset(data, corner) != expected_x or offset(weight, corner) != expected_w \
            or offset(store, corner) != expected_acc:
        return None
    return [x_row_stride, w_row_stride, w_tap_stride, rows, row_len, x_pixel_stride]
