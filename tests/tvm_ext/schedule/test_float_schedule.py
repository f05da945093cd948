"""Float convolutions scheduled for Cortex-M cores: the padded border's bounds test taken out of the
multiply-accumulate loop (tvm_ext/codegen/padding_test_hoist.py), the float channel tile the profile chooses
(tvm_ext/schedule/float_schedule.py), and float models computing what LiteRT computes on the emulated cortex-m4f."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
import tvm_ffi  # noqa: E402
from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402
from tflite.Padding import Padding  # noqa: E402
from tvm import te, topi  # noqa: E402
from tvm.script import tirx as T  # noqa: E402

from target.resolve import resolve_profile  # noqa: E402
from tflite_builder import Model, Operator, Options, Tensor, build  # noqa: E402
from backends.schedules import kernel_schedules_of  # noqa: E402
from tvm_ext.schedule.float_schedule import FPU_CHANNEL_TILES, PIXEL_TILE  # noqa: E402
from tvm_ext.codegen.padding_test_hoist import hoist_padding_tests  # noqa: E402
from tvm_ext.schedule.kernel_schedule import inline_intermediates  # noqa: E402


def _hoisted(func):
    return hoist_padding_tests(tvm.IRModule({"main": func}))["main"]


@functools.cache
def _border_cases() -> dict[str, tuple]:
    """The cases of test_border_tests_leave_the_mac_loop by id: (function before the pass, function expected),
    parsed once, when a test first asks (TVMScript parsed at import would be paid by every worker's collection)."""
    # A lowered 3x3 float convolution (SAME padding, 2 input and 4 output channels, 4x4 image), as TOPI's
    # conv2d reaches the pass: the bounds test in the innermost statement.
    @T.prim_func(private=True)
    def conv_before(x: T.Buffer((32,), "float32"), w: T.Buffer((72,), "float32"), out: T.Buffer((64,), "float32")):
        for yy, xx in T.grid(4, 4):
            acc = T.alloc_buffer((4,))
            for ff_init in T.unroll(4):
                acc[ff_init] = T.float32(0.0)
            for ry, rx, rc in T.grid(3, 3, 2):
                for ff in T.unroll(4):
                    acc[ff] = acc[ff] + T.if_then_else(
                        1 <= yy + ry and yy + ry < 5 and 1 <= xx + rx and xx + rx < 5,
                        x[yy * 8 + ry * 8 + xx * 2 + rx * 2 + rc - 10], T.float32(0.0)) * w[ry * 24 + rx * 8 + rc * 4 + ff]
            for ff in range(4):
                out[yy * 16 + xx * 4 + ff] = acc[ff]


    @T.prim_func(private=True)
    def conv_expected(x: T.Buffer((32,), "float32"), w: T.Buffer((72,), "float32"), out: T.Buffer((64,), "float32")):
        for yy, xx in T.grid(4, 4):
            acc = T.alloc_buffer((4,))
            for ff_init in T.unroll(4):
                acc[ff_init] = T.float32(0.0)
            for ry, rx in T.grid(3, 3):
                if 1 <= yy + ry and yy + ry < 5 and 1 <= xx + rx and xx + rx < 5:
                    for rc in range(2):
                        for ff in T.unroll(4):
                            acc[ff] = acc[ff] + x[yy * 8 + ry * 8 + xx * 2 + rx * 2 + rc - 10] * w[ry * 24 + rx * 8 + rc * 4 + ff]
            for ff in range(4):
                out[yy * 16 + xx * 4 + ff] = acc[ff]


    # An int8 convolution pads with the input zero point (not a float accumulation of zeros): left as it is.
    @T.prim_func(private=True)
    def int8_conv(x: T.Buffer((32,), "int8"), w: T.Buffer((72,), "int8"), out: T.Buffer((64,), "int32")):
        for yy, xx in T.grid(4, 4):
            acc = T.alloc_buffer((1,), "int32")
            acc[0] = 0
            for ry, rx, rc in T.grid(3, 3, 2):
                acc[0] = acc[0] + (T.if_then_else(
                    1 <= yy + ry and yy + ry < 5 and 1 <= xx + rx and xx + rx < 5,
                    T.Cast("int32", x[yy * 8 + ry * 8 + xx * 2 + rx * 2 + rc - 10]), -3) + 3) * T.Cast("int32", w[ry * 24 + rx * 8 + rc * 4])
            out[yy * 4 + xx] = acc[0]


    # A loop that also stores something else keeps that store unconditional: only the accumulation goes under
    # the test (skipping the whole loop would skip the other store).
    @T.prim_func(private=True)
    def mixed_before(x: T.Buffer((32,), "float32"), w: T.Buffer((72,), "float32"), out: T.Buffer((32,), "float32")):
        for yy, xx in T.grid(4, 4):
            acc = T.alloc_buffer((1,))
            acc[0] = T.float32(0.0)
            for ry, rx, rc in T.grid(3, 3, 2):
                acc[0] = acc[0] + T.if_then_else(
                    1 <= yy + ry and yy + ry < 5 and 1 <= xx + rx and xx + rx < 5,
                    x[yy * 8 + ry * 8 + xx * 2 + rx * 2 + rc - 10], T.float32(0.0)) * w[ry * 24 + rx * 8 + rc]
                out[yy * 8 + xx * 2 + rc] = acc[0]


    @T.prim_func(private=True)
    def mixed_expected(x: T.Buffer((32,), "float32"), w: T.Buffer((72,), "float32"), out: T.Buffer((32,), "float32")):
        for yy, xx in T.grid(4, 4):
            acc = T.alloc_buffer((1,))
            acc[0] = T.float32(0.0)
            for ry, rx, rc in T.grid(3, 3, 2):
                if 1 <= yy + ry and yy + ry < 5 and 1 <= xx + rx and xx + rx < 5:
                    acc[0] = acc[0] + x[yy * 8 + ry * 8 + xx * 2 + rx * 2 + rc - 10] * w[ry * 24 + rx * 8 + rc]
                out[yy * 8 + xx * 2 + rc] = acc[0]


    # A tile of two output pixels (unrolled): two tests. A tile inside the image runs without tests, one that
    # touches the border takes a copy with each accumulation under its own test.
    @T.prim_func(private=True)
    def pixel_tile_before(x: T.Buffer((16,), "float32"), w: T.Buffer((6,), "float32"), out: T.Buffer((8,), "float32")):
        for xo in range(4):
            acc = T.alloc_buffer((2,))
            acc[0] = T.float32(0.0)
            acc[1] = T.float32(0.0)
            for rx, rc in T.grid(3, 2):
                acc[0] = acc[0] + T.if_then_else(1 <= xo * 2 + rx and xo * 2 + rx < 9,
                                                 x[xo * 4 + rx * 2 + rc - 2], T.float32(0.0)) * w[rx * 2 + rc]
                acc[1] = acc[1] + T.if_then_else(1 <= xo * 2 + rx + 1 and xo * 2 + rx + 1 < 9,
                                                 x[xo * 4 + rx * 2 + rc], T.float32(0.0)) * w[rx * 2 + rc]
            out[xo * 2] = acc[0]
            out[xo * 2 + 1] = acc[1]


    @T.prim_func(private=True)
    def pixel_tile_expected(x: T.Buffer((16,), "float32"), w: T.Buffer((6,), "float32"), out: T.Buffer((8,), "float32")):
        for xo in range(4):
            acc = T.alloc_buffer((2,))
            acc[0] = T.float32(0.0)
            acc[1] = T.float32(0.0)
            for rx in range(3):
                if 1 <= xo * 2 + rx and xo * 2 + rx < 9 and (1 <= xo * 2 + rx + 1 and xo * 2 + rx + 1 < 9):
                    for rc in range(2):
                        acc[0] = acc[0] + x[xo * 4 + rx * 2 + rc - 2] * w[rx * 2 + rc]
                        acc[1] = acc[1] + x[xo * 4 + rx * 2 + rc] * w[rx * 2 + rc]
                else:
                    for rc in range(2):
                        if 1 <= xo * 2 + rx and xo * 2 + rx < 9:
                            acc[0] = acc[0] + x[xo * 4 + rx * 2 + rc - 2] * w[rx * 2 + rc]
                        if 1 <= xo * 2 + rx + 1 and xo * 2 + rx + 1 < 9:
                            acc[1] = acc[1] + x[xo * 4 + rx * 2 + rc] * w[rx * 2 + rc]
            out[xo * 2] = acc[0]
            out[xo * 2 + 1] = acc[1]

    return {"conv": (conv_before, conv_expected), "mixed": (mixed_before, mixed_expected),
            "pixel-tile": (pixel_tile_before, pixel_tile_expected), "int8": (int8_conv, int8_conv)}


@pytest.mark.parametrize("case", ["conv", "mixed", "pixel-tile", "int8"])
def test_border_tests_leave_the_mac_loop(case):
    before, expected = _border_cases()[case]
    assert tvm_ffi.structural_equal(_hoisted(before), expected, map_free_vars=True)


def _float_conv_model(folder: Path) -> Path:
    """A float model: 3x3 CONV_2D (SAME, 3 -> 8 channels, RELU), 3x3 DEPTHWISE_CONV_2D (SAME, stride 2),
    1x1 CONV_2D (8 -> 12 channels) on a [1, 9, 7, 3] input."""
    rng = np.random.default_rng(5)

    def const(name: str, shape: tuple[int, ...]) -> Tensor:
        return Tensor(name, shape, "float32", data=rng.standard_normal(shape).astype(np.float32))

    def conv_options(stride: int, activation: int, depthwise: bool = False) -> Options:
        fields = {"Padding": Padding.SAME, "StrideW": stride, "StrideH": stride, "DilationWFactor": 1,
                  "DilationHFactor": 1, "FusedActivationFunction": activation}
        if depthwise:
            fields["DepthMultiplier"] = 1
        return Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)

    tensors = [Tensor("input", (1, 9, 7, 3), "float32"),
               const("conv/weights", (8, 3, 3, 3)), const("conv/bias", (8,)), Tensor("conv", (1, 9, 7, 8), "float32"),
               const("dw/weights", (1, 3, 3, 8)), const("dw/bias", (8,)), Tensor("dw", (1, 5, 4, 8), "float32"),
               const("pw/weights", (12, 1, 1, 8)), const("pw/bias", (12,)), Tensor("pw", (1, 5, 4, 12), "float32")]
    operators = [Operator("CONV_2D", (0, 1, 2), (3,), conv_options(1, ActivationFunctionType.RELU)),
                 Operator("DEPTHWISE_CONV_2D", (3, 4, 5), (6,), conv_options(2, ActivationFunctionType.NONE, True)),
                 Operator("CONV_2D", (6, 7, 8), (9,), conv_options(1, ActivationFunctionType.NONE))]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "float_convs.tflite"
    path.write_bytes(build(Model(tensors, operators, inputs=(0,), outputs=(9,))))
    return path


@pytest.mark.slow
def test_float_convolutions_match_litert_on_cortex_m4f(compiled):
    board = compiled(_float_conv_model, "cortex-m4f")
    assert board.selftest.passed and board.selftest.where == "mps2-an386", board.selftest.output
    calls = {call["kernel"]: call for call in json.loads((board.out_dir / "manifest.json").read_text())["layer_report"]["calls"]}
    conv = calls["float_convs_conv2d_add_relu_3x3_s1_9x7x8"]
    # Measured (the bundle's own counter): 5.4 instructions per MAC with the border test once per tap, 7.1 with
    # the test in the MAC loop.
    assert conv["instructions_per_mac"] < 6.5, conv


@pytest.mark.parametrize("profile, tiles", [("cortex-m4f", (8, 4)), ("cortex-m7", (8, 4)), ("cortex-m33", (8, 4)),
                                            ("cortex-m0plus", ()), ("lowpower", ()), ("hifi4", ())])
def test_profile_chooses_the_float_tiles(profile, tiles):
    assert kernel_schedules_of(resolve_profile(profile)).float_channel_tiles == tiles


def _float_conv(channels: int, seed: int, kernel: int = 3) -> tuple[tvm.tirx.PrimFunc, list[np.ndarray]]:
    """TOPI's float NHWC `kernel` x `kernel` conv (SAME) of a [1, 6, 4, 3] input into `channels`, and random
    operands."""
    rng = np.random.default_rng(seed)
    x = te.placeholder((1, 6, 4, 3), "float32", name="x")
    w = te.placeholder((kernel, kernel, 3, channels), "float32", name="w")
    out = topi.nn.conv(x, w, 1, kernel // 2, 1, 1, "NHWC", "HWIO")
    operands = [rng.standard_normal(shape).astype(np.float32) for shape in ((1, 6, 4, 3), (kernel, kernel, 3, channels))]
    return te.create_prim_func([x, w, out]), operands


def _run(func: tvm.tirx.PrimFunc, operands: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    lib = tvm.tirx.build(tvm.IRModule({"main": func}), target="llvm")
    dev = tvm.cpu()
    result = tvm.runtime.tensor(np.zeros(out_shape, np.float32), dev)
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in operands], result)
    return result.numpy()


@pytest.mark.parametrize("kernel, channels, channel_tile, pixel_tile", [
    (3, 16, 8, PIXEL_TILE), (3, 8, 4, PIXEL_TILE), (3, 6, 1, 1), (1, 16, 8, PIXEL_TILE), (1, 6, 1, 1)])
def test_float_conv_tiles_and_computes_the_same_bits(kernel, channels, channel_tile, pixel_tile):
    """The widest channel tile that divides the channels, with a tile of pixels where the channels are tiled;
    the same bits as the untiled kernel."""
    func, operands = _float_conv(channels, seed=channels, kernel=kernel)
    untiled = _run(inline_intermediates(func), operands, (1, 6, 4, channels))
    scheduled = inline_intermediates(func, 4, float_tiles=FPU_CHANNEL_TILES)
    np.testing.assert_array_equal(_run(scheduled, operands, (1, 6, 4, channels)), untiled)
    unrolled = sorted(int(n) for n in re.findall(r"T\.unroll\((\d+)\)", scheduled.script()))
    assert set(unrolled) == {tile for tile in (channel_tile, pixel_tile) if tile > 1}
