"""The bundle's helpers in a kernel written as one TE extern stage (the SVDF state update, the copy runs of
``tvm_ext.kernels.copy_runs``), on DSP cores.

No schedule moves the loops of such a kernel (``tvm_ext.schedule.kernel_schedule`` leaves it as written): its author writes
them in the forms this module recognizes, and ``extern_helper_calls`` replaces each by a helper call that
computes exactly what it does:

- a MAC reduction block under its loops (the reduction loops, then the unit-stride loop of DUAL_MAC_CHANNELS
  accumulators, innermost): the dual MAC (``backends.cortex_m.schedules.dual_mac.dual_mac_replacement``);
- a MAC reduction block under the loops of its tiles (optional), groups of four inputs, DUAL_MAC_CHANNELS
  accumulators and a group's four inputs, the weights interleaved (input 4j + k of channel c of tile v at
  v * s + 16j + 4c + k from the first, the layout of ``tvm_ext.kernels.extern_mac.interleave_weights``):
  ``<prefix>_dual_mac_s8x4_interleaved`` (``backends.cortex_m.helpers.dual_mac_interleaved_c``), two channels'
  weights per load, one call for every tile (the matcher, RISC-V's too: ``interleaved_mac``); over int16 weights
  (widened at compile time)
  ``<prefix>_dual_mac_s16x4_interleaved``, two channels' eight int16 weights per load (an LDM of four words);
- a MAC reduction block under a loop of rows (whole tiles of DUAL_MAC_CHANNELS) around a loop of inputs, the
  weights in rows (input k of row r at r * K + k from the first: ``tvm_ext.kernels.extern_mac.accumulate_rows``), the
  sums starting at the block's init: ``<prefix>_dual_mac_rows_s8`` (``backends.cortex_m.helpers.helium_c``, Helium
  cores' recurrent cells), every tile in one out-of-line call (its own loop over the tiles, the sums in registers);
- a loop over k around a MAC block ``acc[a] += x[x0 + k] * w[w0 + k]`` (one accumulator, int8 or int16 rows: an SVDF
  unit's time product): ``<prefix>_row_dot_s8`` or ``_s16`` (``backends.cortex_m.schedules.row_dot.row_dot1_call``);
  over int8 x and int16 w in SXTB16's lane order (three loops: groups, pairs, lanes) ``<prefix>_row_dot_s8_pairs``;
- a loop ``dst[.. + i] = src[.. + i]`` over i from 0, both runs contiguous: ``<prefix>_copy_ascending``
  (``backends.cortex_m.helpers.copy_c``), word copies. It is the loop's result where ``dst`` is not inside ``src``'s run above
  ``src``: separate buffers, or the state a kernel shifts down in place (its output is its input);
- a loop over i around a loop over j around ``dst[.. + i * dst_stride + j] = src[.. + j * src_stride + i]`` over int8
  (the matrices of ``tvm_ext.kernels.copy_runs.transpose_runs``): ``<prefix>_transpose_s8``
  (``backends.cortex_m.helpers.copy_c``), 4 x 4 blocks a word per row;
- a loop ``dst[.. + i] = max(a[.. + i], b[.. + i])`` over int8, the three runs contiguous (the window taps of
  ``tvm_ext.kernels.copy_runs.max_pool2d_runs``): ``<prefix>_max_s8`` (``backends.cortex_m.helpers.copy_c``),
  four lanes a word;
- a loop ``dst[.. + i] = max(max(src[.. + i], src[.. + i]), ..)`` over int8 whose taps, all of one buffer,
  lie on a grid of rows and columns in row-major order (an unpadded pool's window): ``<prefix>_max_s8_window``,
  the running maximum of four lanes kept in a register over the window.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.helpers import HELIUM_MAC_ROWS_HELPERS, HELIUM_MAX_HELPERS
from backends.cortex_m.helpers.copy_c import (STATE_SHIFT_HELPERS, TRANSPOSE_HELPERS, copy_helper_name,
                                             max_s8_helper_name, max_s8_window_helper_name, state_shift_helper_name,
                                             transpose_helper_name)
from backends.cortex_m.helpers.dual_mac_c import DUAL_MAC_CHANNELS
from backends.cortex_m.helpers.helium_c import mac_rows_helper_name
from backends.cortex_m.helpers.dual_mac_interleaved_c import (INTERLEAVED16_MAC_HELPERS,
                                                             INTERLEAVED_MAC_HELPERS,
                                                             dual_mac_interleaved16_helper_name,
                                                             dual_mac_interleaved_helper_name)
from backends.cortex_m.schedules.row_dot import row_dot1_call
from backends.cortex_m.schedules.dual_mac import (AccessOffsets, dual_mac_replacement, helper_call_block,
                                                  mac_reduction, register_mac_helper)
from backends.cortex_m.schedules.interleaved_mac import (INTERLEAVED_MAC_ACCESS, init_load, interleaved_mac_call,
                                                        with_whole_accumulators)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.extern_stage import STATE_SHIFT_ANNOTATION
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.index_expr import CLAMPED_INDEX_OPERATORS, INDEX_OPERATORS, evaluate_index, substitute_index
from tvm_ext.tir.tir_walk import vars_read, walk, with_root_loops_replaced

COPY_OP = "tvm_ext.copy_ascending"
# The call (dst, src, count, element_bytes): dst[i] and src[i] for i < count, in elements of their own type.
COPY_ACCESS = HelperAccess((PointerAccess(0, (Axis(Arg(2), 1),)), PointerAccess(1, (Axis(Arg(2), 1),))))
register_mac_helper(COPY_OP, copy_helper_name, COPY_ACCESS)
STATE_SHIFT_OP = "tvm_ext.state_shift"
# The ascending copy's call and accesses (the SVDF state shift's helper of the same contract).
register_helper_call(STATE_SHIFT_OP, STATE_SHIFT_HELPERS, state_shift_helper_name, COPY_ACCESS)
MAX_S8_OP = "tvm_ext.max_s8"
# The call (dst, a, b, count): dst[i], a[i] and b[i] for i < count int8.
MAX_S8_ACCESS = HelperAccess(tuple(PointerAccess(k, (Axis(Arg(3), 1),)) for k in range(3)))
register_mac_helper(MAX_S8_OP, max_s8_helper_name, MAX_S8_ACCESS)
MAX_S8_WINDOW_OP = "tvm_ext.max_s8_window"
# The call (dst, src, count, rows, cols, row_stride, col_stride): dst[i] and
# src[r * row_stride + c * col_stride + i] for r < rows, c < cols, i < count int8.
MAX_S8_WINDOW_ACCESS = HelperAccess((PointerAccess(0, (Axis(Arg(2), 1),)), PointerAccess(
    1, (Axis(Arg(3), Arg(5)), Axis(Arg(4), Arg(6)), Axis(Arg(2), 1)))))
register_mac_helper(MAX_S8_WINDOW_OP, max_s8_window_helper_name, MAX_S8_WINDOW_ACCESS)
MAX_OPS = (MAX_S8_OP, MAX_S8_WINDOW_OP)
"""The maximum's ops (two runs, a window's runs) of DSP cores."""
HELIUM_MAX_OPS = ("tvm_ext.helium_max_s8", "tvm_ext.helium_max_s8_window")
"""Their Helium twins: the same calls and accesses, the Helium library (`helium_max_s8.h.in`)."""
register_helper_call(HELIUM_MAX_OPS[0], HELIUM_MAX_HELPERS, max_s8_helper_name, MAX_S8_ACCESS)
register_helper_call(HELIUM_MAX_OPS[1], HELIUM_MAX_HELPERS, max_s8_window_helper_name, MAX_S8_WINDOW_ACCESS)
TRANSPOSE_OP = "tvm_ext.transpose_s8"
# The call (dst, src, rows, cols, dst_stride, src_stride): dst[i * dst_stride + j] and src[j * src_stride + i] for
# i < rows, j < cols int8; its own library.
TRANSPOSE_ACCESS = HelperAccess((PointerAccess(0, (Axis(Arg(2), Arg(4)), Axis(Arg(3), 1))),
                                 PointerAccess(1, (Axis(Arg(3), Arg(5)), Axis(Arg(2), 1)))))
register_helper_call(TRANSPOSE_OP, TRANSPOSE_HELPERS, transpose_helper_name, TRANSPOSE_ACCESS)
INTERLEAVED_MAC_OP = "tvm_ext.dual_mac_s8x4_interleaved"
# The call of `interleaved_mac.INTERLEAVED_MAC_ACCESS` (its matcher is family-neutral: `interleaved_mac_call`).
register_helper_call(INTERLEAVED_MAC_OP, INTERLEAVED_MAC_HELPERS, dual_mac_interleaved_helper_name,
                     INTERLEAVED_MAC_ACCESS)
INTERLEAVED16_MAC_OP = "tvm_ext.dual_mac_s16x4_interleaved"
# The same call and accesses over int16 weights (strides in elements).
register_helper_call(INTERLEAVED16_MAC_OP, INTERLEAVED16_MAC_HELPERS, dual_mac_interleaved16_helper_name,
                     INTERLEAVED_MAC_ACCESS)
INTERLEAVED_MAC_OPS = {"int8": INTERLEAVED_MAC_OP, "int16": INTERLEAVED16_MAC_OP}
"""The interleaved dual MAC's call by its weights' type: int8 as the model gives them, or widened to int16 at compile
time (``tvm_ext.transform.int8.lstm``)."""
ROWS_MAC_OP = "tvm_ext.dual_mac_rows_s8"
# The call (acc, start, x, w, row_len, rows): acc[r] and start[r] for r < rows; x[k] and w[r * row_len + k] for
# k < row_len.
ROWS_MAC_ACCESS = HelperAccess((PointerAccess(0, (Axis(Arg(5), 1),)), PointerAccess(1, (Axis(Arg(5), 1),)),
                                PointerAccess(2, (Axis(Arg(4), 1),)),
                                PointerAccess(3, (Axis(Arg(5), Arg(4)), Axis(Arg(4), 1)))))
register_helper_call(ROWS_MAC_OP, HELIUM_MAC_ROWS_HELPERS, mac_rows_helper_name, ROWS_MAC_ACCESS)


def extern_helper_calls(func: tirx.PrimFunc, state_shift: bool = True,
                        max_ops: tuple[str, str] = MAX_OPS) -> tirx.PrimFunc:
    """``func`` (one TE extern stage: a root block around its statements) with each loop nest of a form
    above replaced by its helper's call (outermost nests first); any other function unchanged. ``state_shift``:
    whether an SVDF state update's marked shift calls the state shift (else the ascending copy); ``max_ops``: the
    maximum's ops of two runs and of a window's runs (MAX_OPS, or Helium's HELIUM_MAX_OPS)."""
    return with_root_loops_replaced(
        func, lambda loop: (_rows_mac_call(loop) or interleaved_mac_call(loop, INTERLEAVED_MAC_OPS) or _mac_call(loop)
                            or row_dot1_call(loop) or copy_call(loop, state_shift) or _window_max_call(loop, max_ops[1])
                            or _max_call(loop, max_ops[0]) or _transpose_call(loop)))


def _mac_call(loop: tirx.For) -> Optional[s_tir.SBlockRealize]:
    """The dual MAC's call computing the perfect loop nest ``loop`` around a MAC block, else None."""
    loops = [loop]
    while isinstance(loops[-1].body, tirx.For):
        loops.append(loops[-1].body)
    realize = loops[-1].body
    if len(loops) < 2 or not isinstance(realize, s_tir.SBlockRealize):
        return None
    return dual_mac_replacement(realize, loops)


def _rows_mac_call(loop: tirx.For) -> Optional[s_tir.SBlockRealize]:
    """The rows MAC's call computing the nest ``loop`` (rows r, whole tiles of DUAL_MAC_CHANNELS, then inputs k,
    around a MAC block over int8 inputs and weights whose init starts the sums) when the block reads x[x0 + k] and
    w[w0 + r * K + k] (K the inputs' count) into acc[a0 + r] from start[s0 + r], every other variable fixed; else
    None."""
    inputs = loop.body
    if not isinstance(inputs, tirx.For) or not isinstance(inputs.body, s_tir.SBlockRealize):
        return None
    loops = [loop, inputs]
    if not all(isinstance(inner.extent, tirx.IntImm) and isinstance(inner.min, tirx.IntImm) and int(inner.min) == 0
               for inner in loops):
        return None
    rows, depth = (int(inner.extent) for inner in loops)
    realize = inputs.body
    reduction = mac_reduction(realize.block)
    start = init_load(realize.block, reduction)
    if start is None or realize.block.init is None or rows % DUAL_MAC_CHANNELS or depth < 1:
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [inner.loop_var for inner in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        for access, steps in ((reduction.data, (0, 1)), (reduction.weight, (depth, 1)), (reduction.store, (1, 0)),
                              (start, (1, 0))):
            origin = offsets.offset(access, offsets.origin)
            if tuple(offsets.step(access, axis) for axis in range(2)) != steps:
                return None
            # linear over the whole nest: its far corner where the steps put it
            if offsets.offset(access, [rows - 1, depth - 1]) \
                    != origin + steps[0] * (rows - 1) + steps[1] * (depth - 1):
                return None
    except KeyError:
        return None  # an index form we do not evaluate: keep the loops
    realize = helper_call_block(ROWS_MAC_OP, reduction, bindings, inner, [depth, rows],
                                [1] * (len(reduction.store.indices) - 1) + [rows],
                                operands=(start, reduction.data, reduction.weight))
    return with_whole_accumulators(realize, rows)


def copy_call(loop: tirx.For, state_shift: bool = False) -> Optional[tirx.Stmt]:
    """The ascending copy's call for ``loop`` when it is ``dst[..] = src[..]`` with both indices stepping one
    element per iteration from 0 (every other variable fixed), else None; with ``state_shift``, the state shift's
    call for such a loop marked ``tvm_ext.tir.extern_stage.STATE_SHIFT_ANNOTATION`` (an SVDF state update's shift)."""
    store = loop.body
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, TensorLoad):
        return None
    runs = _run_starts(loop, store, (store.value,))
    if runs is None:
        return None
    element_bytes = np.dtype(str(store.buffer.dtype)).itemsize
    op = STATE_SHIFT_OP if state_shift and STATE_SHIFT_ANNOTATION in loop.annotations else COPY_OP
    return tirx.Evaluate(tirx.call_intrin("int32", op, *runs, int(loop.extent), element_bytes))


def _transpose_call(loop: tirx.For) -> Optional[tirx.Stmt]:
    """The word transpose's call for the nest ``loop`` (i) around a loop j around ``dst[..] = src[..]`` on int8 when
    dst steps ``dst_stride`` elements per i and one per j, src one per i and ``src_stride`` per j (every other
    variable fixed; the two buffers distinct), else None."""
    inner = loop.body
    if not isinstance(inner, tirx.For):
        return None
    store = inner.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int8" \
            or not isinstance(store.value, TensorLoad) or str(store.value.source.dtype) != "int8" \
            or store.value.source.same_as(store.buffer):
        return None
    if not all(isinstance(nest.extent, tirx.IntImm) and isinstance(nest.min, tirx.IntImm) and int(nest.min) == 0
               for nest in (loop, inner)):
        return None
    rows, cols = int(loop.extent), int(inner.extent)
    i, j = loop.loop_var, inner.loop_var
    accesses = ((store.buffer, store.indices), (store.value.source, store.value.indices))
    if not all(_affine_in(index, (i, j)) for _, indices in accesses for index in indices):
        return None  # the steps below read three points: only an affine index is known everywhere from them
    try:
        steps = []
        for buffer, indices in accesses:
            at = [nest_offset(buffer, indices, {i: di, j: dj}) for di, dj in ((0, 0), (1, 0), (0, 1))]
            row_step, col_step = at[1] - at[0], at[2] - at[0]
            # in the buffer's shape over the whole nest (no index wrapping into another dimension): its far
            # corner where the steps put it
            if nest_offset(buffer, indices, {i: rows - 1, j: cols - 1}) \
                    != at[0] + row_step * (rows - 1) + col_step * (cols - 1):
                return None
            steps.append((row_step, col_step))
    except KeyError:
        return None  # an index form we do not evaluate: keep the loops
    (dst_stride, dst_col), (src_row, src_stride) = steps
    if dst_col != 1 or src_row != 1:
        return None
    origin = {i: tirx.const(0, str(i.ty.dtype)), j: tirx.const(0, str(j.ty.dtype))}
    starts = [tirx.address_of(tirx.BufferLoad(buffer, [substitute_index(index, origin) for index in indices]))
              for buffer, indices in accesses]
    return tirx.Evaluate(tirx.call_intrin("int32", TRANSPOSE_OP, *starts, rows, cols, dst_stride, src_stride))


def _affine_in(index, loop_vars: tuple) -> bool:
    """Whether the index expression ``index`` is affine in ``loop_vars`` (each other variable fixed): no floor
    division or modulo of an operand reading one of them, no product of two operands that both read one."""
    def reads(node) -> bool:  # (vars_read of a variable alone is empty: it reads nothing below it)
        return any(node.same_as(var) or var in vars_read(node) for var in loop_vars)
    return not any((isinstance(node, (tirx.FloorDiv, tirx.FloorMod)) and reads(node))
                   or (isinstance(node, tirx.Mul) and reads(node.a) and reads(node.b)) for node in walk(index))


def _max_call(loop: tirx.For, op: str = MAX_S8_OP) -> Optional[tirx.Stmt]:
    """The int8 maximum's call (``op``) for ``loop`` when it is ``dst[..] = max(a[..], b[..])`` on int8 with the three
    indices stepping one element per iteration from 0 (every other variable fixed), else None."""
    store = loop.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int8" \
            or not isinstance(store.value, tirx.Max):
        return None
    loads = (store.value.a, store.value.b)
    if not all(isinstance(load, TensorLoad) for load in loads):
        return None
    # a window's first valid tap: indices clamped by max or min, not of the loop's variable (which would
    # break the runs' steps between the points _run_starts checks)
    if any(isinstance(node, (tirx.Max, tirx.Min)) and loop.loop_var in vars_read(node)
           for index in (*store.indices, *(i for load in loads for i in load.indices)) for node in walk(index)):
        return None
    runs = _run_starts(loop, store, loads, CLAMPED_INDEX_OPERATORS)
    if runs is None:
        return None
    return tirx.Evaluate(tirx.call_intrin("int32", op, *runs, int(loop.extent)))


def _window_max_call(loop: tirx.For, op: str = MAX_S8_WINDOW_OP) -> Optional[tirx.Stmt]:
    """The window maximum's call (``op``) for ``loop`` when it is ``dst[..] = max(max(src[..], src[..]), ..)`` on int8,
    its taps (loads of one buffer, each stepping one element per iteration) at offsets
    ``r * row_stride + c * col_stride`` from the first for r < rows, c < cols in row-major order, else None."""
    store = loop.body
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int8" \
            or not isinstance(store.value, tirx.Max):
        return None
    taps = _max_leaves(store.value)
    if not all(isinstance(tap, TensorLoad) and tap.source.same_as(taps[0].source) for tap in taps) \
            or taps[0].source.same_as(store.buffer):
        return None
    runs = _run_starts(loop, store, tuple(taps))
    if runs is None:
        return None
    try:
        offsets = [_flat_offset(tap.source, tap.indices, loop.loop_var, 0) for tap in taps]
    except KeyError:
        return None
    grid = _grid(tuple(offset - offsets[0] for offset in offsets))
    if grid is None:
        return None
    return tirx.Evaluate(tirx.call_intrin("int32", op, runs[0], runs[1], int(loop.extent), *grid))


def _max_leaves(value: tirx.PrimExpr) -> list:
    """The operands of a tree of max, left to right."""
    if isinstance(value, tirx.Max):
        return [*_max_leaves(value.a), *_max_leaves(value.b)]
    return [value]


def _grid(deltas: tuple[int, ...]) -> Optional[tuple[int, int, int, int]]:
    """(rows, cols, row_stride, col_stride) when ``deltas`` (from the first, which is 0) are
    ``r * row_stride + c * col_stride`` for r < rows, c < cols in row-major order, the most columns first;
    else None."""
    count = len(deltas)
    for cols in range(count, 0, -1):
        if count % cols:
            continue
        col_stride = deltas[1] if cols > 1 else 0
        row_stride = deltas[cols] if count > cols else 0
        if all(deltas[k] == (k // cols) * row_stride + (k % cols) * col_stride for k in range(count)):
            return count // cols, cols, row_stride, col_stride
    return None


def _run_starts(loop: tirx.For, store: tirx.BufferStore, loads: tuple,
                operators: dict = INDEX_OPERATORS) -> Optional[tuple]:
    """The addresses of the first elements of ``store``'s and ``loads``' runs when each steps one element per
    iteration of ``loop`` (from 0, of a constant count of at least 2, all of one type; indices of the binary
    ``operators`` of ``tvm_ext.tir.index_expr``), else None."""
    if any(str(load.source.dtype) != str(store.buffer.dtype) for load in loads) \
            or not isinstance(loop.extent, tirx.IntImm) or not isinstance(loop.min, tirx.IntImm) \
            or int(loop.min) != 0:
        return None
    count = int(loop.extent)
    if count < 2:
        return None
    accesses = ((store.buffer, store.indices), *((load.source, load.indices) for load in loads))
    at_start = {loop.loop_var: tirx.const(0, str(loop.loop_var.ty.dtype))}
    try:
        for buffer, indices in accesses:
            first, last = (_flat_offset(buffer, indices, loop.loop_var, i, operators) for i in (0, count - 1))
            if last - first != count - 1 or _flat_offset(buffer, indices, loop.loop_var, 1, operators) != first + 1:
                return None
        return tuple(tirx.address_of(tirx.BufferLoad(buffer, [substitute_index(i, at_start, operators)
                                                              for i in indices]))
                     for buffer, indices in accesses)
    except KeyError:
        return None  # an index form we do not evaluate: keep the loop


def _flat_offset(buffer: tirx.Buffer, indices, var: tirx.Var, value: int, operators: dict = INDEX_OPERATORS) -> int:
    """The row-major element offset ``indices`` (of the binary ``operators``) reach in ``buffer`` with ``var``
    at ``value`` and every other variable at 0."""
    return nest_offset(buffer, indices, {var: value}, operators)


def nest_offset(buffer: tirx.Buffer, indices, values: dict, operators: dict = INDEX_OPERATORS) -> int:
    """The row-major element offset ``indices`` (of the binary ``operators``) reach in ``buffer`` with the variables
    of ``values`` at theirs and every other variable at 0."""
    at: defaultdict = defaultdict(int, values)
    offset = 0
    for index, extent in zip(indices, buffer.shape):
        offset = offset * int(extent) + evaluate_index(index, at, operators)
    return offset
