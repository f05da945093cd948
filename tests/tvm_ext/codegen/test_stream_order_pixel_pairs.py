"""The stream order of a kernel that computes two output pixels per dual-MAC call (`backends.cortex_m.schedules.pixel_pairs`).

An unpadded 1x1 convolution over 3 rows of 5 columns on cortex-m4f runs, per pixel x of the image (rows and
columns fused: backends.cortex_m.schedules.flat_pixels), `if (x starts a pair) {pixels x and x + 1} else if (x does not end a
pair) {pixel x}`. Each pixel is a pass of its stream order; the pass of a pair's second pixel runs neither
branch, and the last pixel only its single pixel.
`tvm_ext.codegen.stream_order` leaves out a branch the pass's iterations prove never runs, so the order is exactly
that, within both buffers (it used to count both branches in every pass: a pass per odd column reading and
writing two pixels, the last pixel's pass reaching one pixel past the end of both tensors).
"""

from __future__ import annotations

import numpy as np

from memory_planner.api import StreamOrder

ROWS, COLUMNS, IN_CHANNELS, OUT_CHANNELS = 3, 5, 37, 8


def _conv_1x1_model(rows: int = ROWS, columns: int = COLUMNS, in_channels: int = IN_CHANNELS,
                    out_channels: int = OUT_CHANNELS, seed: int = 19) -> bytes:
    """int8 [1, rows, columns, in_channels] -> CONV_2D 1x1, stride 1, VALID (out_channels): by default
    [1, 3, 5, 37] -> 8 channels, a reduction of 37 bytes, long enough for two pixels per call, over 15
    pixels (pairs across rows, the last on its own)."""
    from tflite_builder import Model, Operator, Options, Quantization, Tensor, build

    rng = np.random.default_rng(seed)
    scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
    weights = rng.integers(-127, 128, (out_channels, 1, 1, in_channels)).astype(np.int8)
    model = Model([
        Tensor("input", (1, rows, columns, in_channels), "int8", Quantization((0.05,), (-3,))),
        Tensor("weights", weights.shape, "int8", Quantization(scales, (0,) * out_channels, 0), weights),
        Tensor("bias", (out_channels,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0),
               rng.integers(-3000, 3000, out_channels).astype(np.int32)),
        Tensor("output", (1, rows, columns, out_channels), "int8", Quantization((0.05,), (-3,))),
    ], [], (0,), (3,))
    options = Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1,
                                        "DilationWFactor": 1, "DilationHFactor": 1})
    model.operators.append(Operator("CONV_2D", (0, 1, 2), (3,), options, 3))
    return build(model)


def _expected_order() -> StreamOrder:
    reads, writes = [], []
    for pixel in range(ROWS * COLUMNS):  # pairs across rows (backends.cortex_m.schedules.flat_pixels), the last pixel alone
        pixels = 1 if pixel == ROWS * COLUMNS - 1 else 2 if pixel % 2 == 0 else 0
        reads.append((IN_CHANNELS * pixel, IN_CHANNELS * (pixel + pixels)) if pixels else (0, 0))
        writes.append((OUT_CHANNELS * pixel, OUT_CHANNELS * (pixel + pixels)) if pixels else (0, 0))
    return StreamOrder(tuple(reads), tuple(writes))


def test_paired_pixels_stream_pass_by_pass_within_both_buffers(tmp_path) -> None:
    from tvm_ext.compile import compile

    model = tmp_path / "conv.tflite"
    model.write_bytes(_conv_1x1_model())
    bundle = compile(model, "cortex-m4f", tmp_path / "m4f", jobs=1)
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    # pairs (their channel tiles one fused call, backends.cortex_m.schedules.pair_tiles), the last alone (its channel
    # tiles one fused call, backends.cortex_m.schedules.conv_tiles)
    assert "_pair_tiles_s8" in kernels and "conv_tiles_s8x4" in kernels
    (call,) = bundle.plan.calls
    (fact,) = [fact for fact in call.access.inplace_outputs if fact.input == call.inputs[0]]
    assert fact.stream == _expected_order()
    assert bundle.selftest.passed, bundle.selftest.output


def test_a_branch_the_pass_never_runs_reads_nothing_in_it() -> None:
    """The form of a padded border (kws's depthwise `if (y < 1)` reads from the image's first row): pass i
    reads x[0] only where i < 1, else x[i]; counted in every pass, x[0] would keep the whole input unread to
    the end, and the output could not start below it by less than its whole size."""
    from tvm.script import tirx as T

    from test_stream_order import order_of_input0, signature

    @T.prim_func
    def func(x: T.Buffer((4,), "int8"), out: T.Buffer((4,), "int8")):
        for i in range(4):
            if i < 1:
                out[i] = x[0]
            else:
                out[i] = x[i]

    order = order_of_input0(signature(func))
    assert order == StreamOrder(tuple((i, i + 1) for i in range(4)), tuple((i, i + 1) for i in range(4)))
    assert order.lead_bytes() == 1
