"""A quantized ONNX model's float multiply-accumulates rounded once per step, as onnxruntime's MLAS computes them.

Why: onnxruntime keeps some operators of a QDQ model float (a Conv whose bias scale is not x_scale * w_scale,
an operator it has no quantized kernel for) and quantizes their float results. Its float Conv, Gemm and
MatMul run MLAS's SGEMM kernels, which accumulate each output with fused multiply-adds (x86-64's FMA3 and
AVX-512 kernels, Arm64's NEON ones): ``acc = fma(x, w, acc)``, one rounding per step, where the C line
``acc = acc + x * w`` rounds the product and then the sum. The two differ in the last place now and then,
and where the sum lies near a rounding tie of the QuantizeLinear after it that is one LSB of the int8 result,
which the rest of the network carries on (torchvision MNASNet 0.5's QDQ export: a float 1x1 Conv's output
9.5000004 quantization steps, 9 in onnxruntime and in ONNX's reference evaluator, 10 with separate roundings).

The rewrite: in each kernel marked with FUSED_FLOAT_PRODUCTS_ATTR, every float32 store
``b[i] = b[i] + x * y`` becomes ``b[i] = fma(x, y, b[i])`` (`tvm_ext.kernels.fused_multiply_add`: exact on
every core, one instruction where the core has it). The order of the additions is the schedule's: for these
kernels a convolution's taps by (input channel, kernel row, kernel column), im2col's order, as MLAS's SGEMM
reads them (tvm_ext.lower.ScheduleKernels).

MLAS splits a convolution's long sum into blocks of taps (onnxruntime's mlas/lib/conv.cpp and sgemm.cpp, one
thread: the SGEMM of M output channels by N output pixels by K taps takes StrideK = 128 taps at a time when
N >= K, else 128 doubled for each halving of its 128-column stride StrideN while StrideN > 16 and StrideN / 2 >=
N), sums each block from zero, adds each block's sum to the output (one rounding each) and adds the bias last.
`mlas_block_taps` gives that block for a kernel's float convolution (recorded as the attribute's value), and
each output's chain of fused multiply-adds is split there: the sum of a block in its own accumulator, added to
the output's at the block's end. Where blocks hold whole iterations of the outermost tap loop (a 1x1
convolution's channels) a loop over the blocks runs that loop over each block's iterations; where a block
begins inside one (a 3x3 kernel's 9 taps per channel) each tap is tested for a block's start. Not in blocks:
a MatMul or Gemm (a float MatMul on int8 weights differs from onnxruntime's in its last places at 64 taps as
at 640, so blocks are not what tells them apart), a convolution of one output channel (MLAS's M = 1 kernel,
another order) and an accumulation of another form than zero stores (one output's, or a register tile's of
several outputs, each then blocked in an accumulator of its own) followed by a perfect loop nest around those
outputs' multiply-accumulates: those sum in one chain, and an output whose sum lies within a rounding of a tie
can round apart from onnxruntime's (README, "ONNX models quantized by onnxruntime").
"""

from __future__ import annotations

import math

import tvm_ffi
from tvm import ir, s_tir, tirx
from tvm.sym import Analyzer
from tvm.ir.prim import expr as prim

from tvm_ext.kernels.fused_multiply_add import fused_multiply_add
from tvm_ext.layers import FUSED_FLOAT_PRODUCTS_ATTR
from tvm_ext.tir.tir_walk import map_nodes, replace_stmt, vars_read, walk

# MLAS's SGEMM strides (mlasi.h, MLAS_SGEMM_STRIDEN and MLAS_SGEMM_STRIDEK), in output pixels and taps.
SGEMM_STRIDE_N = 128
SGEMM_STRIDE_K = 128
SGEMM_MIN_STRIDE_N = 16


def _same_element(load, store: tirx.BufferStore) -> bool:
    """Whether the expression `load` reads the element `store` writes."""
    return (isinstance(load, ir.TensorLoad) and load.source.same_as(store.buffer)
            and tvm_ffi.structural_equal(list(load.indices), list(store.indices)))


def _fused(node):
    """`node` as a store of a fused multiply-add when it is ``b[i] = b[i] + x * y`` of float32 (either
    operand order of the addition), else None (looked into further)."""
    if not isinstance(node, tirx.BufferStore) or str(node.value.ty.dtype) != "float32":
        return None
    value = node.value
    if not isinstance(value, prim.Add):
        return None
    for accumulator, product in ((value.a, value.b), (value.b, value.a)):
        if _same_element(accumulator, node) and isinstance(product, prim.Mul):
            return tirx.BufferStore(node.buffer, fused_multiply_add(product.a, product.b, accumulator),
                                    list(node.indices))
    return None


def sgemm_stride_k(pixels: int, taps: int) -> int:
    """The taps per block of MLAS's single-threaded SGEMM of `pixels` columns (N) by `taps` (K) (its
    MlasSgemmOperation and MlasConvOperation compute the same strides)."""
    stride_n, stride_k = SGEMM_STRIDE_N, SGEMM_STRIDE_K
    if pixels >= taps:
        while stride_k // 2 >= taps:
            stride_n, stride_k = stride_n * 2, stride_k // 2
    else:
        while stride_n > SGEMM_MIN_STRIDE_N and stride_n // 2 >= pixels:
            stride_n, stride_k = stride_n // 2, stride_k * 2
    return stride_k


def mlas_block_taps(func: tirx.PrimFunc) -> int:
    """The taps per block in which MLAS sums the float convolution of `func` (a scheduled or unscheduled
    PrimFunc with blocks: TOPI's NCHW convolutions, spatial axes batch, channel, pixels), or 0 when it sums each
    output in one block, `func` has no float convolution or the convolution has one output channel."""
    for block in walk(func.body):
        if not (isinstance(block, s_tir.SBlock) and "conv" in block.name_hint and block.writes
                and str(block.writes[0].source.dtype) == "float32"):
            continue
        spatial = [int(iv.dom.extent) for iv in block.iter_vars if int(iv.iter_type) == tirx.IterVar.DataPar]
        reduced = [int(iv.dom.extent) for iv in block.iter_vars if int(iv.iter_type) == tirx.IterVar.CommReduce]
        if not reduced or len(spatial) < 3 or spatial[1] == 1:
            continue
        taps = math.prod(reduced)
        stride = sgemm_stride_k(math.prod(spatial[2:]), taps)
        return stride if taps > stride else 0
    return 0


def _zero_init(stmt) -> bool:
    """Whether `stmt` stores float32 zero (an accumulator's start)."""
    return (isinstance(stmt, tirx.BufferStore) and isinstance(stmt.value, prim.FloatImm)
            and str(stmt.value.ty.dtype) == "float32" and float(stmt.value.value) == 0.0)


def _in_blocks(inits: list[tirx.BufferStore], nest, taps: int) -> tirx.Stmt | None:
    """The accumulation `inits; nest` (zero stores of one output each, a register tile of one or more, then a
    perfect nest of loops over the taps around the multiply-accumulates into those elements) summed in blocks
    of `taps`, each output's block in its own accumulator added to the output at the block's end; None when
    `nest` is not such an accumulation of more than `taps` taps."""
    loops = [nest]
    while isinstance(loops[-1], tirx.For) and isinstance(loops[-1].body, tirx.For):
        loops.append(loops[-1].body)
    if not isinstance(nest, tirx.For) or any(not isinstance(loop.extent, prim.IntImm) or not isinstance(
            loop.min, prim.IntImm) or int(loop.min) != 0 for loop in loops):
        return None
    body = loops[-1].body
    loop_vars = {loop.loop_var for loop in loops}

    def output_of(store) -> int | None:
        """The index in `inits` of the element `store` writes, or None."""
        return next((k for k, init in enumerate(inits) if store.buffer.same_as(init.buffer)
                     and tvm_ffi.structural_equal(list(store.indices), list(init.indices))), None)

    stores = [n for n in walk(body) if isinstance(n, tirx.BufferStore)
              and any(n.buffer.same_as(init.buffer) for init in inits)]
    total = math.prod(int(loop.extent) for loop in loops)
    if (not stores or any(_fused(store) is None or output_of(store) is None for store in stores)
            or any(var in loop_vars for init in inits for index in init.indices for var in vars_read(index))
            or total <= taps):
        return None
    block_sum = tirx.decl_buffer((len(inits),), "float32", name="mlas_block_sum")
    zeros = [tirx.BufferStore(block_sum, tirx.FloatImm("float32", 0.0), [k]) for k in range(len(inits))]
    totals = [tirx.BufferStore(init.buffer, tirx.BufferLoad(init.buffer, list(init.indices))
                               + tirx.BufferLoad(block_sum, [k]), list(init.indices))
              for k, init in enumerate(inits)]

    def into_block_sum(node):
        if not any(node.same_as(store) for store in stores):
            return None
        k = output_of(node)
        product = _fused(node).value.args
        return tirx.BufferStore(block_sum, fused_multiply_add(product[0], product[1],
                                                              tirx.BufferLoad(block_sum, [k])), [k])

    blocked = map_nodes(body, into_block_sum)
    taps_per_iteration = total // int(nest.extent)  # of the outermost tap loop
    if taps % taps_per_iteration == 0:  # blocks of whole iterations of it: a loop over the blocks
        per_block = taps // taps_per_iteration
        block = tirx.Var("block", "int32")
        start = block * per_block
        stop = tirx.Min(start + per_block, int(nest.extent))
        block_taps = tirx.For(nest.loop_var, start, Analyzer().simplify(stop - start), nest.kind,
                              replace_stmt(nest, body, blocked).body, nest.thread_binding, nest.annotations)
        blocks = tirx.For(block, 0, -(-int(nest.extent) // per_block), tirx.ForKind.SERIAL,
                          tirx.SeqStmt([*zeros, block_taps, *totals]))
        return tirx.SeqStmt([tirx.AllocBuffer(block_sum), *inits, blocks])
    # A block begins inside an iteration (a KxK kernel's 9 taps per channel, blocks of 128): each tap is tested
    # for a block's start. Bounding the loops per block instead costs more on cortex-m4f (their bounds are
    # computed per kernel row: 9,579,988 instructions against 8,897,937 for a 32x32x3x3 Conv on 16x16 pixels).
    tap = loops[0].loop_var
    for loop in loops[1:]:
        tap = tap * loop.extent + loop.loop_var
    block_start = tirx.And(tirx.EQ(tirx.FloorMod(tap, taps), 0), tirx.NE(tap, 0))
    add_blocks = tirx.SeqStmt([stmt for pair in zip(totals, zeros) for stmt in pair])
    tested = tirx.SeqStmt([tirx.IfThenElse(block_start, add_blocks, None), blocked])
    return tirx.SeqStmt([tirx.AllocBuffer(block_sum), *inits, *zeros, replace_stmt(nest, body, tested), *totals])


def _blocked_sums(taps: int):
    """The `map_nodes` rewrite that sums each accumulation of more than `taps` taps in blocks of `taps`."""

    def rewrite(node):
        if not isinstance(node, tirx.SeqStmt):
            return None
        parts, rewritten, i = list(node.seq), [], 0
        while i < len(parts):
            end = i
            while end < len(parts) and _zero_init(parts[end]):
                end += 1
            blocked = _in_blocks(parts[i:end], parts[end], taps) if i < end < len(parts) else None
            rewritten.append(blocked if blocked is not None else map_nodes(parts[i], rewrite))
            i = end + 1 if blocked is not None else i + 1
        unchanged = len(rewritten) == len(parts) and all(new.same_as(old) for new, old in zip(rewritten, parts))
        return node if unchanged else tirx.SeqStmt(rewritten)

    return rewrite


def with_fused_float_products(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each float32 multiply-accumulate store a fused multiply-add if it is marked with
    FUSED_FLOAT_PRODUCTS_ATTR, else unchanged; where the attribute's value (taps per block, see
    `mlas_block_taps`) is not 0, each accumulation of more taps summed in such blocks. Contract: flat TIR (no
    blocks), only roundings change."""
    if func.attrs is None or FUSED_FLOAT_PRODUCTS_ATTR not in func.attrs:
        return func
    taps = int(func.attrs[FUSED_FLOAT_PRODUCTS_ATTR])
    body = map_nodes(func.body, _blocked_sums(taps)) if taps else func.body
    body = map_nodes(body, _fused)
    return func if body.same_as(func.body) else tirx.PrimFunc(func.params, body, func.ret_type, func.attrs)


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.FusedFloatProducts")
def fused_float_products(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """The pass form of `with_fused_float_products`."""
    return with_fused_float_products(func)
