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
flush to zero; the helper's contract).

A padded reduction reads each tap through ``if_then_else(inside, x, 0)`` inside its loops (float kernels are not
border-split: ``tvm_ext.schedule.border_split``); ``padded_float_calls`` (run with Helium's epilogue calls, on the
scheduled function) tests once per tile whether its whole window lies inside the image and then makes the
reduction the helper's call, and a border tile one call of the one-pixel helper per pixel and tap inside the
image over the tap's input channels (pretrainedResnet on cortex-m55: 35,747,983 instructions before, 13,832,449
with both; its code 8,556 -> 6,152 B). A depthwise tile (depth multiplier 1: each channel's input and weight the
tap's lanes) takes the depthwise form of the same helpers, a border tap one call over its channels.

Last, a tile's epilogue (the loop over its channels storing ``act(acc + bias)``, or ``act((acc + bias) + res)``
with a residual ADD fused, act a ReLU's or ReLU6's bounds or none) is one call of ``<prefix>_bias_act_f32``
(``_bias_res_act_f32``), the same expressions four lanes per step (``float_epilogue_calls``).

The same replacements serve DSP cores with a scalar FPU and no MVE (cortex-m4f, m7, m33), with the ops of another
library (``FloatOps``: ``FPU_FLOAT_OPS``, the helpers of ``fpu_float.h.in``, same names and contracts, whose groups
of eight channels load a tap's weights with one VLDM and keep the scalar kernel's VMUL and VADD): only for channel
counts of whole groups of eight (``FloatOps.group``; a tile of four keeps its scalar loops) and no depthwise
reductions (``FloatOps.dw_one`` None). On cortex-m4f, with ``float_tiles``: pretrainedResnet 36,088,312 -> 30,192,264
instructions (code 8,920 -> 7,524 B), vww_96_float 27,861,948 -> 24,047,746 (13,540 -> 13,348 B).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad
from tvm.sym import Analyzer

from backends.backend import HelperLibrary
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.helpers import FPU_FLOAT_HELPERS, HELIUM_FLOAT_HELPERS
from backends.cortex_m.helpers.helium_c import fmac_f32_helper_name
from backends.cortex_m.schedules.conv_tiles import _always
from backends.cortex_m.schedules.dual_mac import (AccessOffsets, MacReduction, _input_rows, _whole, accumulation,
                                                helper_call_block)
from tvm_ext.schedule.float_schedule import PIXEL_TILE
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.kernel_names import REDUCTION_CALL_ATTR
from tvm_ext.tir.tir_walk import map_leaves, walk, with_root_loops_replaced

HELIUM_FLOAT_TILE_CODE_BYTES = 80
"""The code a float MAC kernel's tile (the helpers inlined: its accumulators zeroed on the stack, the vector MAC, the
epilogue) adds on a Helium core against one accumulator in TVM's loops, at the least (cortex-m55 hello_world_float's
16-unit layers: 168 -> 64 B over 1 input, 200 -> 120 B over 16)."""
HELIUM_FLOAT_UNTILED_LOST_PER_MAC = 8.6
"""The instructions a float MAC takes more with one accumulator than in the tile on a Helium core, at the most measured
(hello_world_float's 16-unit layers: 80 -> 218 instructions over 16 MACs, 399 -> 2,099 over 256)."""
HELIUM_FLOAT_TILE_MIN_MACS = int(HELIUM_FLOAT_TILE_CODE_BYTES * INSTRUCTIONS_PER_BYTE / HELIUM_FLOAT_UNTILED_LOST_PER_MAC)
"""The fewest MACs of one call at which a float MAC kernel takes the tile on a Helium core
(`KernelSchedules.float_tile_min_macs`): where the instructions it saves pay its code at the one price of code."""

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
FMAC_DW_F32_OP = "tvm_ext.fmac_dw_f32"
FMAC_DW_F32X2_OP = "tvm_ext.fmac_dw_f32x2"
FMAC_DW_F32_ACCESS = HelperAccess((
    # (acc, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, channels)
    PointerAccess(0, (Axis(Arg(9), 1),)),
    PointerAccess(1, (Axis(Arg(7), Arg(3)), Axis(Arg(8), Arg(4)), Axis(Arg(9), 1))),
    PointerAccess(2, (Axis(Arg(7), Arg(5)), Axis(Arg(8), Arg(6)), Axis(Arg(9), 1))),
))
FMAC_DW_F32X2_ACCESS = HelperAccess((
    # (acc_a, acc_b, x, w, x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, channels,
    #  x_pixel_stride)
    PointerAccess(0, (Axis(Arg(10), 1),)),
    PointerAccess(1, (Axis(Arg(10), 1),)),
    PointerAccess(2, (Axis(PIXEL_TILE, Arg(11)), Axis(Arg(8), Arg(4)), Axis(Arg(9), Arg(5)), Axis(Arg(10), 1))),
    PointerAccess(3, (Axis(Arg(8), Arg(6)), Axis(Arg(9), Arg(7)), Axis(Arg(10), 1))),
))
BIAS_ACT_OP = "tvm_ext.bias_act_f32"
BIAS_RES_ACT_OP = "tvm_ext.bias_res_act_f32"
BIAS_ACT_ACCESS = HelperAccess((
    # (out, acc, bias, channels, low, high, clamp)
    *(PointerAccess(pointer, (Axis(Arg(3), 1),)) for pointer in (0, 1, 2)),
))
BIAS_RES_ACT_ACCESS = HelperAccess((
    # (out, acc, bias, res, channels, low, high, clamp)
    *(PointerAccess(pointer, (Axis(Arg(4), 1),)) for pointer in (0, 1, 2, 3)),
))


@dataclass(frozen=True)
class FloatOps:
    """The TIR ops of one library of float helpers (the same C names and contracts: Helium's `helium_float.h.in`,
    a scalar FPU core's `fpu_float.h.in`): a convolution's tile of one and two pixels, a depthwise one's (None: a
    depthwise reduction keeps its scalar loops), and the tile epilogues without and with a residual; ``group``: the
    channel counts the helpers take are its multiples (a tile of another count keeps its scalar loops);
    ``in_place_sums``: a running sum's step ``acc = acc + x`` (a pool's, the epilogue's form with ``acc`` for the
    output and ``x`` for the bias) is an epilogue call too."""

    one: str
    two: str
    dw_one: Optional[str]
    dw_two: Optional[str]
    bias_act: str
    bias_res_act: str
    group: int = 1
    in_place_sums: bool = True

    @staticmethod
    def registered(library: HelperLibrary, suffix: str = "", depthwise: bool = True, group: int = 1,
                   in_place_sums: bool = True) -> "FloatOps":
        """The ops (named with ``suffix`` after each of Helium's names) registered as calls of ``library``, the
        depthwise ones only where ``depthwise``, for channel counts multiples of ``group``; the epilogue's call also
        for a running sum's step ``acc = acc + x`` (a pool's) where ``in_place_sums``."""
        ops = FloatOps(FMAC_F32_OP + suffix, FMAC_F32X2_OP + suffix, FMAC_DW_F32_OP + suffix if depthwise else None,
                       FMAC_DW_F32X2_OP + suffix if depthwise else None, BIAS_ACT_OP + suffix,
                       BIAS_RES_ACT_OP + suffix, group, in_place_sums)
        for op, name, access in (
                (ops.dw_one, functools.partial(fmac_f32_helper_name, pixels=1, depthwise=True), FMAC_DW_F32_ACCESS),
                (ops.dw_two, functools.partial(fmac_f32_helper_name, pixels=2, depthwise=True), FMAC_DW_F32X2_ACCESS),
                (ops.one, functools.partial(fmac_f32_helper_name, pixels=1), FMAC_F32_ACCESS),
                (ops.two, functools.partial(fmac_f32_helper_name, pixels=2), FMAC_F32X2_ACCESS),
                (ops.bias_act, lambda prefix: f"{prefix}_bias_act_f32", BIAS_ACT_ACCESS),
                (ops.bias_res_act, lambda prefix: f"{prefix}_bias_res_act_f32", BIAS_RES_ACT_ACCESS)):
            if op is not None:
                register_helper_call(op, library, name, access)
        return ops


HELIUM_FLOAT_OPS = FloatOps.registered(HELIUM_FLOAT_HELPERS)
"""Helium's: MVE's float lanes."""
FPU_FLOAT_OPS = FloatOps.registered(FPU_FLOAT_HELPERS, "_fpu", depthwise=False, group=8, in_place_sums=False)
"""A scalar FPU core's (no MVE): a group's weights one VLDM, the sums its VMUL and VADD, whole groups of eight
channels (a tile of four keeps its scalar loops: no second copy of the group's code); no depthwise calls (on
vww_96_float's 6x6 and 12x12 layers the border's one call per tap cost more than the scalar loops saved); a pool's
running sum keeps its loop (the out-of-line epilogue's call per tap of pretrainedResnet's 8x8 average pool:
10,584 -> 17,174 instructions)."""


def _float_load(expr) -> Optional[TensorLoad]:
    """``expr`` when it is a load of a float32 buffer, else None."""
    return expr if isinstance(expr, TensorLoad) and str(expr.source.dtype) == "float32" else None


def float_mac_reduction(block: s_tir.SBlock) -> Optional[MacReduction]:
    """The block's ``acc = acc + x * w`` over float32 loads (acc, x and w), or None for any other body."""
    return accumulation(block, "float32", _float_load, _float_load)


def float_mac_replacement(realize: s_tir.SBlockRealize, loops: list,
                          ops: FloatOps = HELIUM_FLOAT_OPS) -> Optional[s_tir.SBlockRealize]:
    """The call block of ``<prefix>_fmac_f32`` (or ``_f32x2`` with a loop of PIXEL_TILE pixels; the depthwise
    ``_fmac_dw_f32`` and ``_f32x2`` where the channel loop moves the input too) computing what ``loops`` (For
    nodes: the reduction loops, optionally the pixel loop, then the channel loop, innermost) around ``realize``
    compute, or None where the loads do not fit it (the module docstring); its op from ``ops``."""
    reduction = float_mac_reduction(realize.block)
    if reduction is None or not loops:
        return None
    if not all(isinstance(loop.extent, tirx.IntImm) and isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0
               for loop in loops):
        return None
    channels = int(loops[-1].extent)
    if channels % ops.group:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        pixels = len(loops) > 2 and offsets.step(reduction.store, len(loops) - 2) != 0
        if pixels and int(loops[-2].extent) != PIXEL_TILE:
            return None
        extents = [int(loop.extent) for loop in (loops[:-2] if pixels else loops[:-1])]
        depthwise = offsets.step(reduction.data, len(loops) - 1) == 1
        if depthwise:
            sizes = _depthwise_window(reduction, offsets, extents, pixels, channels)
        else:
            sizes = _float_window(reduction, offsets, extents, pixels, channels) if extents else None
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    one, two = (ops.dw_one, ops.dw_two) if depthwise else (ops.one, ops.two)
    if sizes is None or one is None:
        return None
    tile = [1] * (len(reduction.store.indices) - 1) + [channels]
    if not pixels:
        return _reduction_call(helper_call_block(one, reduction, bindings, inner, [*sizes[:-1], channels], tile))
    corner = [0] * len(inner)
    corner[-2:] = [PIXEL_TILE - 1, channels - 1]
    tile = [last - first + 1 for last, first in zip(offsets.index(reduction.store, corner),
                                                     offsets.index(reduction.store, offsets.origin))]
    return _reduction_call(helper_call_block(two, reduction, bindings, inner, [*sizes[:-1], channels, sizes[-1]],
                                             tile, second_pixel=len(inner) - 2))


def _reduction_call(realize: s_tir.SBlockRealize, reads: int | list[int] = 1) -> s_tir.SBlockRealize:
    """The call block ``realize`` annotated as a reduction's (REDUCTION_CALL_ATTR: the kernel's C then names its
    weights and bias by role, as the scalar kernel's, tvm_ext.tir.kernel_names.constant_roles), ``reads`` the
    annotation's value (1: all its reads are the reduction's; a list: those of the call's arguments there)."""
    block = realize.block
    annotations = {**block.annotations, REDUCTION_CALL_ATTR: reads}
    annotated = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, block.body, block.init,
                             block.alloc_buffers, block.match_buffers, annotations)
    return s_tir.SBlockRealize(realize.iter_values, realize.predicate, annotated)


def _channels_step(reduction: MacReduction, offsets: AccessOffsets, extents: list[int], pixels: bool,
                    data_step: int) -> bool:
    """Whether the channel loop (innermost, after the reduction loops of ``extents`` and with ``pixels`` the pixel
    loop) steps the input by ``data_step`` (0: a convolution's, 1: a depthwise one's) and the weights and the
    accumulators by one, and the reduction loops leave the accumulators in place."""
    step = offsets.step
    channel = len(extents) + (1 if pixels else 0)
    return (step(reduction.data, channel) == data_step and step(reduction.weight, channel) == 1
            and step(reduction.store, channel) == 1 and all(step(reduction.store, axis) == 0
                                                           for axis in range(len(extents))))


def _depthwise_window(reduction: MacReduction, offsets: AccessOffsets, extents: list[int], pixels: bool,
                      channels: int) -> Optional[list[int]]:
    """[x_row_stride, x_col_stride, w_row_stride, w_col_stride, rows, cols, x_pixel_stride] in elements when the
    channel loop (innermost) steps input, weights and accumulators by one, at most two of the reduction loops
    (``extents``) iterate (the window's rows, then its columns, each a constant stride: none, one column), and
    the pixel loop (with ``pixels``) moves input and accumulators, not the weights; else None. Checked at the far
    corner too."""
    step, offset, origin = offsets.step, offsets.offset, offsets.origin
    data, weight, store = reduction.data, reduction.weight, reduction.store
    if not _channels_step(reduction, offsets, extents, pixels, 1):
        return None
    window = [axis for axis in range(len(extents)) if extents[axis] > 1]
    if len(window) > 2:
        return None
    strides = [(step(data, axis), step(weight, axis), extents[axis]) for axis in window]
    strides = [(0, 0, 1)] * (2 - len(strides)) + strides
    (x_row, w_row, rows), (x_col, w_col, cols) = strides
    x_pixel_stride = step(data, len(extents)) if pixels else 0
    if pixels and (step(weight, len(extents)) != 0 or step(store, len(extents)) < channels):
        return None
    last_pixel = PIXEL_TILE - 1 if pixels else 0
    corner = [e - 1 for e in extents] + ([last_pixel] if pixels else []) + [channels - 1]
    far = (rows - 1, cols - 1)
    if offset(data, corner) != offset(data, origin) + far[0] * x_row + far[1] * x_col + last_pixel * x_pixel_stride \
            + channels - 1 or offset(weight, corner) != offset(weight, origin) + far[0] * w_row + far[1] * w_col \
            + channels - 1:
        return None
    return [x_row, x_col, w_row, w_col, rows, cols, x_pixel_stride]


def _float_window(reduction: MacReduction, offsets: AccessOffsets, extents: list[int], pixels: bool,
                  channels: int) -> Optional[list[int]]:
    """[x_row_stride, w_row_stride, w_tap_stride, rows, row_len, x_pixel_stride] in elements when the reduction
    loops (``extents``) read the input as rows of contiguous runs and the weights a constant tap stride apart
    within a row, the channel loop (innermost) steps weights and accumulators by one and not the input, and the
    pixel loop (with ``pixels``) moves input and accumulators, not the weights; else None. Checked at the far
    corner too (a floordiv/floormod index could step evenly at the origin only)."""
    step, offset, origin = offsets.step, offsets.offset, offsets.origin
    data, weight, store = reduction.data, reduction.weight, reduction.store
    if not _channels_step(reduction, offsets, extents, pixels, 0):
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


# --- a padded reduction: the call where the tile's whole window lies inside the image -----------------------

_IF_THEN_ELSE = "prim.if_then_else"
_COMPARISONS = (tirx.LT, tirx.LE, tirx.GT, tirx.GE)
_MONOTONE = (tirx.Add, tirx.Sub)
"""Index operators monotone in each operand (with Mul and FloorDiv by a constant: `_monotone`)."""


def padded_float_calls(func: tirx.PrimFunc, ops: FloatOps = HELIUM_FLOAT_OPS) -> tirx.PrimFunc:
    """``func`` with each padded float reduction (a chain of loops from a reduction loop down to an update
    ``acc = acc + if_then_else(inside, x, pad) * w`` over float32) that ``float_mac_replacement`` computes once
    the guard is read as ``x`` guarded per tile: ``if (the test holds over the whole chain) {the helper's call}
    else {the loops as they were}``. The test is each of the guard's conjuncts at every corner of the loops it
    reads (exact: each conjunct is monotone in each loop variable, which it reads once), so the call runs only
    where every tap of the tile's window is inside the image, where the guard reads ``x``: the same sums; a border
    tile calls the one-pixel helper per pixel and tap inside the image (`_border_taps`), else keeps its loops.
    ``func`` itself where there is none. The calls are of ``ops``."""
    return _loops_replaced(func, functools.partial(_guarded_tile, ops=ops))


def _loops_replaced(func: tirx.PrimFunc, replacement) -> tirx.PrimFunc:
    """``func`` with each loop for which ``replacement(loop)`` gives a statement replaced by it
    (``with_root_loops_replaced``), or ``func`` itself where it gives none."""
    found = [False]

    def replaced(loop: tirx.For) -> Optional[tirx.Stmt]:
        new = replacement(loop)
        found[0] = found[0] or new is not None
        return new

    rewritten = with_root_loops_replaced(func, replaced)
    return rewritten if found[0] else func


def _guarded_tile(loop: tirx.For, ops: FloatOps) -> Optional[tirx.Stmt]:
    """The test and calls for the chain of loops from ``loop`` (see `padded_float_calls`), or None."""
    chain = [loop]
    while isinstance(chain[-1].body, tirx.For):
        chain.append(chain[-1].body)
    realize = chain[-1].body
    if not isinstance(realize, s_tir.SBlockRealize) or not _always(realize.predicate):
        return None
    block = realize.block
    guard = _float_guard(block.body)
    if guard is None:
        return None
    bindings = {iv.var: value for iv, value in zip(block.iter_vars, realize.iter_values)}
    reduced = [value for iv, value in zip(block.iter_vars, realize.iter_values)
               if iv.iter_type == tirx.IterVar.CommReduce]
    if not any(_uses(value, loop.loop_var) for value in reduced):
        return None  # the chain does not start at a reduction loop
    clean = _read_as(realize, guard, guard.args[1])
    call = float_mac_replacement(clean, chain, ops)
    if call is None:
        return None
    try:
        test = _inside_everywhere(guard.args[0], bindings, chain)
    except KeyError:
        return None  # a test form this module does not bound: keep the guarded loops
    return tirx.IfThenElse(test, call, _border_taps(chain, clean, guard, bindings, ops) or loop)


def _border_taps(chain: list, clean: s_tir.SBlockRealize, guard: tvm.ir.Call, bindings: dict,
                 ops: FloatOps) -> Optional[tirx.Stmt]:
    """A border tile's reduction as calls of the one-pixel helper over each tap's run (the last reduction loop,
    which the guard does not read: a convolution's input channels; where it does, a depthwise window's columns, the
    tap's channels alone), one call per pixel and tap inside the image, the taps in their order: ``for pixel { for
    taps { if (inside) call } }``; None where the chain has another form. A tap outside the image adds the guard's
    product ``pad * w`` to each sum in the scalar loops: skipped here, which changes no sum where the pad is zero
    and the weights finite (acc + 0 is acc for any acc but -0, which a sum started at +0 never is)."""
    if not isinstance(guard.args[2], tirx.FloatImm) or float(guard.args[2].value) != 0.0:
        return None
    bound = map_leaves(guard.args[0], lambda leaf: bindings.get(leaf, leaf))
    offsets = AccessOffsets({iv.var: value for iv, value in zip(clean.block.iter_vars, clean.iter_values)},
                            [loop.loop_var for loop in chain])
    try:
        pixels = len(chain) > 2 and offsets.step(clean.block.body, len(chain) - 2) != 0
    except KeyError:
        return None
    reductions = chain[:-2] if pixels else chain[:-1]
    run, taps = reductions[-1:], reductions[:-1]
    if _uses(bound, run[0].loop_var):  # a depthwise window's columns: one call per tap over its channels
        run, taps = [], reductions
    if _uses(bound, chain[-1].loop_var):
        return None
    call = float_mac_replacement(clean, [*run, chain[-1]], ops)
    if call is None:
        return None
    body: tirx.Stmt = tirx.IfThenElse(bound, call, None)
    for tap in reversed(([chain[-2]] if pixels else []) + list(taps)):  # the pixels outermost
        body = tirx.For(tap.loop_var, tap.min, tap.extent, tirx.ForKind.SERIAL, body)
    return body


def _float_guard(store) -> Optional[tvm.ir.Call]:
    """The ``if_then_else`` factor of a float32 ``acc = acc + guarded * w`` (or ``w * guarded``), else None."""
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "float32":
        return None
    value = store.value
    if not isinstance(value, tirx.Add) or not isinstance(value.b, tirx.Mul):
        return None
    for factor in (value.b.a, value.b.b):
        if isinstance(factor, tvm.ir.Call) and isinstance(factor.op, tvm.ir.Op) and factor.op.name == _IF_THEN_ELSE:
            return factor
    return None


def _read_as(realize: s_tir.SBlockRealize, guard: tvm.ir.Call, value) -> s_tir.SBlockRealize:
    """The update block ``realize`` with its guarded factor ``guard`` replaced by ``value``."""
    block = realize.block
    store = block.body
    product = store.value.b
    factors = [value if factor.same_as(guard) else factor for factor in (product.a, product.b)]
    new_store = tirx.BufferStore(store.buffer, tirx.Add(store.value.a, tirx.Mul(*factors)), store.indices)
    new_block = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint + "_interior", new_store,
                             block.init, block.alloc_buffers, block.match_buffers, block.annotations)
    return s_tir.SBlockRealize(realize.iter_values, realize.predicate, new_block)


def _inside_everywhere(condition, bindings: dict, chain: list) -> tirx.Expr:
    """``condition`` (a conjunction of comparisons over the block's variables, ``bindings`` their values) held
    at every point of the ``chain`` loops' ranges: each conjunct at every corner of the chain loops it reads.
    KeyError where a conjunct is no comparison, or not monotone in each such loop (`_monotone`)."""
    conjuncts, stack = [], [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, tirx.And):
            stack += [node.a, node.b]
        elif isinstance(node, _COMPARISONS):
            conjuncts.append(node)
        else:
            raise KeyError(type(node).__name__)
    tests = []
    for conjunct in conjuncts:
        bound = map_leaves(conjunct, lambda leaf: bindings.get(leaf, leaf))
        loops = [loop for loop in chain if _uses(bound, loop.loop_var)]
        for loop in loops:
            if _uses(bound.a, loop.loop_var) + _uses(bound.b, loop.loop_var) != 1 or not (
                    _monotone(bound.a) and _monotone(bound.b)):
                raise KeyError("a test not monotone in its loop")
        for corner in itertools.product(*[(loop.min, loop.min + loop.extent - 1) for loop in loops]):
            point = {loop.loop_var: value for loop, value in zip(loops, corner)}
            tests.append(map_leaves(bound, lambda leaf: point.get(leaf, leaf)))
    analyzer = Analyzer()
    test = tirx.const(True, "bool")
    for part in tests:
        simple = analyzer.simplify(part)
        if isinstance(simple, tirx.IntImm) and bool(simple):
            continue
        test = simple if isinstance(test, tirx.IntImm) else tirx.And(test, simple)
    return test


def _uses(expr, var) -> int:
    """How many times ``expr`` reads ``var``."""
    return sum(1 for node in walk(expr) if isinstance(node, tirx.Var) and node.same_as(var))


def _monotone(expr) -> bool:
    """Whether ``expr`` is built of variables and integer constants by +, -, and * or floordiv by a constant
    (positive for floordiv): monotone in each variable it reads once."""
    if isinstance(expr, (tirx.Var, tirx.IntImm)):
        return True
    if isinstance(expr, tirx.Cast):
        return _monotone(expr.value)
    if isinstance(expr, _MONOTONE):
        return _monotone(expr.a) and _monotone(expr.b)
    if isinstance(expr, tirx.Mul):
        return (isinstance(expr.a, tirx.IntImm) and _monotone(expr.b)) or (
            isinstance(expr.b, tirx.IntImm) and _monotone(expr.a))
    if isinstance(expr, tirx.FloorDiv):
        return isinstance(expr.b, tirx.IntImm) and int(expr.b) > 0 and _monotone(expr.a)
    return False


# --- the tile's epilogue: bias, residual and activation four lanes per step --------------------------------

def float_epilogue_calls(func: tirx.PrimFunc, ops: FloatOps = HELIUM_FLOAT_OPS) -> tirx.PrimFunc:
    """``func`` with each loop over a float tile's channels whose one statement stores ``act(acc + bias)`` or
    ``act((acc + bias) + res)`` (act: nothing, ``max(v, low)``, ``min(v, high)`` or ``min(max(v, low), high)``,
    float32 constants; every load and the store stepping one element per channel) as one call of
    ``<prefix>_bias_act_f32`` (``_bias_res_act_f32``): the same expressions four lanes per step. ``func`` itself
    where there is none. The calls are of ``ops``."""
    return _loops_replaced(func, functools.partial(_epilogue_call, ops=ops))


def _activation(value) -> Optional[tuple[object, float, float, int]]:
    """(the activation's argument, low, high, clamp bits: 1 low, 2 high) of ``value``, else None."""
    low, high, clamp = 0.0, 0.0, 0
    if isinstance(value, tirx.Min) and isinstance(value.b, tirx.FloatImm):
        high, clamp, value = float(value.b.value), clamp | 2, value.a
    if isinstance(value, tirx.Max) and isinstance(value.b, tirx.FloatImm):
        low, clamp, value = float(value.b.value), clamp | 1, value.a
    return value, low, high, clamp


def _epilogue_call(loop: tirx.For, ops: FloatOps) -> Optional[tirx.Stmt]:
    """The call replacing the channel loop ``loop`` (see `float_epilogue_calls`), or None."""
    realize = loop.body
    if not isinstance(realize, s_tir.SBlockRealize) or not _always(realize.predicate):
        return None
    if not isinstance(loop.extent, tirx.IntImm) or not isinstance(loop.min, tirx.IntImm) or int(loop.min) != 0:
        return None
    store = realize.block.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "float32":
        return None
    value, low, high, clamp = _activation(store.value)
    terms = []
    while isinstance(value, tirx.Add) and len(terms) < 2:
        terms.insert(0, value.b)
        value = value.a
    terms.insert(0, value)
    if len(terms) not in (2, 3) or not all(_float_load(term) is not None for term in terms):
        return None
    bindings = {iv.var: binding for iv, binding in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = AccessOffsets(bindings, [loop.loop_var])
    channels = int(loop.extent)
    if channels % ops.group:
        return None
    try:
        if any(offsets.step(access, 0) != 1 or offsets.offset(access, [channels - 1]) != offsets.offset(
                access, [0]) + channels - 1 for access in (store, *terms)):
            return None
        origin = {var: substitute_index(binding, {loop.loop_var: tirx.const(0, str(loop.loop_var.ty.dtype))})
                  for var, binding in bindings.items()}
    except KeyError:
        return None

    def at(access) -> TensorLoad:
        buffer = access.buffer if isinstance(access, tirx.BufferStore) else access.source
        return tirx.BufferLoad(buffer, [substitute_index(index, origin) for index in access.indices])

    out, *loads = (at(access) for access in (store, *terms))
    if not ops.in_place_sums and out.source.same_as(loads[0].source):
        return None  # a running sum's step (see FloatOps)
    op = ops.bias_act if len(terms) == 2 else ops.bias_res_act
    call = tirx.call_intrin("int32", op, *(tirx.address_of(load) for load in (out, *loads)),
                            tirx.const(channels, "int32"), tirx.const(low, "float32"), tirx.const(high, "float32"),
                            tirx.const(clamp, "int32"))
    tile = [tvm.ir.Range.from_min_extent(index, 1) for index in out.indices[:-1]]
    written = tirx.BufferRegion(out.source, [*tile, tvm.ir.Range.from_min_extent(out.indices[-1], channels)])
    if offsets.index(store, [channels - 1])[:-1] != offsets.index(store, [0])[:-1]:
        return None  # the channels must run along the output's last axis
    block = s_tir.SBlock([], [_whole(load.source) for load in loads], [written], "bias_act", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)
