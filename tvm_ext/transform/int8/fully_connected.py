"""FULLY_CONNECTED: ``q([act](add(matmul(dq(x), dq(W^T)), dq(b))))`` -> one integer dense kernel."""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import tvm
from tvm import relax

from ...kernels import fully_connected_int8
from ...kernels.dense import PAIRED_TILE, STACKED_TILE, TILED_TILE, WIDE_GROUP, stacks_rows, widens_rows
from ...kernels.quant_params import conv_multipliers, fully_connected_multiplier
from .conv import one_pixel_shapes
from .graph import Graph
from .lowering import Lowering, LoweringContext, Mismatch
from .mac import MacKernel, MacPattern, padded_channels, widened_16x8
from .patterns import ends_float_operator, float_operator_mismatch

_PATTERN = MacPattern("relax.matmul")


def match(quantize: relax.Call, ctx: LoweringContext) -> Union[MacKernel, Mismatch]:
    """A rank-2 input times the weight the frontend transposed (``permute_dims``) from TFLite's [O, I]."""
    operands = _PATTERN.read(quantize, ctx)
    if operands is None or len(operands.core.args[0].ty.shape) != 2:
        return float_operator_mismatch(quantize, ctx)
    data, weight, out = operands.data, operands.weight, operands.out
    # The kernel reads [O, I]: the stored constant when the frontend only transposed it, else its transpose.
    weight_values = weight.values if weight.permuted and not weight.reshaped else np.ascontiguousarray(weight.values.T)
    if weight.scales.size == 1:
        m, s = fully_connected_multiplier(data.quant.scale, weight.scales[0], out.quant.scale, ctx.rounding)
        multipliers, shifts = np.array([m]), np.array([s])
    else:
        multipliers, shifts = conv_multipliers(data.quant.scale, weight.scales, out.quant.scale, ctx.rounding)
    padded_units = _padded_units(weight_values, data.tensor, operands.core, ctx)
    # the weights the kernel takes (zero rows past the channels): whether they pair or stack
    tiled = weight_values if padded_units is None else np.pad(
        weight_values, ((0, padded_units - weight_values.shape[0]), (0, 0)))
    widened = _widens(tiled, data.tensor, operands.core, ctx)
    paired = ctx.paired_weights and _pairs(tiled, data.tensor)
    mac = MacKernel("FULLY_CONNECTED", operands.core, fully_connected_int8, data.tensor, data.quant.zero_point,
                    weight_values, operands.bias, multipliers, shifts, out.quant.zero_point, out.activation,
                    ctx.rounding, channel_axis=0, folds_zero_point=True,
                    paired_weights=paired,
                    stacked_rows=ctx.stacked_rows and not widened and _stacks(tiled, data.tensor),
                    widened_rows=widened, padded_units=padded_units,
                    tiled_rows=ctx.tiled_rows and not paired and _tiles(tiled, data.tensor))
    return widened_16x8(mac, ctx)


def _padded_units(weight: np.ndarray, data: relax.Expr, layer: relax.Call,
                  ctx: LoweringContext) -> Optional[int]:
    """The output channels of a FULLY_CONNECTED (``layer``) of int8 or int16 (16x8) ``data`` and int8 weights [O, K]
    padded to whole tiles of the backend's MAC tile (``padded_channels``, ``LoweringContext.dense_unit_tile``; a
    10-class head: 5.3-5.9 instructions per MAC on cortex-m4f unpadded). A layer of fewer channels than a tile, or of
    one row whatever its channels, is padded where the backend says its MACs pay the padded kernel's code
    (``LoweringContext.one_row_padding_pays``, over every call of that kernel: the model's one-row layers of its
    shape, `one_row_shapes`; with the flash holding the zero rows), else it keeps its scalar
    loop: one price for every core (measured on cortex-m4f, hello_world's 1-unit layer took more instructions
    padded, the helper's call for 16 MACs, and keyword_scrambled's 2-unit one more code; vit_tiny_16's 48 -> 10 head
    unpadded 1,642 more instructions for 236 B less; on cortex-m55 a 64 -> 10 head padded saved 2,333 instructions
    for 108 B); any other layer is padded always."""
    tile = ctx.dense_unit_tile
    if weight.ndim != 2:
        return None
    padded = padded_channels(weight, data, tile)
    if padded is None or (weight.shape[0] >= tile and not _one_row(data)):
        return padded
    units, depth = (int(d) for d in weight.shape)
    pays = ctx.one_row_padding_pays is not None and ctx.one_row_padding_pays(
        depth, units, padded, max(1, one_row_shapes(ctx.graph)[depth, units]))
    return padded if pays and ctx.flash_budget.grants(layer, (padded - units) * depth) else None


_MATMULS: "weakref.WeakKeyDictionary[Graph, tuple[tuple[relax.Call, int, int], ...]]" = weakref.WeakKeyDictionary()


def _one_row_matmuls(graph: Graph) -> tuple[tuple[relax.Call, int, int], ...]:
    """(the call, K, O) of each of ``graph``'s matmuls of one row of K inputs by weights of O output channels, both
    shapes static (the types not asked). Read once per graph."""
    if graph not in _MATMULS:
        matmul = tvm.ir.Op.get("relax.matmul")
        found = []
        for binding in graph.bindings:
            call = binding.value
            if not (isinstance(call, relax.Call) and call.op.same_as(matmul)):
                continue
            data, weight = (list(arg.ty.shape) for arg in call.args[:2])
            shape = [getattr(d, "value", None) for d in data + weight]
            if len(data) == 2 and len(weight) == 2 and shape[0] == 1 and None not in shape:
                found.append((call, shape[1], shape[3]))
        _MATMULS[graph] = tuple(found)
    return _MATMULS[graph]


def one_row_shapes(graph: Graph) -> Counter:
    """How many of ``graph``'s matmuls multiply one row of K inputs by weights of O output channels, per (K, O): the
    calls of the one kernel such layers share where their padding is priced (``_padded_units``; the kernel takes
    its weights, bias and requantization as arguments, so a converter-unrolled recurrent cell's steps, one layer
    repeated, call one kernel: kws_gru23_29x10_int8's 29 steps of 10 -> 69 and 29 of 23 -> 69)."""
    return Counter((depth, units) for _, depth, units in _one_row_matmuls(graph))


def _pairs(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether the kernel can take paired weights (`tvm_ext.kernels.dense.pair_weights`): one row of int8 data
    (the paired MAC's call has one; several rows keep the window MAC's calls of two rows each), int8 weights,
    whole tiles of PAIRED_TILE output channels."""
    return (_one_int8_row(data) and weight.dtype == np.int8 and weight.ndim == 2
            and weight.shape[0] % PAIRED_TILE == 0)


def _tiles(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether the kernel can take tiled rows (`tvm_ext.kernels.dense.tile_rows`): several rows of int8 data (a
    pixel pair's tile MAC reads both rows' inputs), int8 weights, whole tiles of TILED_TILE output channels."""
    return (str(data.ty.dtype) == "int8" and len(data.ty.shape) == 2 and getattr(data.ty.shape[0], "value", 1) > 1
            and weight.dtype == np.int8 and weight.ndim == 2 and weight.shape[0] % TILED_TILE == 0)


def _stacks(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether the kernel can take stacked weights (`tvm_ext.kernels.dense.stack_rows`): one row of int8 data (the
    stacked MAC's call has one), weights the layout holds (`stacks_rows`), and at least one tile of STACKED_TILE
    output channels (the profile's tile: a kernel of fewer is not tiled, `tvm_ext.schedule.kernel_schedule`, so
    its stacked weights would reach no helper)."""
    return _one_int8_row(data) and stacks_rows(weight) and weight.shape[0] >= STACKED_TILE


def _widens(weight: np.ndarray, data: relax.Expr, layer: relax.Call, ctx: LoweringContext) -> bool:
    """Whether the kernel (``layer``) takes its weights widened to int16 (`tvm_ext.kernels.dense.widen_rows`): one
    row of int8 data (the widened-rows MAC's call has one), weights the layout takes (`widens_rows`) of at least one
    tile, the backend's price paid by the model's such layers (``LoweringContext.widened_rows_pay``: they share the
    helpers; the price higher where some stacked rows stay, whose helpers the bundle then holds too) and the flash
    holding the extra byte per weight of every one of them (``LoweringContext.flash_budget``, all together or none,
    at the first one's ask, each under a key of its own (`WidenedRows`), apart from any other bytes granted its
    layer: a model whose flash refuses them keeps the stacked form)."""
    if ctx.widened_rows_pay is None or not (_one_int8_row(data) and widens_rows(weight)
                                            and weight.shape[0] >= STACKED_TILE):
        return False
    layers, stacked_rows = _one_row_layers(ctx.graph)
    if not ctx.widened_rows_pay(sum(macs for _, macs, _ in layers), stacked_rows or _one_pixel_rows(ctx)):
        return False
    return ctx.flash_budget.grants_each([(WidenedRows(call), extra) for call, _, extra in layers]
                                        + [(WidenedRows(layer), int(weight.size))])


@dataclass(frozen=True)
class WidenedRows:
    """The flash budget's key of a layer's widened weights' extra bytes (``FlashBudget``): apart from the layer's own
    key, which its padded channels' bytes take (``_padded_units``)."""

    layer: relax.Call

    def __hash__(self) -> int:
        return hash(("widened_rows", self.layer))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WidenedRows) and other.layer.same_as(self.layer)


def _one_pixel_rows(ctx: LoweringContext) -> bool:
    """Whether some CONV_2D of one pixel's 1x1 window may run as stacked rows (``conv.one_pixel_shapes`` paying
    ``LoweringContext.one_pixel_rows_pay``): the bundle then holds the stacked helpers beside the widened ones."""
    if ctx.one_pixel_rows_pay is None or not ctx.stacked_rows:
        return False
    shapes = one_pixel_shapes(ctx.graph)
    return any(ctx.one_pixel_rows_pay(depth, units, shapes) for depth, units in shapes)


def _one_row_layers(graph: Graph) -> tuple[tuple[tuple[relax.Call, int, int], ...], bool]:
    """(the call, its MACs, its widened weights' extra bytes: K times O padded to whole tiles) of each of ``graph``'s
    matmuls of one row of K inputs, K a multiple of WIDE_GROUP, by weights of at least STACKED_TILE output channels:
    the model's FULLY_CONNECTED layers the widened rows may take (the types not asked); and whether some such
    matmul's K is a multiple of 4 only (its rows stay stacked)."""
    wide = [(call, depth, units) for call, depth, units in _one_row_matmuls(graph) if units >= STACKED_TILE]
    layers = tuple((call, depth * units, depth * -(-units // STACKED_TILE) * STACKED_TILE)
                   for call, depth, units in wide if depth % WIDE_GROUP == 0)
    return layers, any(depth % 4 == 0 and depth % WIDE_GROUP != 0 for _, depth, _ in wide)


def _one_int8_row(data: relax.Expr) -> bool:
    """Whether ``data`` is one row of int8 (the paired and the stacked MACs' calls take one)."""
    return str(data.ty.dtype) == "int8" and _one_row(data)


def _one_row(data: relax.Expr) -> bool:
    """Whether ``data`` is one row (of any type)."""
    return getattr(data.ty.shape[0], "value", None) == 1


LOWERING = Lowering(frozenset({"FULLY_CONNECTED"}), ends_float_operator, match)
