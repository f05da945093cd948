"""The DSP cores' kernel of an int8 DEPTHWISE_CONV_2D whose channels are not whole tiles of four (depth multiplier 1,
stepping one column): its output rows as runs of elements, four a call of the fused depthwise tile
(`<prefix>_depthwise_tiles_s8x4`, `backends.cortex_m.schedules.depthwise_tiles.DSP_TILES_OPS`), whatever the channel
count: the kernel the int8 lowering writes for such a layer where the backend gives one
(`backends.backend.KernelSchedules.few_channel_depthwise`).

Why: the DSP depthwise schedules take four consecutive channels of a pixel a tap, so a layer of 3, 5 or 6 channels
kept TVM's scalar loop nest, one copy per border case (cortex-m4f: a 3x3 layer over 12x12x3 12.4 instructions per MAC,
974 B of code). Where the window steps one column, an output row's elements (pixel x's channel c is element
x * C + c) read their taps at one offset from the element whatever the channel (tap (r, k) at input row r, element
+ k * dilation * C), so any four consecutive elements are a tile: its lanes' channels are (e + lane) mod C from its
first element e, its weights those of the tile's phase e mod C. The kernel builds on its stack, once per call, the
weights, biases, multipliers and shifts of each of the C phases in the tile's lane order (weight[r, k, (p + lane) mod
C]), and per output row the window's rows as a band padded with the input's zero point (the padding's value: the
zero point is folded into the biases), then calls the tile on the band for each four elements of the row, the last
four ending at the row's end (it may overlap the one before it: both write the same values). The same sums of the
same products and TFLite's double-rounding requantization: bit-exact.

Chosen by shape (`few_channel_depthwise` gives None elsewhere: the generic kernel then): one int8 image, depth
multiplier 1, channels not a multiple of four (at least 2), a window stepping one column (any row stride, dilation,
padding), an output row of at least four elements, int32 or int16 biases with the input zero point folded in,
per-channel multipliers and shifts of the "double_small" requantization, no activation narrower than int8, a band and
phases within BAND_BYTES and PHASE_BYTES of stack, and at least INSIDE of the window taps in the image.
"""

from __future__ import annotations

from typing import Optional, Sequence

from tvm import te, tirx

from backends.cortex_m.schedules.depthwise_tiles import DSP_TILES_OPS
from backends.cortex_m.schedules.window1_conv import _Stage
from tvm_ext.tir.extern_stage import element_address, extern_from_zero, row_major_indices

BAND_BYTES = 1024
"""The most bytes of the window's rows, padded, the kernel keeps on its stack."""
PHASE_BYTES = 1024
"""The most bytes of the phases' constants the kernel keeps on its stack (`phase_bytes`)."""
LANES = 4
"""The elements of one tile (the fused helper's four channels)."""
INSIDE = 2 / 3
"""The least share of the layer's window taps lying in the image for the runs: they compute every tap over the
padded band, where the generic kernel's border cases skip the padding's (the layer sweep's 3x3 of dilation 3 over
6x6x5, 44% inside: 10,931 -> 11,130 instructions on cortex-m4f with the runs; its 3x3 over 6x6x5, 79%: 19,451 ->
10,949)."""


def inside_share(size: int, kernel: int, stride: int, dilation: int, before: int, outputs: int) -> float:
    """The share of `outputs` windows' taps (`kernel` taps `dilation` apart, `stride` apart, the first `before`
    elements ahead of the axis) along an axis of `size` elements that lie on the axis."""
    inside = sum(0 <= o * stride - before + k * dilation < size for o in range(outputs) for k in range(kernel))
    return inside / (outputs * kernel)


def phase_bytes(channels: int, taps: int, bias_bytes: int) -> int:
    """The stack bytes of the C phases' constants in lane order: per phase and lane its int8 weight of each of the
    window's `taps`, its bias (`bias_bytes`), int32 multiplier and int8 shift."""
    return channels * LANES * (taps + bias_bytes + 4 + 1)


def _fits(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], stage: _Stage,
          multiplier: Optional[te.Tensor], shift: Optional[te.Tensor], zero_point_in_bias: bool) -> bool:
    """Whether the tiles compute this layer's outputs (the module docstring's requantization and operands)."""
    batch, _, _, channels = (int(d) for d in data.shape)
    return (str(data.dtype) == "int8" and batch == 1 and str(weight.dtype) == "int8"
            and int(weight.shape[2]) == channels and channels % LANES != 0 and channels >= 2
            and bias is not None and str(bias.dtype) in ("int32", "int16") and zero_point_in_bias
            and multiplier is not None and shift is not None and stage.rounding.value == "double"
            and stage.right_shift_only and stage.small_accumulator and stage.activation.low <= -128
            and stage.activation.high >= 127)


def few_channel_depthwise(data: te.Tensor, weight: te.Tensor, bias: Optional[te.Tensor], *, input_zero_point: int,
                          output: _Stage, strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                          multiplier: Optional[te.Tensor] = None, shift: Optional[te.Tensor] = None,
                          zero_point_in_bias: bool = False) -> Optional[te.Tensor]:
    """An int8 DEPTHWISE_CONV_2D (operands and keywords as `tvm_ext.kernels.depthwise_conv2d_int8`'s: weight
    (KH, KW, C)) as runs of four-element tiles (module docstring), or None where they do not fit it."""
    if not _fits(data, weight, bias, output, multiplier, shift, zero_point_in_bias) or strides[1] != 1:
        return None
    _, in_h, in_w, channels = (int(d) for d in data.shape)
    kh, kw = (int(d) for d in weight.shape[:2])
    top, left, bottom, right = (int(p) for p in padding)
    out_h = (in_h + top + bottom - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = in_w + left + right - (kw - 1) * dilation[1]
    run = out_w * channels  # an output row's elements
    pitch = (left + in_w + right) * channels  # a band row's
    taps = kh * kw
    share = inside_share(in_h, kh, strides[0], dilation[0], top, out_h) * inside_share(in_w, kw, 1, dilation[1], left,
                                                                                        out_w)
    bias_bytes = 4 if str(bias.dtype) == "int32" else 2
    if (run < LANES or kh * pitch > BAND_BYTES or phase_bytes(channels, taps, bias_bytes) > PHASE_BYTES
            or share < INSIDE):
        return None
    op = DSP_TILES_OPS[str(bias.dtype)]

    def build(ins, outs):
        source, weights, biases, multipliers, shifts = ins
        index = str(outs[0].shape[0].ty.dtype)

        def c(value: int) -> tirx.PrimExpr:
            return tirx.const(value, index)

        def loop(name: str, extent: int, body) -> tirx.Stmt:
            var = tirx.Var(name, index)
            return tirx.For(var, c(0), c(extent), tirx.ForKind.SERIAL, body(var))

        band = tirx.decl_buffer((kh * pitch,), "int8", name="band", scope="local")
        phase_w = tirx.decl_buffer((channels * taps * LANES,), "int8", name="phase_w", scope="local")
        phase_b = tirx.decl_buffer((channels * LANES,), str(bias.dtype), name="phase_b", scope="local")
        phase_m = tirx.decl_buffer((channels * LANES,), "int32", name="phase_m", scope="local")
        phase_s = tirx.decl_buffer((channels * LANES,), "int8", name="phase_s", scope="local")
        zero_point = tirx.const(input_zero_point, "int8")

        def phases(p: tirx.PrimExpr) -> tirx.Stmt:
            def lane(k: tirx.PrimExpr) -> tirx.Stmt:
                channel, at = tirx.truncmod(p + k, c(channels)), p * c(LANES) + k
                tap_weights = loop("t", taps, lambda t: tirx.BufferStore(
                    phase_w, tirx.BufferLoad(weights, [tirx.truncdiv(t, c(kw)), tirx.truncmod(t, c(kw)), channel]),
                    [(p * c(taps) + t) * c(LANES) + k]))
                return tirx.SeqStmt([tirx.BufferStore(buffer, tirx.BufferLoad(values, [channel]), [at])
                                     for buffer, values in ((phase_b, biases), (phase_m, multipliers),
                                                            (phase_s, shifts))] + [tap_weights])
            return loop("k", LANES, lane)

        def band_row(y: tirx.PrimExpr, r: tirx.PrimExpr) -> tirx.Stmt:
            """Band row r: input row y * stride - top + r * dilation's elements, or the zero point outside."""
            row = y * c(strides[0]) - c(top) + r * c(dilation[0])
            at = r * c(pitch) + c(left * channels)
            inside = loop("i", in_w * channels, lambda i: tirx.BufferStore(
                band, tirx.BufferLoad(source, row_major_indices(source, row * c(in_w * channels) + i)), [at + i]))
            outside = loop("i", in_w * channels, lambda i: tirx.BufferStore(band, zero_point, [at + i]))
            return tirx.IfThenElse(tirx.all(row >= c(0), row < c(in_h)), inside, outside)

        def tile(y: tirx.PrimExpr, t: tirx.PrimExpr) -> tirx.Stmt:
            first = tirx.min(t * c(LANES), c(run - LANES)) if run % LANES else t * c(LANES)
            phase = tirx.truncmod(first, c(channels))
            sizes = (pitch, dilation[1] * channels, kw * LANES, LANES, kh, kw, LANES)
            return tirx.Evaluate(tirx.call_intrin(
                "int32", op, element_address(outs[0], y * c(run) + first), element_address(band, first),
                element_address(phase_w, phase * c(taps * LANES)), element_address(phase_b, phase * c(LANES)),
                element_address(phase_m, phase * c(LANES)), element_address(phase_s, phase * c(LANES)),
                tirx.const(output.zero_point, "int32"), *(tirx.const(size, "int32") for size in sizes)))

        def out_row(y: tirx.PrimExpr) -> tirx.Stmt:
            return tirx.SeqStmt([loop("r", kh, lambda r: band_row(y, r)),
                                 loop("t", -(-run // LANES), lambda t: tile(y, t))])

        return tirx.SeqStmt([*(tirx.AllocBuffer(buffer) for buffer in (band, phase_w, phase_b, phase_m, phase_s)),
                             loop("p", channels, phases),
                             loop("i", kh * pitch, lambda i: tirx.BufferStore(band, zero_point, [i])),
                             loop("y", out_h, out_row)])

    return extern_from_zero((1, out_h, out_w, channels), [data, weight, bias, multiplier, shift], build,
                            "depthwise_conv2d_int8_runs")
