"""tvm_ext.codegen.fused_float_products: in a kernel marked FUSED_FLOAT_PRODUCTS_ATTR (a quantized ONNX model's,
tvm_ext.lower.ScheduleKernels), each float32 store ``b[i] = b[i] + x * y`` becomes a fused multiply-add, and
nothing else changes; an unmarked kernel (a float model's, a TFLite model's) keeps its multiply and add apart.
Where the attribute gives MLAS's taps per block, an accumulation of more taps is summed in such blocks."""

from __future__ import annotations

import functools

import pytest

tvm = pytest.importorskip("tvm")
from tvm.script import tirx as T  # noqa: E402

from tvm_ext.codegen.fused_float_products import sgemm_stride_k, with_fused_float_products  # noqa: E402
from tvm_ext.kernels.fused_multiply_add import FUSED_MULTIPLY_ADD_OP  # noqa: E402
from tvm_ext.layers import FUSED_FLOAT_PRODUCTS_ATTR  # noqa: E402


@functools.cache
def macs():
    """Parsed when a test first asks (TVMScript parsed at import is paid by every worker's collection)."""
    @T.prim_func(private=True)
    def macs(x: T.Buffer((8,), "float32"), w: T.Buffer((8,), "float32"), q: T.Buffer((8,), "int32"),
             acc: T.Buffer((2,), "float32"), total: T.Buffer((2,), "int32"), other: T.Buffer((2,), "float32")):
        for i in range(8):
            acc[0] = acc[0] + x[i] * w[i]  # a float MAC
            acc[1] = x[i] * w[i] + acc[1]  # the same, the addition's operands the other way round
            total[0] = total[0] + q[i] * q[i]  # an integer MAC
            other[0] = acc[1] + x[i] * w[i]  # a multiply-add into another buffer
            other[1] = other[0] + x[i] * w[i]  # into another element of the same buffer
            acc[0] = acc[0] + x[i]  # an accumulation of no product

    return macs


@functools.cache
def macs_fused():
    """Parsed when a test first asks (TVMScript parsed at import is paid by every worker's collection)."""
    @T.prim_func(private=True)
    def macs_fused(x: T.Buffer((8,), "float32"), w: T.Buffer((8,), "float32"), q: T.Buffer((8,), "int32"),
                   acc: T.Buffer((2,), "float32"), total: T.Buffer((2,), "int32"), other: T.Buffer((2,), "float32")):
        for i in range(8):
            acc[0] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[i], w[i], acc[0])
            acc[1] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[i], w[i], acc[1])
            total[0] = total[0] + q[i] * q[i]
            other[0] = acc[1] + x[i] * w[i]
            other[1] = other[0] + x[i] * w[i]
            acc[0] = acc[0] + x[i]

    return macs_fused


def test_a_marked_kernels_float_macs_become_fused_multiply_adds_and_nothing_else_changes():
    fused = with_fused_float_products(macs().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 0))
    tvm.ir.assert_structural_equal(fused, macs_fused().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 0))


def test_an_unmarked_kernel_is_left_as_it_is():
    assert with_fused_float_products(macs()).same_as(macs())


@functools.cache
def taps():
    """Parsed when a test first asks (TVMScript parsed at import is paid by every worker's collection)."""
    @T.prim_func(private=True)
    def taps(x: T.Buffer((3, 2, 2), "float32"), w: T.Buffer((3, 2, 2), "float32"), y: T.Buffer((2,), "float32")):
        for o in range(2):
            y[o] = T.float32(0.0)
            for c in range(3):
                for i in range(2):
                    for j in range(2):
                        if i + j > 0:  # a padding test: a tap outside the input is skipped, still counted
                            y[o] = y[o] + x[c, i, j] * w[c, i, j]
            y[o] = y[o] * T.float32(2.0)

    return taps


@functools.cache
def taps_in_blocks_of_8():
    """Parsed when a test first asks (TVMScript parsed at import is paid by every worker's collection)."""
    @T.prim_func(private=True)
    def taps_in_blocks_of_8(x: T.Buffer((3, 2, 2), "float32"), w: T.Buffer((3, 2, 2), "float32"),
                            y: T.Buffer((2,), "float32")):
        for o in range(2):
            block_sum = T.alloc_buffer((1,), "float32", scope="global")
            y[o] = T.float32(0.0)
            for block in range(2):  # a block is two channels' taps: the channel loop runs over a block's channels
                block_sum[0] = T.float32(0.0)
                for c in T.serial(block * 2, T.min(block * 2 + 2, 3)):
                    for i, j in T.grid(2, 2):
                        if i + j > 0:
                            block_sum[0] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[c, i, j], w[c, i, j],
                                                         block_sum[0])
                y[o] = y[o] + block_sum[0]
            y[o] = y[o] * T.float32(2.0)

    return taps_in_blocks_of_8


def test_an_accumulation_of_more_taps_than_a_block_is_summed_in_blocks_added_to_the_output():
    """Blocks of whole channels: a loop over the blocks, no tap tested for a block's start."""
    blocked = with_fused_float_products(taps().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 8))
    tvm.ir.assert_structural_equal(blocked, taps_in_blocks_of_8().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 8),
                                   map_free_vars=True)


@functools.cache
def taps_in_blocks_of_6():
    """Parsed when a test first asks (TVMScript parsed at import is paid by every worker's collection)."""
    @T.prim_func(private=True)
    def taps_in_blocks_of_6(x: T.Buffer((3, 2, 2), "float32"), w: T.Buffer((3, 2, 2), "float32"),
                            y: T.Buffer((2,), "float32")):
        for o in range(2):
            block_sum = T.alloc_buffer((1,), "float32", scope="global")
            y[o] = T.float32(0.0)
            block_sum[0] = T.float32(0.0)
            for c, i, j in T.grid(3, 2, 2):
                if ((c * 2 + i) * 2 + j) % 6 == 0 and (c * 2 + i) * 2 + j != 0:  # a block's first tap, not the first
                    y[o] = y[o] + block_sum[0]
                    block_sum[0] = T.float32(0.0)
                if i + j > 0:
                    block_sum[0] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[c, i, j], w[c, i, j], block_sum[0])
            y[o] = y[o] + block_sum[0]
            y[o] = y[o] * T.float32(2.0)

    return taps_in_blocks_of_6


def test_blocks_that_begin_inside_a_channel_are_found_by_their_first_tap():
    blocked = with_fused_float_products(taps().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 6))
    tvm.ir.assert_structural_equal(blocked, taps_in_blocks_of_6().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, 6),
                                   map_free_vars=True)


def test_an_accumulation_within_one_block_is_one_chain():
    @T.prim_func(private=True)
    def taps_fused(x: T.Buffer((3, 2, 2), "float32"), w: T.Buffer((3, 2, 2), "float32"),
                   y: T.Buffer((2,), "float32")):
        for o in range(2):
            y[o] = T.float32(0.0)
            for c in range(3):
                for i in range(2):
                    for j in range(2):
                        if i + j > 0:
                            y[o] = T.call_intrin("float32", FUSED_MULTIPLY_ADD_OP, x[c, i, j], w[c, i, j], y[o])
            y[o] = y[o] * T.float32(2.0)

    for block_taps in (0, 12):
        fused = with_fused_float_products(taps().with_attr(FUSED_FLOAT_PRODUCTS_ATTR, block_taps))
        tvm.ir.assert_structural_equal(fused, taps_fused.with_attr(FUSED_FLOAT_PRODUCTS_ATTR, block_taps))


@pytest.mark.parametrize(("pixels", "taps", "block"), [(225, 144, 128), (256, 576, 128), (64, 1152, 256)],
                         ids=["squeezenet_expand3x3", "resnet18_layer1", "resnet18_layer2"])
def test_mlas_blocks_are_the_ones_measured_against_onnxruntime(pixels: int, taps: int, block: int):
    """The taps per block of the Convs whose sums were checked bit for bit against onnxruntime 1.32 on one thread
    (README): SqueezeNet 1.1's first expand3x3 and ResNet-18's layer1 and layer2 3x3 Convs."""
    assert sgemm_stride_k(pixels, taps) == block
