"""A kernel that hands addresses to a DSP MAC helper still gets a stream order (`tvm_ext.tir.helper_access`).

The helpers' C is not in the TIR, so `tvm_ext.codegen.stream_order` bounds their accesses from each helper's access
record: the unit tests call the helper ops from small TIR kernels and compare the orders with the elements
the helper's C comment names; the bundle tests compile chains of convolutions for cortex-m4f, whose kernels
call the dual MAC, and require the hand-over (a smaller arena than the two buffers side by side), the QEMU
self-test and the poisoned-gap host build to pass on that plan.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from tvm.script import tirx as T

from memory_planner.api import StreamOrder
from backends.cortex_m.schedules.conv_tiles import CHOOSE_OP
from backends.cortex_m.helpers.depthwise_spread_c import SPREAD_INPUTS
from backends.cortex_m.schedules.depthwise_mac import DEPTHWISE_MAC_OP
from backends.cortex_m.schedules.depthwise_tiles import DSP_BORDER_OPS, DSP_LIKELY_OP
from backends.cortex_m.schedules.depthwise_spread import SPREAD_OPS
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_OP
from backends.cortex_m.schedules.extern_helpers import COPY_OP
from backends.cortex_m.schedules.row_dot import ROW_DOT_OP
from test_stream_order import signature


def streams_by_pair(func) -> dict[tuple[int, int], StreamOrder]:
    return {(s.output, s.input): s.order for s in signature(func).streams}


def test_a_dual_mac_call_is_bounded_by_its_access_record() -> None:
    """Row i of x (8 int8) times 4 channels of w (8 weights each, 8 apart) into out[4i:4i+4] (int32): one
    pass per row, reading x bytes [8i, 8i + 8) and all 32 weight bytes, writing out bytes [16i, 16i + 16)."""

    @T.prim_func
    def func(x: T.Buffer((32,), "int8"), w: T.Buffer((32,), "int8"), out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", DUAL_MAC_OP, T.address_of(out[i * 4]), T.address_of(x[i * 8]),
                                     T.address_of(w[0]), 8, 8, 1, 8))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(4))
    assert streams[(0, 0)] == StreamOrder(tuple((8 * i, 8 * i + 8) for i in range(4)), writes)
    assert streams[(0, 1)] == StreamOrder(((0, 32),) * 4, writes)


def test_a_depthwise_mac_call_is_bounded_by_its_access_record() -> None:
    """Output pixel i of a 1x2 window over 4 channels: x[4i + 4k + c] for k < 2, c < 4 (bytes [4i, 4i + 8)),
    w[4k + c] (bytes [0, 8)), out[4i + c] (bytes [16i, 16i + 16))."""

    @T.prim_func
    def func(x: T.Buffer((20,), "int8"), w: T.Buffer((8,), "int8"), out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", DEPTHWISE_MAC_OP, T.address_of(out[i * 4]), T.address_of(x[i * 4]),
                                     T.address_of(w[0]), 8, 4, 8, 4, 1, 2))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(4))
    assert streams[(0, 0)] == StreamOrder(tuple((4 * i, 4 * i + 8) for i in range(4)), writes)
    assert streams[(0, 1)] == StreamOrder(((0, 8),) * 4, writes)


@pytest.mark.parametrize("inputs", SPREAD_INPUTS)
def test_a_depthwise_spread_call_is_bounded_by_its_access_record(inputs: int) -> None:
    """Output pixel i of a 1x2 window over 4 output channels reading ``inputs`` input channels a tap (a depth
    multiplier of 4 / inputs): x[inputs * i + inputs * k + j] for k < 2, j < inputs (bytes [inputs * i, inputs * i
    + 2 * inputs)), w[4k + c] (bytes [0, 8)), out[4i + c] (bytes [16i, 16i + 16))."""

    @T.prim_func
    def func(x: T.Buffer((10,), "int8"), w: T.Buffer((8,), "int8"), out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", SPREAD_OPS[inputs], T.address_of(out[i * 4]),
                                     T.address_of(x[i * inputs]), T.address_of(w[0]), 2 * inputs, inputs, 8, 4, 1,
                                     2))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(4))
    assert streams[(0, 0)] == StreamOrder(tuple((inputs * i, inputs * i + 2 * inputs) for i in range(4)), writes)
    assert streams[(0, 1)] == StreamOrder(((0, 8),) * 4, writes)


def test_a_row_dot_call_is_bounded_by_its_access_record() -> None:
    """Output tile i of four filters, each a row of 6 state values and 6 time weights (rows 6 apart): x bytes
    [24i, 24i + 24), w bytes [24i, 24i + 24), out bytes [16i, 16i + 16)."""

    @T.prim_func
    def func(x: T.Buffer((48,), "int8"), w: T.Buffer((48,), "int8"), out: T.Buffer((8,), "int32")):
        for i in range(2):
            T.evaluate(T.call_intrin("int32", ROW_DOT_OP, T.address_of(out[i * 4]), T.address_of(x[i * 24]),
                                     T.address_of(w[i * 24]), 6, 6, 6))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(2))
    reads = tuple((24 * i, 24 * i + 24) for i in range(2))
    assert streams[(0, 0)] == StreamOrder(reads, writes)
    assert streams[(0, 1)] == StreamOrder(reads, writes)


def test_a_copy_call_is_bounded_by_its_access_record() -> None:
    """Two runs of 3 int16 copied 3 elements down: x bytes [6 + 6i, 12 + 6i) to out bytes [6i, 6i + 6)."""

    @T.prim_func
    def func(x: T.Buffer((12,), "int16"), out: T.Buffer((6,), "int16")):
        for i in range(2):
            T.evaluate(T.call_intrin("int32", COPY_OP, T.address_of(out[i * 3]), T.address_of(x[3 + i * 3]), 3, 2))

    assert streams_by_pair(func)[(0, 0)] == StreamOrder(tuple((6 + 6 * i, 12 + 6 * i) for i in range(2)),
                                                       tuple((6 * i, 6 * i + 6) for i in range(2)))


def test_a_helper_size_that_is_not_a_constant_gives_no_order() -> None:
    """The rows argument is a loop variable, not a constant: the record bounds neither x nor w (rows scales
    the elements of both), so no input gets an order."""

    @T.prim_func
    def func(x: T.Buffer((32,), "int8"), w: T.Buffer((32,), "int8"), out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", DUAL_MAC_OP, T.address_of(out[i * 4]), T.address_of(x[0]),
                                     T.address_of(w[0]), 8, 8, i, 8))

    assert streams_by_pair(func) == {}


def test_a_size_chosen_by_a_select_is_bounded_per_case() -> None:
    """Before: a `Select` among the sizes was no constant, so neither input got an order. Expected: each pass reads
    the branch its analysis proves: row stride 8 for i < 2 (x bytes [8i, 8i + 12): rows at 8i and 8i + 8), 4 after
    (bytes [8i, 8i + 8)); the weights' bounds do not depend on the stride."""

    @T.prim_func
    def func(x: T.Buffer((40,), "int8"), w: T.Buffer((32,), "int8"), out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", DUAL_MAC_OP, T.address_of(out[i * 4]), T.address_of(x[i * 8]),
                                     T.address_of(w[0]), T.Select(i < 2, 8, 4), 8, 2, 4))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(4))
    assert streams[(0, 0)] == StreamOrder(((0, 12), (8, 20), (16, 24), (24, 32)), writes)
    assert streams[(0, 1)] == StreamOrder(((0, 32),) * 4, writes)


def test_a_choice_of_addresses_is_bounded_per_case() -> None:
    """Before: an address handed through the address choice (`conv_tiles.CHOOSE_OP`, the shared call of an interior
    and a border pixel) was an address the records did not describe: no order for x nor y. Expected: for i < 2
    the call reads x from 8i with row stride 4 (bytes [8i, 8i + 8)), after that y from 8(i - 2) with row stride 8
    (bytes [8(i - 2), 8(i - 2) + 12)); the other branch's address, whose element the kernel names but the call
    does not read in that pass, adds that element (x[8i] for i >= 2) or nothing (y's index below 0)."""

    @T.prim_func
    def func(x: T.Buffer((32,), "int8"), y: T.Buffer((32,), "int8"), w: T.Buffer((32,), "int8"),
             out: T.Buffer((16,), "int32")):
        for i in range(4):
            T.evaluate(T.call_intrin("int32", DUAL_MAC_OP, T.address_of(out[i * 4]),
                                     T.call_intrin("handle", CHOOSE_OP, i < 2, T.address_of(x[i * 8]),
                                                   T.address_of(y[i * 8 - 16])),
                                     T.address_of(w[0]), T.Select(i < 2, 4, 8), 8, 2, 4))

    streams = streams_by_pair(func)
    writes = tuple((16 * i, 16 * i + 16) for i in range(4))
    assert streams[(0, 0)] == StreamOrder(((0, 8), (8, 16), (16, 17), (24, 25)), writes)
    assert streams[(0, 1)] == StreamOrder(((0, 0), (0, 0), (0, 12), (8, 20)), writes)


def test_a_choice_the_pass_cannot_decide_is_bounded_by_both_cases() -> None:
    """The condition reads the inner loop's variable, and the passes are the outer loop's iterations (200 x 2
    iterations exceed PASSES_PER_LOOP), so every pass runs both cases: x from 8i with stride 4 and from 8i + 4
    with stride 8, bytes [8i, 8i + 16)."""

    @T.prim_func
    def func(x: T.Buffer((1608,), "int8"), w: T.Buffer((32,), "int8"), out: T.Buffer((1600,), "int32")):
        for i in range(200):
            for j in range(2):
                T.evaluate(T.call_intrin("int32", DUAL_MAC_OP, T.address_of(out[i * 8 + j * 4]),
                                         T.call_intrin("handle", CHOOSE_OP, j < 1, T.address_of(x[i * 8]),
                                                       T.address_of(x[i * 8 + 4])),
                                         T.address_of(w[0]), T.Select(j < 1, 4, 8), 8, 2, 4))

    assert streams_by_pair(func)[(0, 0)].reads == tuple((8 * i, 8 * i + 16) for i in range(200))


def _conv_chain_model() -> bytes:
    """int8 [1, 7, 6, 8] -> CONV_2D 1x1 (8 channels) -> CONV_2D 3x3 VALID (8) -> CONV_2D 1x1 (4) -> output:
    the 3x3 convolution reads the first one's 336-byte output and writes its own 160 bytes, the dual MAC
    reading its windows on cortex-m4f."""
    from tflite_builder import Model, Operator, Options, Quantization, Tensor, build

    rng = np.random.default_rng(11)
    model = Model([Tensor("input", (1, 7, 6, 8), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    previous, in_channels = 0, 8
    for index, (out_channels, kernel, size) in enumerate([(8, 1, (7, 6)), (8, 3, (5, 4)), (4, 1, (5, 4))]):
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
        weights = rng.integers(-127, 128, (out_channels, kernel, kernel, in_channels)).astype(np.int8)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"conv{index}/weights", weights.shape, "int8", Quantization(scales, (0,) * out_channels, 0),
                   weights),
            Tensor(f"conv{index}/bias", (out_channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0),
                   rng.integers(-3000, 3000, out_channels).astype(np.int32)),
            Tensor(f"conv{index}/output", (1, *size, out_channels), "int8", Quantization((0.05,), (-3,)))]
        options = Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1,
                                            "DilationWFactor": 1, "DilationHFactor": 1})
        model.operators.append(Operator("CONV_2D", (previous, first, first + 1), (first + 2,), options, 3))
        previous, in_channels = first + 2, out_channels
    model.outputs = (previous,)
    return build(model)


def test_a_dual_mac_convolution_takes_over_its_input_on_cortex_m4f(tmp_path) -> None:
    """The 3x3 convolution's output starts just below its input (the dual MAC's windows stay ahead of its
    writes): the arena is smaller than the two intermediates side by side (336 + 160 bytes) beside the kernels'
    scratch (the fused pair tiles' widened inputs), and the bundle passes its self-test under QEMU and, built on
    the host with poisoned gaps and sanitizers, there too."""
    from c_checks import strict_sanitized_selftest
    from tvm_ext.compile import compile

    model = tmp_path / "chain.tflite"
    model.write_bytes(_conv_chain_model())
    bundle = compile(model, "cortex-m4f", tmp_path / "m4f", jobs=1)
    assert "dual_mac" in (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    assert bundle.selftest.passed and bundle.selftest.where.startswith("mps2-"), bundle.selftest.output
    tensors = json.loads((bundle.out_dir / "manifest.json").read_text())["tensors"]
    scratch = sum(t["bytes"] for t in tensors if t["role"] == "scratch")
    assert bundle.memory.arena_bytes < 336 + 160 + scratch
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{bundle.plan.model.upper()}_POISON_ARENA",
                                     ("selftest", "CFLAGS=-std=c99 -O2", "AR=ar"))
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_kws_on_cortex_m4f_needs_less_arena_than_before_helper_records(compiled) -> None:
    """kws_ref_model on cortex-m4f: 16,256 B of arena while its MAC helpers hid their accesses (10,048 B on
    lowpower, whose kernels have no helper calls); 16,000 B once they were recorded but while the planner
    missed the chain of streamed hand-overs (two activations side by side); 10,304 B with it (issue 19),
    so below 11,000 B only with the hand-overs, with the QEMU self-test passing."""
    bundle = compiled("mlperf_tiny/kws_ref_model.tflite", "cortex-m4f")  # the session's, shared with the e2e tests
    assert bundle.selftest.passed and bundle.selftest.where.startswith("mps2-"), bundle.selftest.output
    assert bundle.memory.arena_bytes < 11_000


def test_a_depthwise_border_call_reaches_the_taps_inside_the_image_only() -> None:
    """Three output rows of one pixel of a 3x1 window over a 3-row image of 4 channels (rows 4 bytes apart): the
    border call's x is its first tap inside the image, of inside_rows rows there (2, 3, 2: `Select`s of constants,
    read case by case). Expected reads: rows 0-1, 0-2, 1-2 (bytes [0, 8), [0, 12), [4, 12)). Before: the record read
    the whole window of 3 rows from that tap, one row past the image at the last pixel ([4, 16))."""
    border = DSP_BORDER_OPS[("int32", "3x3")]

    @T.prim_func
    def func(x: T.Buffer((12,), "int8"), w: T.Buffer((12,), "int16"), out: T.Buffer((12,), "int8")):
        for y in range(3):
            T.evaluate(T.call_intrin("int32", border, T.address_of(out[y * 4]),
                                     T.address_of(x[T.Select(y < 1, y, y - 1) * 4]), T.address_of(w[0]),
                                     T.address_of(w[0]), T.address_of(w[0]), T.address_of(w[0]), -128, 4, 4, 4, 4, 3,
                                     1, T.Select(y < 1, 1, 0), 0, T.Select(y < 1, 2, T.Select(y < 2, 3, 2)), 1, -128,
                                     4))

    assert streams_by_pair(func)[(0, 0)].reads == ((0, 8), (0, 12), (4, 12))


def test_a_branch_behind_a_truth_hint_that_never_runs_in_a_pass_reaches_nothing() -> None:
    """Pixel i copies x[i + 1] where ``likely(i < 3)`` (the DSP depthwise kernels' test of the interior), else x[i].
    Expected: each pass reads its branch's byte alone (the analysis sees through the hint), pass 3 x[3]. Before:
    every pass both branches' (x[i] and x[i + 1]: the hint a call it could not decide)."""

    @T.prim_func
    def func(x: T.Buffer((5,), "int8"), out: T.Buffer((4,), "int8")):
        for i in range(4):
            if T.call_intrin("int32", DSP_LIKELY_OP, T.Cast("int32", i < 3)) != 0:
                out[i] = x[i + 1]
            else:
                out[i] = x[i]

    assert streams_by_pair(func)[(0, 0)].reads == ((1, 2), (2, 3), (3, 4), (3, 4))
