"""CONV_2D and DEPTHWISE_CONV_2D: ``q([act](add(conv2d(dq(x), dq(W)), dq(b))))`` -> one integer conv kernel."""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import Callable, Optional, Union

import numpy as np
import tvm
from tvm import relax

from ...kernels import WeightLayout, conv2d_int8, depthwise_conv2d_int8, fully_connected_int8
from ...kernels.dense import PAIRED_TILE, TILED_TILE, stacks_rows
from ...kernels.quant_params import conv_multipliers
from .binary import first_fitting
from .data_movement import recorded_operator
from .graph import Graph
from .lowering import Lowering, LoweringContext, Mismatch
from .mac import Conv2DGeometry, MacKernel, MacPattern, padded_channels, widened_16x8
from .patterns import Int8Weight, bias_constant, ends_float_operator, float_operator_mismatch

_PATTERN = MacPattern("relax.nn.conv2d")
_OPERATORS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"})
_NAMED = _OPERATORS | {"TRANSPOSE_CONV"}
"""The operators whose name a convolution's kernel keeps: a TRANSPOSE_CONV's phases
(`tvm_ext.transform.transpose_conv_phases`) are its convolutions."""


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[MacKernel, Mismatch]:
    """NHWC conv2d with an HWIO kernel (groups 1, or several: `block_diagonal`) or a depthwise HWOI kernel (groups =
    input channels)."""
    operands = _PATTERN.read(quantize, ctx)
    if operands is None:
        return float_operator_mismatch(quantize, ctx)
    conv, attrs = operands.core, operands.core.attrs
    weight = _weight_as_convolved(operands.weight, conv)
    if weight is None:
        return float_operator_mismatch(quantize, ctx)
    if attrs.data_layout != "NHWC" or attrs.out_layout != "NHWC":
        return float_operator_mismatch(quantize, ctx)
    groups, channels_in = int(attrs.groups), int(conv.args[0].ty.shape[3])
    grouped = groups > 1 and attrs.kernel_layout == "HWIO" and channels_in == weight.shape[2] * groups
    if grouped:
        # a grouped CONV_2D (a filter of input depth = input channels / groups, which TFLite Micro runs): the
        # convolution of one group over every input channel, each output channel's weights zero for the input
        # channels of the other groups (zero weights add nothing to a sum, nor to the folded zero point's)
        weight = block_diagonal(weight, groups)
    if (groups == 1 or grouped) and attrs.kernel_layout == "HWIO":
        # The kernel reads OHWI: each output channel's reduction reads its weights contiguously. A
        # DEPTHWISE_CONV_2D of one input channel is imported as this convolution: it keeps its own name, as does
        # a TRANSPOSE_CONV's phase.
        kind = recorded_operator(conv, ctx, _NAMED, "CONV_2D")
        kernel, layout = conv2d_int8, WeightLayout.OHWI
    elif groups == int(conv.args[0].ty.shape[3]) and attrs.kernel_layout == "HWOI":
        kind, kernel, layout = "DEPTHWISE_CONV_2D", depthwise_conv2d_int8, None
        weight = weight.reshape(weight.shape[0], weight.shape[1], int(conv.ty.shape[3]))
    else:
        return float_operator_mismatch(quantize, ctx)
    data, out = operands.data, operands.out
    multipliers, shifts = conv_multipliers(data.quant.scale, operands.weight.scales, out.quant.scale, ctx.rounding)
    if kernel is conv2d_int8:
        rows = _one_pixel_rows(ctx, weight, data.tensor, conv)
        if rows is not None:  # the layer over its one pixel as a FULLY_CONNECTED's rows: that kernel, stacked
            return MacKernel(kind, conv, fully_connected_int8, data.tensor, data.quant.zero_point, rows,
                             operands.bias, multipliers, shifts, out.quant.zero_point, out.activation, ctx.rounding,
                             channel_axis=0, folds_zero_point=True, stacked_rows=True)
    geometry = Conv2DGeometry(*(tuple(int(v) for v in values)
                                for values in (attrs.strides, attrs.padding, attrs.dilation)))
    paired = ctx.paired_weights and kernel is conv2d_int8 and _pairs(weight, data.tensor)
    padded_pairs = _padded_pairs(ctx, weight, data.tensor, conv) if kernel is conv2d_int8 and not paired else None
    paired = paired or padded_pairs is not None
    length = _weight_length(ctx, weight, data.tensor, geometry) if kernel is conv2d_int8 and not paired else None
    macs = None
    generic = kernel is conv2d_int8 and not paired  # the generic kernel's, which the backend's may replace
    if generic and _few_channel(ctx, data.tensor):
        # the backend's kernel of a window over few input channels, where it fits (else the generic one); its TE
        # extern stage shows no reduction to count, so the lowering declares the layer's MACs (padded taps count),
        # which are also the generic kernel's where the backend's declines (MacKernel.macs)
        kernel = first_fitting(ctx.few_channel_conv, conv2d_int8)
        macs = _window_macs(conv, weight)
    if grouped:  # the layer's MACs, not the zero weights' (each output sums its own group's window)
        macs = _window_macs(conv, weight) // groups
    # the output channels padded for the generic kernel, which the backend's few-channel kernel ignores (`units`)
    padded = _padded_channels(ctx, weight, data.tensor, conv) if generic else padded_pairs
    tiled = padded is not None and not paired and kernel is conv2d_int8 \
        and _tiles(ctx, conv, padded, weight, data.tensor)
    depthwise = kernel is depthwise_conv2d_int8
    if kernel is depthwise_conv2d_int8 and ctx.few_channel_depthwise is not None \
            and str(data.tensor.ty.dtype) == "int8" and ctx.graph.constant(data.tensor) is None:
        # the backend's own kernel of a depthwise layer (channels not whole tiles of four, or the backend's other
        # forms), where it fits (else the generic one); its TE extern stage shows no reduction to count, so the
        # lowering declares the layer's MACs (each output sums its window's taps)
        kernel = first_fitting(ctx.few_channel_depthwise, depthwise_conv2d_int8)
        macs = int(np.prod([int(d) for d in conv.ty.shape])) * int(np.prod(weight.shape[:2]))
    mac = MacKernel(kind, conv, kernel, data.tensor, data.quant.zero_point, weight, operands.bias, multipliers,
                    shifts, out.quant.zero_point, out.activation, ctx.rounding, geometry,
                    weight_layout=WeightLayout.OHWI_PADDED if length else layout, folds_zero_point=True,
                    paired_weights=paired, weight_length=length, padded_units=padded, macs=macs, tiled_rows=tiled,
                    channel_constants=ctx.channel_requantization)
    if depthwise:
        return replace(mac, widened_weights=True) if _widens(ctx, mac, data.tensor, conv) else mac
    return widened_16x8(mac, ctx) if kernel is conv2d_int8 else mac


def _window_macs(conv: relax.Call, weight: np.ndarray) -> int:
    """The MACs of ``conv``'s outputs over its HWIO ``weight``'s whole window: each output reads KH x KW x I."""
    return int(np.prod([int(d) for d in conv.ty.shape])) * int(np.prod(weight.shape[:3]))


def block_diagonal(weight: np.ndarray, groups: int) -> np.ndarray:
    """A grouped convolution's HWIO ``weight`` (KH, KW, I / groups, O) as one group's (KH, KW, I, O): output channel
    o of group g = o // (O / groups) reads input channels g * I / groups ... (g + 1) * I / groups - 1 (TFLite's
    grouped CONV_2D), its weights zero for every other input channel."""
    kh, kw, depth, channels = weight.shape
    full = np.zeros((kh, kw, depth * groups, channels), weight.dtype)
    per_group = channels // groups
    for group in range(groups):
        outputs = slice(group * per_group, (group + 1) * per_group)
        full[:, :, group * depth:(group + 1) * depth, outputs] = weight[:, :, :, outputs]
    return full


def _widens(ctx: LoweringContext, mac: MacKernel, data: relax.Expr, conv: relax.Call) -> bool:
    """Whether a DEPTHWISE_CONV_2D (``mac``, weight (KH, KW, C * M)) takes its weights widened to int16 (the
    backend's ``LoweringContext.widened_depthwise_taps``): int8 data, depth multiplier 1, a window of at most that
    many taps, the flash holding the widened weights' extra byte per weight (``LoweringContext.flash_budget``), and
    a kernel reading them as int16: whole tiles of four channels (the DSP depthwise helpers' four consecutive
    channels a tap) or an even count of more than four which the backend's kernel of channels not whole tiles takes
    with its pixel tiles (``_own_choice`` of ``LoweringContext.depthwise_pixel_tiles``: its last tile overlapping at
    an even channel, each tap's weights 4-byte aligned; the generic kernel and the runs read int8 ones), and not a
    backend's kernel that reads int8 weights as well (``_own_choice`` of ``LoweringContext.depthwise_rows_take``:
    the DSP channel rows, where widened weights would cost a byte a weight of flash for nothing)."""
    kh, kw, channels = (int(d) for d in mac.weight.shape)
    tiles = channels % 4 == 0 or (channels % 2 == 0 and channels > 4
                                  and _own_choice(ctx.depthwise_pixel_tiles, ctx, mac, data))
    tiles = tiles and not _own_choice(ctx.depthwise_rows_take, ctx, mac, data)
    return (0 < kh * kw <= ctx.widened_depthwise_taps and str(data.ty.dtype) == "int8"
            and channels == int(data.ty.shape[3]) and tiles and ctx.flash_budget.grants(conv, int(mac.weight.size)))


def _own_choice(takes: Optional[Callable[..., bool]], ctx: LoweringContext, mac: MacKernel,
                data: relax.Expr) -> bool:
    """Whether the backend's kernel of a depthwise layer (``LoweringContext.few_channel_depthwise``) takes ``mac``
    with the form `takes` chooses (``LoweringContext.depthwise_pixel_tiles`` or ``depthwise_rows_take``), by the
    kernel's own choice of the layer's shapes and its bias as stored (the zero point folded in:
    ``MacKernel.folded_bias``, which the kernel needs)."""
    folded = mac.folded_bias()
    if ctx.few_channel_depthwise is None or takes is None or folded is None or mac.geometry is None:
        return False
    g = mac.geometry
    return takes(tuple(int(d) for d in list(data.ty.shape)[1:]), tuple(mac.weight.shape[:2]), g.strides, g.padding,
                 g.dilation, bias_constant(folded).value.numpy().itemsize)


def _few_channel(ctx: LoweringContext, data: relax.Expr) -> bool:
    """Whether the backend has a kernel of its own for a CONV_2D whose window reads few input
    channels (``LoweringContext.few_channel_conv``, which declines the others: how few is the backend's rule) and
    this one's input may take it (int8, not a constant: a constant operator would be folded on the host, which
    cannot run a backend's helper calls)."""
    return ctx.few_channel_conv is not None and str(data.ty.dtype) == "int8" and ctx.graph.constant(data) is None


def _one_pixel_rows(ctx: LoweringContext, weight: np.ndarray, data: relax.Expr,
                    conv: relax.Call) -> Optional[np.ndarray]:
    """A CONV_2D's (HWIO ``weight``) weights as a FULLY_CONNECTED's rows [O, K] where its 1x1 window reads its whole
    input of one pixel (int8, 1x1: a classifier head over a pooled image, a squeeze-excitation's convolutions), the
    backend stacks one-row FULLY_CONNECTED weights (``LoweringContext.stacked_rows``), the rows stack (``stacks_rows``:
    whole tiles, whose sums the fused fully connected tiles requantize; padded channels would leave the kernel its
    loop) and the backend says they pay there (``LoweringContext.one_pixel_rows_pay``: the stacked rows' helper
    against the convolution's channel tiles, given every such convolution of the model, which share that helper:
    ``one_pixel_shapes``), else None. The layer then runs that kernel over the pixel (``fully_connected_int8`` of
    NHWC data)."""
    if not ctx.stacked_rows or ctx.one_pixel_rows_pay is None or str(data.ty.dtype) != "int8" \
            or weight.dtype != np.int8 or _one_pixel_shape(conv) is None:
        return None
    rows = np.ascontiguousarray(weight[0, 0].T)  # [O, K]
    if not stacks_rows(rows) or not ctx.one_pixel_rows_pay(int(rows.shape[1]), int(rows.shape[0]),
                                                          one_pixel_shapes(ctx.graph)):
        return None
    return rows


def _one_pixel_shape(conv: relax.Call) -> Optional[tuple[int, int]]:
    """(input channels, output channels) of an NHWC conv2d of one group whose 1x1 window reads its whole input of
    one pixel, else None."""
    attrs, data, weight = conv.attrs, conv.args[0].ty, conv.args[1].ty
    if attrs.data_layout != "NHWC" or attrs.kernel_layout != "HWIO" or int(attrs.groups) != 1 \
            or len(data.shape) != 4 or len(conv.ty.shape) != 4:
        return None
    if [int(d) for d in list(data.shape)[:3]] != [1, 1, 1] or [int(d) for d in list(conv.ty.shape)[:3]] != [1, 1, 1] \
            or [int(d) for d in list(weight.shape)[:2]] != [1, 1]:
        return None
    return int(data.shape[3]), int(conv.ty.shape[3])


_SHAPES: "weakref.WeakKeyDictionary[Graph, tuple[tuple[int, int], ...]]" = weakref.WeakKeyDictionary()


def one_pixel_shapes(graph: Graph) -> tuple[tuple[int, int], ...]:
    """(input channels, output channels) of each conv2d of ``graph`` whose 1x1 window reads its whole input of one
    pixel (``_one_pixel_shape``), in order: the model's candidates for the stacked rows, read once per graph."""
    if graph not in _SHAPES:
        conv2d = tvm.ir.Op.get("relax.nn.conv2d")
        calls = [b.value for b in graph.bindings if isinstance(b.value, relax.Call) and b.value.op.same_as(conv2d)]
        _SHAPES[graph] = tuple(shape for shape in map(_one_pixel_shape, calls) if shape is not None)
    return _SHAPES[graph]


def _padded_channels(ctx: LoweringContext, weight: np.ndarray, data: relax.Expr, conv: relax.Call) -> Optional[int]:
    """A CONV_2D's (HWIO ``weight``) output channels padded to whole tiles of the backend's MAC helper
    (``padded_channels``) where it computes more than one output pixel, or one pixel where the backend says the
    padding pays there (``LoweringContext.one_row_padding_pays``) and the flash holds the zero rows
    (``LoweringContext.flash_budget``), else None. Its channel loop then runs the
    dual MAC and the fused tiles instead of the scalar loop nest, pixel after pixel: measured on cortex-m4f, the
    layer sweep's convolutions of 3, 5, 7 and 9 channels 5.1-12.1 -> 3.4-11.9 instructions per MAC (a 3x3 stride-2
    one over 3 channels 9.8 -> 4.5). One pixel (a classifier's 1x1 convolution over a pooled image) runs the
    channel loop once: the saving grows with the layer's MACs while the padded form's code is larger by about the
    same bytes (mobilenet_v3s_min_050_80's 10-channel head over 1024 inputs: 32 k fewer instructions for 176 more
    bytes of code; person_detect's 2-channel one over 256: 941 fewer for 128 more), so the backend's price decides."""
    pixels = int(np.prod([int(d) for d in list(conv.ty.shape)[:3]]))
    padded = padded_channels(np.moveaxis(weight, 3, 0), data, ctx.dense_unit_tile)
    if padded is None or pixels > 1:
        return padded
    pays = ctx.one_row_padding_pays
    row_len, channels = int(np.prod(weight.shape[:3])), int(weight.shape[3])
    pays_here = pays is not None and pays(row_len, channels, padded, 1)  # priced alone: its own call
    return padded if pays_here and ctx.flash_budget.grants(conv, (padded - channels) * row_len) else None


def _padded_pairs(ctx: LoweringContext, weight: np.ndarray, data: relax.Expr, conv: relax.Call) -> Optional[int]:
    """A CONV_2D's (HWIO ``weight``) output channels padded with zero rows to whole tiles of PAIRED_TILE, which then
    take paired weights (`_pairs` of the padded rows), where the backend says they pay (``LoweringContext.
    padded_pairs_pay``, given the channels, the window's taps and inputs and the layer's MACs), the layer has more
    than one output pixel, its input is int8 and not a few channels' window the backend's own kernel takes
    (`_few_channel`), and the flash holds the padded words' bytes beyond the int8 weights
    (``LoweringContext.flash_budget``); else None."""
    pixels = int(np.prod([int(d) for d in list(conv.ty.shape)[:3]]))
    channels, window = int(weight.shape[-1]), int(np.prod(weight.shape[:3]))
    pays = ctx.padded_pairs_pay
    if not ctx.paired_weights or pays is None or pixels <= 1 or weight.dtype != np.int8 \
            or str(data.ty.dtype) != "int8" or _few_channel(ctx, data):
        return None
    if not pays(channels, int(np.prod(weight.shape[:2])), window, pixels * window * channels):
        return None
    padded = -(-channels // PAIRED_TILE) * PAIRED_TILE
    extra = 2 * padded * window - channels * window  # int32 words, one per two channels' weights
    return padded if ctx.flash_budget.grants(conv, extra) else None


def _weight_length(ctx: LoweringContext, weight: np.ndarray, data: relax.Expr,
                   geometry: Conv2DGeometry) -> Optional[int]:
    """Each output channel's weight length where the backend pads a CONV_2D's (HWIO ``weight``) OHWI weights
    with zeros beyond KH * KW * I (``LoweringContext.conv_weight_length``; int8 data), else None."""
    if ctx.conv_weight_length is None or str(data.ty.dtype) != "int8":
        return None
    kh, kw, cin = (int(d) for d in weight.shape[:3])
    length = ctx.conv_weight_length(kh, kw, cin, any(geometry.padding))
    return length if length > kh * kw * cin else None


def _pairs(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether a CONV_2D (HWIO ``weight``) can take paired weights (`tvm_ext.kernels.dense.pair_weights` of its
    OHWI weights as [O, KH * KW * I]: each channel's window one run of words, as a FULLY_CONNECTED row's): int8
    data and weights, whole tiles of PAIRED_TILE output channels."""
    return str(data.ty.dtype) == "int8" and weight.dtype == np.int8 and weight.shape[-1] % PAIRED_TILE == 0


def _tiles(ctx: LoweringContext, conv: relax.Call, padded: int, weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether a CONV_2D (``conv``, HWIO ``weight``) whose output channels are padded to ``padded`` (not paired:
    channels PAIRED_TILE does not divide) takes `tvm_ext.kernels.dense.tile_rows`' layout of its OHWI weights as
    [O, KH * KW * I] (the backend's ``LoweringContext.tiled_rows``; int8 data and weights, the padded channels whole
    tiles of TILED_TILE), where the backend says its kernel pays it among the model's such kernels
    (``LoweringContext.tiled_convs_pay``, `tiled_convs`): each tile's window input after input, which one
    out-of-line tile MAC reads at constant offsets whatever the layer (`backends.riscv.schedules.mac.
    tiled_mac_replacement`), where an int8 window MAC inlined in each kernel folds the channel stride into its
    immediates (rv32imc yolo_tiny_80x48_w11's 3x3 convolutions of 30, 45 and 70 channels, ~1,000 B each). The same
    bytes as the OHWI weights."""
    if not (ctx.tiled_rows and str(data.ty.dtype) == "int8" and weight.dtype == np.int8 and padded % TILED_TILE == 0):
        return False
    if ctx.tiled_convs_pay is None:
        return True
    keys, convs = tiled_convs(ctx.graph, ctx.dense_unit_tile)
    key = _conv_key(conv)
    return key in keys and keys.index(key) in ctx.tiled_convs_pay(convs)


_TILED: "weakref.WeakKeyDictionary[Graph, dict[int, tuple[tuple, tuple[tuple[int, int], ...]]]]" = \
    weakref.WeakKeyDictionary()


def tiled_convs(graph: Graph, tile: int) -> tuple[tuple, tuple[tuple[int, int], ...]]:
    """The CONV_2D kernels of ``graph`` whose output channels, padded to whole tiles of ``tile`` (the backend's
    ``LoweringContext.dense_unit_tile``), are whole tiles of TILED_TILE but were not (NHWC, HWIO, one group, more than
    one output pixel): each kernel's key (`_conv_key`: its layers' shapes and geometry) and its (window inputs, channel
    tiles' calls per inference: output pixels times tiles of TILED_TILE, over every layer of its key), in order; read
    once per graph and tile."""
    found = _TILED.setdefault(graph, {})
    if tile not in found:
        conv2d = tvm.ir.Op.get("relax.nn.conv2d")
        convs: dict[tuple, tuple[int, int]] = {}
        for binding in graph.bindings:
            call = binding.value
            if not (isinstance(call, relax.Call) and call.op.same_as(conv2d)) or tile <= 0:
                continue
            attrs, out = call.attrs, [int(d) for d in call.ty.shape]
            if attrs.data_layout != "NHWC" or attrs.kernel_layout != "HWIO" or int(attrs.groups) != 1:
                continue
            channels, pixels = out[3], out[0] * out[1] * out[2]
            padded = -(-channels // tile) * tile
            if padded == channels or padded % TILED_TILE or pixels <= 1:
                continue
            kh, kw, cin = (int(d) for d in list(call.args[1].ty.shape)[:3])
            key = _conv_key(call)
            window, calls = convs.get(key, (kh * kw * cin, 0))
            convs[key] = (window, calls + pixels * padded // TILED_TILE)
        found[tile] = (tuple(convs), tuple(convs.values()))
    return found[tile]


def _conv_key(conv: relax.Call) -> tuple:
    """What makes two conv2d layers one kernel: their input, weight and output shapes and their geometry."""
    attrs = conv.attrs
    shapes = (conv.args[0].ty.shape, conv.args[1].ty.shape, conv.ty.shape)
    return (tuple(tuple(int(d) for d in shape) for shape in shapes),
            *(tuple(int(v) for v in values) for values in (attrs.strides, attrs.padding, attrs.dilation)))


def _weight_as_convolved(weight: Int8Weight, conv: relax.Call) -> Optional[np.ndarray]:
    """The int8 weight values in the shape the convolution reads them: the frontend reshapes a depthwise
    kernel (1, KH, KW, C*M) after dequantizing it, to (KH, KW, 1, M) (HWIO, one input channel) or
    (KH, KW, C*M, 1) (HWOI); a reshape keeps the element order. None for a transposed weight."""
    if weight.permuted:
        return None
    return weight.values.reshape([int(d) for d in conv.args[1].ty.shape])


LOWERING = Lowering(_OPERATORS, ends_float_operator, match)
