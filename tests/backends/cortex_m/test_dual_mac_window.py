"""A convolution pixel's window copied once for the dual MAC (backends/cortex_m/schedules/border_window.py): at the padded border
and, where the window rows are short, in the interior, every channel tile is ONE helper call over the whole
window (KH * KW * Cin contiguous bytes), instead of one call per tap (one input channel: one call per
multiply-accumulate) or per short row. Checked in the scheduled TIR, and bit-exactly against TFLite Micro
under QEMU and in the host build (the helper's portable path) on the shapes that take it: one input channel
with a 10x4 stride-2 window (kws's first convolution), three input channels with a 3x3 stride-2 window (vww's
and the ResNet's: in the scheduled TIR; their bundles on cortex-m4f take the few-channel kernel), five in a bundle,
output channel counts the tile does and does not divide, odd images.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest
from tvm import ir, s_tir, te, tirx

from backends.cortex_m.schedules.border_window import copied_window_length
from backends.cortex_m.schedules.dual_mac import DUAL_MAC_2PX_OP, DUAL_MAC_OP
from tvm_ext.kernels.conv import WeightLayout, conv2d_int8
from tvm_ext.kernels.fixed_point import Rounding
from tvm_ext.kernels.quant_params import ActivationRange
from tvm_ext.kernels.requantize import OutputStage
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, kernel_schedules
from target.resolve import resolve_profile
from tvm_ext.tir.tir_walk import walk


def _scheduled_conv(image: tuple[int, int], channels: int, window: tuple[int, int], stride: int,
                    padding: tuple[int, int, int, int], schedules=DUAL_MAC_SCHEDULES,
                    weight_length: Optional[int] = None) -> tirx.PrimFunc:
    """A padded int8 CONV_2D (8 output channels, OHWI weights, zero point folded) scheduled as for cortex-m4f
    (or with the MAC helpers' `schedules` of another core); with ``weight_length``, its weights OHWI_PADDED to
    that many per channel."""
    data = te.placeholder((1, *image, channels), "int8", name="data")
    padded = {"weight_layout": WeightLayout.OHWI_PADDED, "kernel_size": window} if weight_length else {
        "weight_layout": WeightLayout.OHWI}
    weight = te.placeholder((8, weight_length) if weight_length else (8, *window, channels), "int8", name="weight")
    bias = te.placeholder((8,), "int32", name="bias")
    stage = OutputStage(1 << 30, 0, 5, ActivationRange(-128, 127), next(iter(Rounding)))
    out = conv2d_int8(data, weight, bias, input_zero_point=-3, output=stage, strides=(stride, stride),
                      padding=padding, dilation=(1, 1), zero_point_in_bias=True, **padded)
    return inline_intermediates(te.create_prim_func([data, weight, bias, out]), 4, schedules)


def _helper_calls(node) -> list:
    """The dual MAC calls under ``node``, each as its size arguments (x_row_stride, w_channel_stride, rows,
    row_len)."""
    return [[int(a) for a in call.args[3:]] for call in walk(node)
            if isinstance(call, ir.Call) and getattr(call.op, "name", "") == DUAL_MAC_OP]


def _pixel_branch(func: tirx.PrimFunc) -> tirx.IfThenElse:
    return next(node for node in walk(func.body) if isinstance(node, tirx.IfThenElse))


@pytest.mark.parametrize("channels, window, stride, padding", [
    (1, (10, 4), 2, (4, 1, 5, 1)),  # kws's first convolution on a smaller image
    (3, (3, 3), 2, (0, 0, 1, 1)),  # vww's first convolution: SAME pads only bottom and right
    (3, (3, 3), 1, (1, 1, 1, 1)),  # the ResNet's first convolution
])
def test_short_rows_and_border_are_one_helper_call_over_the_whole_window(channels, window, stride, padding):
    """Interior and border: one call per channel tile, one run of KH * KW * Cin bytes; the border asks its test
    once per tap (around the copy), never around a MAC."""
    func = _scheduled_conv((10, 10), channels, window, stride, padding)
    whole = window[0] * window[1] * channels
    branch = _pixel_branch(func)
    for case in (branch.then_case, branch.else_case):
        assert _helper_calls(case) == [[whole, whole, 1, whole]], case
    border_tests = [node for node in walk(branch.else_case) if isinstance(node, tirx.IfThenElse)]
    assert len(border_tests) == 1  # the window copy's, once per tap
    assert not _helper_calls(border_tests[0])


@pytest.mark.parametrize("channels, window, stride, padding", [
    (3, (3, 3), 2, (0, 0, 1, 1)),  # a stem: 27 inputs, padded to 28
    (3, (2, 3), 1, (0, 1, 1, 1)),  # 18 inputs, padded to 20
])
def test_padded_weights_make_the_copied_window_whole_groups_of_four(channels, window, stride, padding):
    """With each channel's weights padded to the next multiple of four (`copied_window_length`), the zeros after
    the window are written once before any pixel, interior and border copy the window only, and each channel
    tile's call reads the padded length: no scalar tail. The rule pads only copied windows that leave
    PADDED_TAIL_MIN or more inputs after their groups of four."""
    whole = window[0] * window[1] * channels
    length = copied_window_length(*window, channels, padded_input=True)
    assert length == whole + 4 - whole % 4
    func = _scheduled_conv((10, 10), channels, window, stride, padding, weight_length=length)

    def zeros(node) -> list[int]:
        return [int(store.indices[0]) for store in walk(node) if isinstance(store, tirx.BufferStore)
                and store.buffer.name == "window" and isinstance(store.value, tirx.IntImm) and int(store.value) == 0
                and isinstance(store.indices[0], tirx.IntImm)]

    branch = _pixel_branch(func)
    for case in (branch.then_case, branch.else_case):
        assert _helper_calls(case) == [[length, length, 1, length]], case
        assert not zeros(case)
    assert zeros(func.body) == list(range(whole, length))
    assert next(b for b in func.body.block.alloc_buffers if b.name == "window").shape[0] == length


def test_interior_copy_writes_its_rows_out_and_each_branch_has_its_own_accumulators():
    """The interior's copy (no test) is one loop nest per window row, not a loop over the rows; the interior and
    the border each accumulate in a buffer of their own (compacted apart, to one channel tile each)."""
    func = _scheduled_conv((10, 10), 3, (3, 3), 2, (0, 0, 1, 1))
    branch = _pixel_branch(func)
    copy = next(node for node in walk(branch.then_case) if isinstance(node, s_tir.SBlock)
                and node.name_hint == "padded_window")
    assert isinstance(copy.body, tirx.SeqStmt) and len(copy.body.seq) == 3
    assert all(isinstance(row, tirx.For) and int(row.extent) == 3 for row in copy.body.seq)

    def accumulators(node) -> list:
        found = []
        for store in walk(node):
            if isinstance(store, tirx.BufferStore) and str(store.buffer.dtype) == "int32" \
                    and not any(store.buffer.same_as(known) for known in found):
                found.append(store.buffer)
        return found

    interior, border = accumulators(branch.then_case), accumulators(branch.else_case)
    assert len(interior) == len(border) == 1 and not interior[0].same_as(border[0])
    owned = func.body.block.alloc_buffers
    assert all(any(buffer.same_as(own) for own in owned) for buffer in (*interior, *border))


@pytest.mark.parametrize("window, channels, padded_input, length", [
    ((3, 3), 3, True, 28),
    ((3, 3), 3, False, 27),  # unpadded: no copied window
    ((3, 3), 1, True, 9),  # one input left: the scalar tail is cheaper than a group of four
    ((3, 3), 6, True, 54),  # 18-byte rows are read in place
    ((10, 4), 1, True, 40),  # already whole groups
    ((1, 1), 3, True, 3),  # one row: not copied
])
def test_copied_window_length_pads_only_where_a_tail_of_two_or_more_is_copied(window, channels, padded_input,
                                                                              length):
    assert copied_window_length(*window, channels, padded_input) == length


@pytest.mark.parametrize("profile, window, channels, length", [
    ("cortex-m55", (3, 3), 3, 32),  # 16 + 11 inputs: two whole vectors instead of a predicated last one
    ("cortex-m55", (3, 3), 1, 16),
    ("cortex-m55", (10, 4), 1, 48),
    ("cortex-m55", (3, 3), 6, 64),  # 18-byte rows, under two vectors: copied (HELIUM_COPIED_ROW_BYTES), padded
    ("cortex-m55", (3, 3), 11, 112),  # 33-byte rows, under HELIUM_COPIED_ROW_BYTES: copied, padded
    ("cortex-m55", (3, 3), 43, 387),  # 129-byte rows read in place: not copied, not padded
    ("cortex-m4f", (3, 3), 3, 28),  # groups of four
])
def test_a_copied_window_is_padded_to_the_cores_group(profile, window, channels, length):
    """A Helium core pads a copied window to whole 16-lane vectors, a DSP core to groups of four."""
    assert kernel_schedules(resolve_profile(profile)).conv_weight_length(*window, channels, True) == length


def test_long_rows_stay_rows_in_the_interior():
    """With 16 input channels a 3x3 window row is 48 contiguous bytes: an interior pixel reads the rows in
    place (no copy; paired interior pixels, backends.cortex_m.schedules.pixel_pairs, too), the border copies its window."""
    func = _scheduled_conv((9, 8), 16, (3, 3), 1, (1, 1, 1, 1))
    assert _helper_calls(func.body) == [[8 * 16, 3 * 3 * 16, 3, 3 * 16], [144, 144, 1, 144]]


@pytest.mark.parametrize("channels, copied", [(12, True), (42, True), (43, False)])
def test_helium_copies_an_interior_window_of_rows_under_eight_vectors(channels, copied):
    """On Helium an interior pixel's 3x3 window of rows under HELIUM_COPIED_ROW_BYTES (36 and 126 bytes) is copied
    into one run, its weights padded to whole vectors, each channel tile then one row with one predicated tail;
    129-byte rows are read in place (the border's window copied either way)."""
    helium = kernel_schedules(resolve_profile("cortex-m55"))
    length = helium.conv_weight_length(3, 3, channels, True)
    func = _scheduled_conv((9, 8), channels, (3, 3), 1, (1, 1, 1, 1), helium.mac, length)
    mac_ops = [call.op.name for call in walk(func.body)
               if isinstance(call, ir.Call) and getattr(call.op, "name", "") in (DUAL_MAC_OP, DUAL_MAC_2PX_OP)]
    window_only = _helper_calls(func.body) == [[length, length, 1, length]] and mac_ops == [DUAL_MAC_OP]
    assert window_only == copied


pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from test_dual_mac import _strict_build, bit_exact_on_cortex_m4f  # noqa: E402

SAME = 0  # tflite.Padding


def _first_conv_model(channels: int, image: tuple[int, int], cases: list[tuple[int, int, int, int]],
                      seed: int) -> bytes:
    """One int8 input [1, *image, channels] (zero point 83, as kws's) and one SAME-padded CONV_2D per case
    (output channels, kernel height, kernel width, stride), each a model output."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *image, channels), "int8", Quantization((0.05,), (83,)))], [], (0,), ())
    for index, (out_channels, kh, kw, stride) in enumerate(cases):
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
        weights = rng.integers(-127, 128, (out_channels, kh, kw, channels)).astype(np.int8)
        bias = rng.integers(-3000, 3000, out_channels).astype(np.int32)
        out_shape = (1, -(-image[0] // stride), -(-image[1] // stride), out_channels)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"conv{index}/weights", weights.shape, "int8", Quantization(scales, (0,) * out_channels, 0), weights),
            Tensor(f"conv{index}/bias", (out_channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0), bias),
            Tensor(f"conv{index}/output", out_shape, "int8", Quantization((0.3,), (-5,)))]
        options = Options("Conv2DOptions", {"Padding": SAME, "StrideW": stride, "StrideH": stride,
                                            "DilationWFactor": 1, "DilationHFactor": 1})
        model.operators.append(Operator("CONV_2D", (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


MODELS = {
    # kws's first convolution (10x4 stride 2, one channel) on an odd 13x7 image; 12 and 6 output channels
    # (6: the tile of four does not divide it, the scalar path).
    "one_channel": lambda: _first_conv_model(1, (13, 7), [(12, 10, 4, 2), (6, 10, 4, 2), (8, 3, 3, 1)], seed=21),
    # Five channels (three or four take the few-channel kernel, backends/cortex_m/schedules/window1_conv.py):
    # 3x3 stride 2 (45-byte window: one byte left after the groups, not padded) and stride 1; 2x3 stride 1 (30
    # bytes, padded to 32).
    "five_channels": lambda: _first_conv_model(5, (9, 11), [(8, 3, 3, 2), (4, 3, 3, 1), (12, 2, 3, 1)], seed=22),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_windowed_convolutions_are_bit_exact_on_cortex_m4f_and_on_the_host(tmp_path, name):
    board = bit_exact_on_cortex_m4f(tmp_path, name, MODELS[name]())
    kernels_c = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    assert "window" in kernels_c  # the copied window is what this test exercises
    if name == "five_channels":  # 45 taps as they are, 30 padded to whole groups of four (copied_window_length)
        # (the window's row stride, the weights' channel stride, one row, its length: then the fused tiles'
        # channel count)
        assert "45, 45, 1, 45, 8)" in kernels_c and "32, 32, 1, 32, 12)" in kernels_c
    _strict_build(board.out_dir, tmp_path / "arm", [])  # warning-free with arm-none-eabi-gcc
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout
