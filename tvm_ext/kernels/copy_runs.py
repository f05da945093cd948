"""Data movement as runs of contiguous copies: int8 RESIZE_NEAREST_NEIGHBOR, CONCATENATION, PAD and TRANSPOSE as TE
extern stages whose only loops are ``dst[d + i] = src[s + i]`` over i from 0 (``copy_run``; PAD's padding a
fill, ``fill_run``).

A generic kernel computes each output byte on its own (the source index from the tables, which operand
holds it, or whether it lies in the padding): about 12 instructions per resized byte, 7 per concatenated one,
8.1 per padded one on Cortex-M4F. Written as runs,
each run is one tight loop on any core, and on DSP cores one call of the bundle's word copy
(``backends.cortex_m.schedules.extern_helpers`` recognizes the loop's form; no schedule moves an extern
stage's loops). A TRANSPOSE of int8 that moves the innermost axis has no run: it is matrices, loops
``dst[d + i * r + j] = src[s + j * c + i]`` (``_transpose_matrices``: some 4.1 instructions per byte as the generic
kernel on Cortex-M4F), on DSP cores one call of the bundle's word transpose per matrix, 4 x 4 blocks. The bytes
copied are the generic kernels' exactly: no requantization either way (TFLite Micro's kernels copy the stored int8
values).
"""

from __future__ import annotations

import functools
import math
from typing import Optional, Sequence

import numpy as np
from tvm import te, tirx, topi

from ..tir.extern_stage import extern_from_zero, row_major_indices
from .pool import UNROLLED_TAPS, max_pool2d_integer
from .quant_params import ActivationRange


def _dtype(expr: tirx.PrimExpr) -> str:
    """The type of an index expression."""
    return str(expr.ty.dtype)


def _loop(var: tirx.Var, extent: int, body: tirx.Stmt) -> tirx.For:
    """``for var in [0, extent)``, its bounds in the variable's type."""
    return tirx.For(var, tirx.const(0, _dtype(var)), tirx.const(extent, _dtype(var)), tirx.ForKind.SERIAL, body)


def copy_run(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, src: tirx.Buffer, src_offset: tirx.PrimExpr,
             count: int, name: str) -> tirx.Stmt:
    """``dst[dst_offset + i] = src[src_offset + i]`` for i < count (row-major element offsets), in ascending i."""
    i = tirx.Var(name, _dtype(dst_offset))
    load = tirx.BufferLoad(src, row_major_indices(src, src_offset + i))
    return _loop(i, count, tirx.BufferStore(dst, load, row_major_indices(dst, dst_offset + i)))


def resize_nearest_neighbor_int8(data: te.Tensor, rows: te.Tensor, columns: te.Tensor) -> te.Tensor:
    """NHWC int8 ``data`` at the source ``rows`` and ``columns`` (int32 index tables, one per output row and
    column: TFLite's GetNearestNeighbor, computed at compile time), copied unchanged.

    Each output row whose source row differs from the previous output row's is built once, one copy of the
    ``depth`` contiguous bytes of its source pixel per output pixel; an output row with the same source row as
    the one before it (an upsampling's repeated rows) is that row copied whole (out_width * depth bytes).
    """
    batches, in_height, in_width, depth = (int(d) for d in data.shape)
    out_height, out_width = int(rows.shape[0]), int(columns.shape[0])
    row_bytes = out_width * depth

    def build(ins, outs):
        source, row_table, column_table = ins
        index = _dtype(outs[0].shape[0])  # the extents' type: the lowering narrows it as for any kernel
        b, y, x = (tirx.Var(name, index) for name in ("b", "y", "x"))
        source_row, source_column = tirx.Var("source_row", index), tirx.Var("source_column", index)
        out_row = (b * out_height + y) * row_bytes
        pixel = copy_run(outs[0], out_row + x * depth, source,
                         ((b * in_height + source_row) * in_width + source_column) * depth, depth, "c")
        built = tirx.SeqStmt([tirx.Bind(source_row, tirx.Cast(index, row_table[y])), _loop(
            x, out_width, tirx.SeqStmt([tirx.Bind(source_column, tirx.Cast(index, column_table[x])), pixel]))])
        repeated = copy_run(outs[0], out_row, outs[0], out_row - row_bytes, row_bytes, "i")
        same_row = tirx.And(y > 0, row_table[y] == row_table[tirx.max(y - 1, 0)])
        body = tirx.IfThenElse(same_row, repeated, built)
        return _loop(b, batches, _loop(y, out_height, body))

    return extern_from_zero((batches, out_height, out_width, depth), [data, rows, columns], build,
                         "resize_nearest_neighbor_int8")


def word_rounded(run: int, element_bytes: int) -> int:
    """The elements a copy of a run of ``run`` elements of ``element_bytes`` bytes takes where it may copy one more
    byte: ``run`` + 1 where the run is of bytes and 3 more than whole words (its last three bytes one unaligned
    word, not a halfword and a byte, in the word copy's tail: ``backends.cortex_m.helpers.copy_c``), else ``run``
    (one more byte saves nothing there)."""
    return run + 1 if element_bytes == 1 and run % 4 == 3 else run


COPY_STEP_BYTES = 16
"""The bytes one step of the word copy's loop moves (``backends.cortex_m.helpers.copy_c``: four unaligned words); it
copies a rest after its steps a byte at a time, a copy of fewer bytes as words, a halfword and a byte."""


def word_steps(run: int, element_bytes: int) -> int:
    """The elements of a run of ``run`` elements of ``element_bytes`` bytes that whole steps of the word copy take
    (COPY_STEP_BYTES each), where the run has more besides them; else the run itself. A run copied per index of
    an outer axis is copied as those steps and then the rest, each its own copy (the rest under COPY_STEP_BYTES:
    words, not bytes): densenet_bc_32's 24-, 60- and 72-channel pieces on cortex-m4f, 1.2-1.5 -> 0.6-0.8
    instructions per byte, where one copy of the run spent up to 15 byte copies on its rest (a copy made once,
    a state's, keeps its one call: the rest's words cost code at every inlined call)."""
    steps = run * element_bytes // COPY_STEP_BYTES * COPY_STEP_BYTES // element_bytes
    return steps if 0 < steps < run else run


def stepped_copy(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, src: tirx.Buffer, src_offset: tirx.PrimExpr,
                 count: int, name: str) -> tirx.Stmt:
    """``copy_run`` of ``count`` elements as the word copy's whole steps, then the rest (``word_steps``): two copies
    where the run has both, else one."""
    head = word_steps(count, np.dtype(str(dst.dtype)).itemsize)
    if head == count:
        return copy_run(dst, dst_offset, src, src_offset, count, name)
    return tirx.SeqStmt([copy_run(dst, dst_offset, src, src_offset, head, name),
                         copy_run(dst, dst_offset + head, src, src_offset + head, count - head, f"{name}_rest")])


def concatenate_runs(pieces: Sequence[te.Tensor], axis: int, word_runs: bool = False) -> te.Tensor:
    """``pieces`` joined along ``axis`` (all of one type, equal elsewhere), as ``topi.concatenate`` computes:
    per index of the axes before ``axis``, one copy of each piece's contiguous run (its extent along ``axis``
    times the elements of the axes after it). A join along the outermost axis is one copy per piece. One piece is
    ``topi.concatenate``'s copy, which the passes turn into a view of it (no kernel).

    ``word_runs`` (a core whose copy helper moves an unaligned word in one load and one store): every index but the
    last copies a run of 3 bytes more than whole words with one byte more (``word_rounded``: a pixel's 3 channels
    one word, not a halfword and a byte). That byte is the output's next, which the copies after it write (the
    output is written in ascending order, whole), read from the piece's next run (inside the piece: the last index
    copies its runs exactly), so the output is the same. And where a run is copied per index of the axes before
    ``axis``, its whole steps of the word copy and its rest are two copies (``word_steps``)."""
    if len(pieces) == 1:
        return topi.concatenate(pieces, axis)
    shape = [int(d) for d in pieces[0].shape]
    outer = math.prod(shape[:axis])
    inner = math.prod(shape[axis + 1:])
    runs = [int(piece.shape[axis]) * inner for piece in pieces]
    out_shape = [*shape[:axis], sum(int(piece.shape[axis]) for piece in pieces), *shape[axis + 1:]]
    element_bytes = np.dtype(str(pieces[0].dtype)).itemsize
    rounded = [word_rounded(run, element_bytes) for run in runs] if word_runs and outer > 1 else runs

    def build(ins, outs):
        index = _dtype(outs[0].shape[0])

        def copies(o: tirx.PrimExpr, counts: Sequence[int]) -> tirx.Stmt:
            steps, start = [], 0
            for k, (piece, run, count) in enumerate(zip(ins, runs, counts)):
                copy = stepped_copy if word_runs and outer > 1 else copy_run
                steps.append(copy(outs[0], o * sum(runs) + start, piece, o * run, count, f"i{k}"))
                start += run
            return _sequence(steps)

        o = tirx.Var("o", index)
        if rounded == runs:
            return _loop(o, outer, copies(o, runs))
        return _sequence([_loop(o, outer - 1, copies(o, rounded)), copies(tirx.const(outer - 1, index), runs)])

    return extern_from_zero(out_shape, pieces, build, "concatenate_runs")


def transpose_runs(data: te.Tensor, *, axes: Optional[Sequence[int]]) -> te.Tensor:
    """``topi.transpose(data, axes)`` (``axes`` None: reversed) as runs: the trailing axes the permutation keeps in
    place and in order are contiguous in the input and in the output, so per index of the output's other axes one
    copy of their elements (a run: the word copy's whole steps, then the rest, ``stepped_copy``; the kernel is
    written only for cores with the word copy). A permutation of one-byte elements that moves the innermost axis
    is matrices (``_transpose_matrices``). One that keeps the order of the axes longer than one is
    ``topi.transpose``'s kernel (the same bytes: a view after the passes), as is any other (a run of one element)."""
    shape = [int(d) for d in data.shape]
    rank = len(shape)
    order = list(reversed(range(rank))) if axes is None else [int(axis) % rank for axis in axes]
    kept = 0
    while kept < rank and order[rank - 1 - kept] == rank - 1 - kept:
        kept += 1
    run = math.prod(shape[rank - kept:])
    moved = [axis for axis in order if shape[axis] != 1]
    if moved == sorted(moved):
        return topi.transpose(data, axes)
    if kept == 0 or run < 2:
        matrices = _transpose_matrices(data, order)
        return matrices if matrices is not None else topi.transpose(data, axes)
    out_shape = [shape[axis] for axis in order]
    strides = [math.prod(shape[axis + 1:]) for axis in range(rank)]  # the input's, in elements

    def build(ins, outs):
        index = _dtype(outs[0].shape[0])
        outer = [tirx.Var(f"o{k}", index) if out_shape[k] > 1 else tirx.const(0, index) for k in range(rank - kept)]
        out_at, in_at = tirx.const(0, index), tirx.const(0, index)
        for k, o in enumerate(outer):
            out_at = out_at * out_shape[k] + o
            in_at = in_at + o * strides[order[k]]
        body = stepped_copy(outs[0], out_at * run, ins[0], in_at, run, "i")
        for k in reversed(range(rank - kept)):
            if out_shape[k] > 1:
                body = _loop(outer[k], out_shape[k], body)
        return body

    return extern_from_zero(out_shape, [data], build, "transpose_runs")


MATRIX_SIDE = 4
"""The fewest rows and columns of a transposed matrix (``_transpose_matrices``): one block of the backend's word
transpose (``backends.cortex_m.helpers.copy_c``, 4 x 4 int8); a thinner one keeps the element-wise kernel."""


def _transpose_matrices(data: te.Tensor, order: Sequence[int]) -> Optional[te.Tensor]:
    """The transpose of ``data`` by the permutation ``order`` that moves its innermost axis longer than one, as one
    matrix transpose per index of the other axes: ``out[o + i * d + j] = in[s + j * c + i]`` for i < rows (the
    input's innermost axis longer than one, contiguous there), j < cols (the output's, contiguous there), the loop
    form the backend's word transpose takes (``backends.cortex_m.schedules.extern_helpers``). None for elements of
    more than one byte, or a matrix under MATRIX_SIDE rows or columns."""
    shape = [int(d) for d in data.shape]
    long_axes = [axis for axis in range(len(shape)) if shape[axis] > 1]
    out_axes = [axis for axis in order if shape[axis] > 1]  # the output's axes longer than one, as input axes
    if np.dtype(str(data.dtype)).itemsize != 1 or not long_axes:
        return None
    row_axis, col_axis = long_axes[-1], out_axes[-1]
    rows, cols = shape[row_axis], shape[col_axis]
    if row_axis == col_axis or min(rows, cols) < MATRIX_SIDE:
        return None
    out_shape = [shape[axis] for axis in order]
    in_strides = {axis: math.prod(shape[axis + 1:]) for axis in long_axes}
    out_strides = {axis: math.prod(shape[later] for later in out_axes[k + 1:]) for k, axis in enumerate(out_axes)}

    def build(ins, outs):
        index = _dtype(outs[0].shape[0])
        c = lambda value: tirx.const(value, index)  # noqa: E731
        outer = {axis: tirx.Var(f"o{k}", index) for k, axis in enumerate(out_axes) if axis not in (row_axis, col_axis)}
        out_at, in_at = c(0), c(0)
        for axis, o in outer.items():
            out_at, in_at = out_at + o * c(out_strides[axis]), in_at + o * c(in_strides[axis])
        i, j = tirx.Var("i", index), tirx.Var("j", index)
        load = tirx.BufferLoad(ins[0], row_major_indices(ins[0], in_at + j * c(in_strides[col_axis]) + i))
        store = tirx.BufferStore(outs[0], load, row_major_indices(outs[0], out_at + i * c(out_strides[row_axis]) + j))
        body = _loop(i, rows, _loop(j, cols, store))
        for axis in reversed(list(outer)):
            body = _loop(outer[axis], shape[axis], body)
        return body

    return extern_from_zero(out_shape, [data], build, "transpose_matrices")


def _sequence(steps: Sequence[tirx.Stmt]) -> tirx.Stmt:
    """``steps`` in order: a SeqStmt of several, the one itself."""
    return tirx.SeqStmt(list(steps)) if len(steps) > 1 else steps[0]


def max_run(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, a: tirx.Buffer, a_offset: tirx.PrimExpr, b: tirx.Buffer,
            b_offset: tirx.PrimExpr, count: int, name: str) -> tirx.Stmt:
    """``dst[dst_offset + i] = max(a[a_offset + i], b[b_offset + i])`` for i < count (row-major element
    offsets), in ascending i."""
    i = tirx.Var(name, _dtype(dst_offset))
    peak = tirx.max(tirx.BufferLoad(a, row_major_indices(a, a_offset + i)), tirx.BufferLoad(b, row_major_indices(b, b_offset + i)))
    return _loop(i, count, tirx.BufferStore(dst, peak, row_major_indices(dst, dst_offset + i)))


def has_empty_window(size: int, pool: int, stride: int, before: int, outputs: int) -> bool:
    """Whether one of ``outputs`` windows of ``pool`` taps along an axis of ``size`` (``before`` padded
    elements ahead of it, ``stride`` apart) holds no element of the axis."""
    return any(min(size, o * stride - before + pool) <= max(0, o * stride - before) for o in range(outputs))


def max_pool2d_runs(data: te.Tensor, *, pool: Sequence[int], strides: Sequence[int], padding: Sequence[int],
                    activation: ActivationRange) -> te.Tensor:
    """TFLite's integer MAX_POOL_2D of the NHWC ``data`` (``padding`` (top, left, bottom, right)) as runs over the
    ``depth`` contiguous channels of a pixel. Without padding, a window of at most UNROLLED_TAPS taps is one loop
    over the channels of the maximum of its taps (row-major). Otherwise per output pixel, the maximum of its
    window's first two taps (without padding; with padding, of the first valid tap with itself: its copy), then
    the running maximum of each further valid tap (taps in padding are skipped: TFLite's max ignores them).
    Then, where the activation's [low, high] is narrower than the type, the clamp to it. Computes what
    ``tvm_ext.kernels.pool.max_pool2d_integer`` does: the maximum is the same in any order of taps, and clamping
    the maximum of the valid taps from below equals starting it at ``low``. Every loop runs a constant number of
    times: a padded window of at most UNROLLED_TAPS taps is written out tap by tap, a larger one loops over its
    rows and columns; a tap is tested for lying inside the input only along an axis with padding. A pool with a
    window that holds no element of the input (``has_empty_window``: only an explicit padding as wide as the
    window) is ``max_pool2d_integer``'s kernel."""
    batches, in_height, in_width, depth = (int(d) for d in data.shape)
    out_height = (in_height + padding[0] + padding[2] - pool[0]) // strides[0] + 1
    out_width = (in_width + padding[1] + padding[3] - pool[1]) // strides[1] + 1
    if has_empty_window(in_height, pool[0], strides[0], padding[0], out_height) \
            or has_empty_window(in_width, pool[1], strides[1], padding[1], out_width):
        return max_pool2d_integer(data, pool=pool, strides=strides, padding=padding, activation=activation)
    dtype = str(data.dtype)
    info = np.iinfo(dtype)
    padded = (padding[0] + padding[2] > 0, padding[1] + padding[3] > 0)

    def build(ins, outs):
        source, out = ins[0], outs[0]
        index = _dtype(out.shape[0])
        b, y, x = (tirx.Var(name, index) for name in ("b", "y", "x"))
        c = lambda value: tirx.const(value, index)  # noqa: E731
        top, left = y * c(strides[0]) - c(padding[0]), x * c(strides[1]) - c(padding[1])
        pixel = ((b * c(out_height) + y) * c(out_width) + x) * c(depth)
        # the window's first valid row and column (clamped where there is padding before it)
        first_row = tirx.max(top, c(0)) if padding[0] > 0 else top
        first_column = tirx.max(left, c(0)) if padding[1] > 0 else left

        def clamp() -> list[tirx.Stmt]:
            """The pixel's clamp to the activation's range where it is narrower than the type."""
            if activation.low == int(info.min) and activation.high == int(info.max):
                return []
            m = tirx.Var("m", index)
            here = row_major_indices(out, pixel + m)
            clamped = tirx.min(tirx.max(tirx.BufferLoad(out, here), tirx.const(activation.low, dtype)),
                               tirx.const(activation.high, dtype))
            return [_loop(m, depth, tirx.BufferStore(out, clamped, here))]

        def at(row: tirx.PrimExpr, column: tirx.PrimExpr) -> tirx.PrimExpr:
            return ((b * c(in_height) + row) * c(in_width) + column) * c(depth)

        def tap(dy, dx, name: str) -> tirx.Stmt:
            """The running maximum of tap (dy, dx) unless it lies in padding or is the first valid tap."""
            row, column = top + dy, left + dx
            tests = [test for axis, (value, first, extent) in enumerate(
                ((row, first_row, in_height), (column, first_column, in_width))) if padded[axis]
                for test in (value >= c(0), value < c(extent))]
            if padded[0] or padded[1]:
                tests.append(tirx.Or(row != first_row, column != first_column))
            step = max_run(out, pixel, out, pixel, source, at(row, column), depth, name)
            return tirx.IfThenElse(tirx.all(*tests), step, None) if tests else step

        if not (padded[0] or padded[1]) and pool[0] * pool[1] <= UNROLLED_TAPS:
            # the whole window as one maximum of its taps per channel (row-major), one loop over the channels
            i = tirx.Var("i", index)
            peak = functools.reduce(tirx.max, (tirx.BufferLoad(source, row_major_indices(source, at(top + c(dy), left + c(dx)) + i))
                                               for dy in range(pool[0]) for dx in range(pool[1])))
            steps = [_loop(i, depth, tirx.BufferStore(out, peak, row_major_indices(out, pixel + i)))]
            return _loop(b, batches, _loop(y, out_height, _loop(x, out_width, _sequence(steps + clamp()))))
        # without padding the first two taps are known: (0, 0) and the next in row-major order
        second = divmod(min(1, pool[0] * pool[1] - 1), pool[1])
        pair = at(first_row, first_column) if padded[0] or padded[1] else at(top + c(second[0]), left + c(second[1]))
        steps = [max_run(out, pixel, source, at(first_row, first_column), source, pair, depth, "i")]
        if pool[0] * pool[1] <= UNROLLED_TAPS:
            steps += [tap(c(dy), c(dx), f"t{dy}_{dx}") for dy in range(pool[0]) for dx in range(pool[1])
                      if dy * pool[1] + dx > 1 or padded[0] or padded[1]]
        else:
            ry, rx = tirx.Var("ry", index), tirx.Var("rx", index)
            steps.append(_loop(ry, pool[0], _loop(rx, pool[1], tap(ry, rx, "t"))))  # taps already taken: no change
        return _loop(b, batches, _loop(y, out_height, _loop(x, out_width, _sequence(steps + clamp()))))

    return extern_from_zero((batches, out_height, out_width, depth), [data], build, f"max_pool2d_runs_{dtype}")


def fill_run(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, value: tirx.PrimExpr, count: int, name: str) -> tirx.Stmt:
    """``dst[dst_offset + i] = value`` for i < count (row-major element offsets), in ascending i (a loop the C
    compiler's -O2 turns into one memset where the type is one byte)."""
    i = tirx.Var(name, _dtype(dst_offset))
    return _loop(i, count, tirx.BufferStore(dst, value, row_major_indices(dst, dst_offset + i)))


def pad_runs(data: te.Tensor, pad_before: Sequence[int], pad_after: Sequence[int], pad_value: int) -> te.Tensor:
    """``topi.nn.pad(data, pad_before, pad_after, pad_value)`` (constant padding of any rank; widths >= 0) as runs:
    with ``k`` the innermost padded axis, every output slab along axis ``k`` and the axes after it (contiguous)
    is, where the outer indices lie inside the input, a fill of ``pad_before[k]`` rows of the inner axes, a copy
    of the input's ``data.shape[k]`` rows (contiguous in the input too; in chunks of whole rows, ``_chunked_copy``),
    a fill of ``pad_after[k]`` rows; where an outer index lies in padding, one fill of the whole slab. Each output
    element is written once, as the generic kernel's per-element select writes it. Without padding it is
    ``topi.nn.pad``'s copy (a view after the passes)."""
    shape = [int(d) for d in data.shape]
    before, after = [int(w) for w in pad_before], [int(w) for w in pad_after]
    padded = [axis for axis in range(len(shape)) if before[axis] or after[axis]]
    if not padded or 0 in shape:
        return topi.nn.pad(data, before, after, pad_value)
    k = padded[-1]
    out_shape = [size + b + a for size, b, a in zip(shape, before, after)]
    inner = math.prod(shape[k + 1:])
    slab, run = out_shape[k] * inner, shape[k] * inner

    def build(ins, outs):
        source, out = ins[0], outs[0]
        index = _dtype(out.shape[0])
        value = tirx.const(pad_value, str(out.dtype))
        # an axis of one index is no loop: the stream order then sees the runs below at the top level
        outer = [tirx.Var(f"o{axis}", index) if out_shape[axis] > 1 else tirx.const(0, index) for axis in range(k)]
        out_slab, in_run = tirx.const(0, index), tirx.const(0, index)
        for axis, o in enumerate(outer):
            out_slab = out_slab * out_shape[axis] + o
            in_run = in_run * shape[axis] + (o - before[axis])
        start = out_slab * slab
        row = _sequence([step for step in (
            fill_run(out, start, value, before[k] * inner, "f0") if before[k] else None,
            _chunked_copy(out, start + before[k] * inner, source, in_run * run, shape[k], inner),
            fill_run(out, start + (before[k] + shape[k]) * inner, value, after[k] * inner, "f1") if after[k] else None)
            if step is not None])
        inside = [test for axis, o in enumerate(outer) if before[axis] or after[axis]
                  for test in (o >= before[axis], o < before[axis] + shape[axis])]
        body = tirx.IfThenElse(tirx.all(*inside), row, fill_run(out, start, value, slab, "f")) if inside else row
        for axis in reversed(range(k)):
            if out_shape[axis] > 1:
                body = _loop(outer[axis], out_shape[axis], body)
        return body

    return extern_from_zero(out_shape, [data], build, "pad_runs")


PAD_CHUNK = 64
"""The most elements per copy of a padded tensor's interior run longer than it: the memory planner may let the
output share all but about a chunk's bytes with an input that dies there (`tvm_ext.codegen.stream_order` cuts a
loop into passes, not one copy), for a copy call's own cost per chunk. tcn_kws_100x32_int8 on cortex-m4f: one copy
per PAD, arena 19,584-20,352 B; chunks of 320-512 elements, 19,584; of one 64-byte row, 15,488 B as the generic
kernel's, at 0.8 instructions per byte against 0.7."""


def _chunked_copy(dst: tirx.Buffer, dst_offset: tirx.PrimExpr, src: tirx.Buffer, src_offset: tirx.PrimExpr,
                  rows: int, row: int) -> tirx.Stmt:
    """``copy_run`` of ``rows`` rows of ``row`` elements: one copy of at most PAD_CHUNK elements, else a loop over
    chunks of equal size (the most whole rows that divide ``rows`` and fit PAD_CHUNK, at least one row)."""
    if rows * row <= PAD_CHUNK:
        return copy_run(dst, dst_offset, src, src_offset, rows * row, "i")
    group = max(g for g in range(1, rows + 1) if rows % g == 0 and (g == 1 or g * row <= PAD_CHUNK))
    index = _dtype(dst_offset)
    c = tirx.Var("c", index)
    at = c * tirx.const(group * row, index)
    return _loop(c, rows // group, copy_run(dst, dst_offset + at, src, src_offset + at, group * row, "i"))
