"""Stream orders derived from small lowered kernels match a hand computation (`tvm_ext.codegen.stream_order`).

Each kernel is built in TE (or TVMScript), scheduled and lowered by `generate_c` as the compiler does, and
its signature's stream orders are compared with the passes and lead worked out by hand from its loops.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import te
from tvm.script import tirx as T

from memory_planner.api import StreamOrder
from memory_planner.plan import KernelSignature
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.layers import NUM_OUTPUTS_ATTR
from tvm_ext.schedule.kernel_schedule import inline_intermediates

C_TARGET = tvm.target.Target({"kind": "c"})


def signature(func: tvm.tirx.PrimFunc) -> KernelSignature:
    return generate_c({"k": func.with_attr(NUM_OUTPUTS_ATTR, 1)}, C_TARGET).signatures["k"]


def order_of_input0(sig: KernelSignature) -> StreamOrder:
    (order,) = [s.order for s in sig.streams if (s.output, s.input) == (0, 0)]
    return order


def test_a_1x1_convolution_streams_pixel_by_pixel() -> None:
    """NHWC 4x3 pixels, 2 int8 channels in, 4 int32 channels out: loops h, w, k (12 x 4 = 48 passes, within
    the cap, so each output element is a pass). Pass (p, k) reads input pixel p's 2 bytes and writes output
    element 4p + k (4 bytes). Lead: max over passes of 4(4p + k + 1) - 2p = 14p + 4k + 4 at p = 11, k = 3."""
    x = te.placeholder((1, 4, 3, 2), "int8", name="x")
    w = te.placeholder((2, 4), "int8", name="w")
    c = te.reduce_axis((0, 2), name="c")
    out = te.compute((1, 4, 3, 4), lambda n, h, ww, k: te.sum(
        x[n, h, ww, c].astype("int32") * w[c, k].astype("int32"), axis=c), name="out")
    order = order_of_input0(signature(inline_intermediates(te.create_prim_func([x, w, out]))))
    pixels_and_channels = list(itertools.product(range(12), range(4)))
    assert order.reads == tuple((2 * p, 2 * p + 2) for p, _ in pixels_and_channels)
    assert order.writes == tuple((4 * (4 * p + k), 4 * (4 * p + k) + 4) for p, k in pixels_and_channels)
    assert order.lead_bytes() == 14 * 11 + 4 * 3 + 4 == 170


def test_an_elementwise_op_reads_each_byte_in_the_pass_that_writes_it() -> None:
    """8x4 int8 + 1: one pass per element, each reading and writing byte e: the output must start one byte
    below the input (within a pass a read and a write may come in either order)."""
    a = te.placeholder((8, 4), "int8", name="a")
    b = te.compute((8, 4), lambda i, j: a[i, j] + tvm.tirx.const(1, "int8"), name="b")
    order = order_of_input0(signature(inline_intermediates(te.create_prim_func([a, b]))))
    assert order == StreamOrder(tuple((e, e + 1) for e in range(32)), tuple((e, e + 1) for e in range(32)))
    assert order.lead_bytes() == 1


def test_a_padded_3x3_convolution_stays_behind_the_rows_it_still_reads() -> None:
    """NHWC 5x4 pixels, 2 int8 channels, padding 1, 2 int32 channels out: pass (h, w, k) reads input bytes
    from 8(h - 1) + 2(w - 1) (at least 0) to 8(h + 1) + 2(w + 1) + 2 (the border guards are not analysed, so
    the last row's bound runs past the input) and writes output bytes 4(8h + 2w + k) + [0, 4). The read
    start never falls, so the lead is the last pass's: 4(32 + 6 + 1) + 4 - (24 + 4) = 132."""
    x = te.placeholder((1, 5, 4, 2), "int8", name="x")
    w = te.placeholder((3, 3, 2, 2), "int8", name="w")
    inside = lambda h, ww: tvm.tirx.all(h >= 1, h <= 5, ww >= 1, ww <= 4)  # noqa: E731
    pad = te.compute((1, 7, 6, 2), lambda n, h, ww, ch: tvm.tirx.if_then_else(
        inside(h, ww), x[n, h - 1, ww - 1, ch], tvm.tirx.const(0, "int8")), name="pad")
    ry, rx, rc = (te.reduce_axis((0, n), name=name) for n, name in ((3, "ry"), (3, "rx"), (2, "rc")))
    out = te.compute((1, 5, 4, 2), lambda n, h, ww, k: te.sum(
        pad[n, h + ry, ww + rx, rc].astype("int32") * w[ry, rx, rc, k].astype("int32"), axis=[ry, rx, rc]),
        name="out")
    order = order_of_input0(signature(inline_intermediates(te.create_prim_func([x, w, out]))))
    passes = list(itertools.product(range(5), range(4), range(2)))
    assert order.reads == tuple((max(8 * (h - 1) + 2 * (ww - 1), 0), 8 * (h + 1) + 2 * (ww + 1) + 2)
                                for h, ww, _ in passes)
    assert order.writes == tuple((4 * (8 * h + 2 * ww + k), 4 * (8 * h + 2 * ww + k) + 4) for h, ww, k in passes)
    assert order.lead_bytes() == 132


def test_a_pointer_handed_to_a_helper_gets_no_stream_order() -> None:
    """The helper may read `x` anywhere, at any time: no order for `x`; `y`, read element by element, keeps one."""

    @T.prim_func
    def func(x: T.Buffer((16,), "int8"), y: T.Buffer((16,), "int8"), z: T.Buffer((16,), "int8")):
        for i in range(16):
            z[i] = x[i] + y[i]
        T.evaluate(T.call_extern("int32", "helper", T.address_of(x[0])))

    streams = signature(func).streams
    assert [(s.output, s.input) for s in streams] == [(0, 1)]


def test_a_select_in_an_index_is_read_as_the_branch_its_pass_takes() -> None:
    """out[i] = x[i < 1 ? i : i - 1] (a border pixel's address): pass i reads x[0] for i = 0, x[i - 1] after.
    Before: the bound of the `Select`, both branches' (bytes [i - 1, i + 1) from pass 1 on: a byte more)."""

    @T.prim_func
    def func(x: T.Buffer((4,), "int8"), out: T.Buffer((4,), "int8")):
        for i in range(4):
            out[i] = x[T.Select(i < 1, i, i - 1)]

    assert order_of_input0(signature(func)).reads == ((0, 1), (0, 1), (1, 2), (2, 3))
