"""FULLY_CONNECTED: ``q([act](add(matmul(dq(x), dq(W^T)), dq(b))))`` -> one integer dense kernel."""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from tvm import relax

from ...kernels import fully_connected_int8
from ...kernels.dense import PAIRED_TILE, STACKED_TILE, stacks_rows
from ...kernels.quant_params import conv_multipliers, fully_connected_multiplier
from .lowering import Lowering, LoweringContext, Mismatch
from .mac import MacKernel, MacPattern, padded_channels
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
    return MacKernel("FULLY_CONNECTED", operands.core, fully_connected_int8, data.tensor, data.quant.zero_point,
                     weight_values, operands.bias, multipliers, shifts, out.quant.zero_point, out.activation,
                     ctx.rounding, channel_axis=0, folds_zero_point=True,
                     paired_weights=ctx.paired_weights and _pairs(tiled, data.tensor),
                     stacked_rows=ctx.stacked_rows and _stacks(tiled, data.tensor),
                     padded_units=padded_units)


def _padded_units(weight: np.ndarray, data: relax.Expr, layer: relax.Call,
                  ctx: LoweringContext) -> Optional[int]:
    """The output channels of a FULLY_CONNECTED (``layer``) of int8 ``data`` and weights [O, K] padded to whole tiles of the
    backend's MAC tile (``padded_channels``, ``LoweringContext.dense_unit_tile``; a 10-class head: 5.3-5.9
    instructions per MAC on cortex-m4f unpadded). A layer of fewer channels than a tile is padded where the backend
    says its MACs pay the padded kernel's code (``LoweringContext.one_row_padding_pays``, with the flash holding
    the zero rows), else it keeps its scalar loop: measured on cortex-m4f, hello_world's 1-unit layer took more
    instructions padded (the helper's call for 16 MACs) and keyword_scrambled's 2-unit one more code."""
    tile = ctx.dense_unit_tile
    if weight.ndim != 2:
        return None
    padded = padded_channels(weight, data, tile)
    if padded is None or (weight.shape[0] >= tile and not (ctx.every_one_row_priced and _one_int8_row(data))):
        return padded
    units, depth = (int(d) for d in weight.shape)
    pays = ctx.one_row_padding_pays is not None and ctx.one_row_padding_pays(depth, units, padded)
    return padded if pays and ctx.flash_budget.grants(layer, (padded - units) * depth) else None


def _pairs(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether the kernel can take paired weights (`tvm_ext.kernels.dense.pair_weights`): one row of int8 data
    (the paired MAC's call has one; several rows keep the window MAC's calls of two rows each), int8 weights,
    whole tiles of PAIRED_TILE output channels."""
    return (_one_int8_row(data) and weight.dtype == np.int8 and weight.ndim == 2
            and weight.shape[0] % PAIRED_TILE == 0)


def _stacks(weight: np.ndarray, data: relax.Expr) -> bool:
    """Whether the kernel can take stacked weights (`tvm_ext.kernels.dense.stack_rows`): one row of int8 data (the
    stacked MAC's call has one), weights the layout holds (`stacks_rows`), and at least one tile of STACKED_TILE
    output channels (the profile's tile: a kernel of fewer is not tiled, `tvm_ext.schedule.kernel_schedule`, so
    its stacked weights would reach no helper)."""
    return _one_int8_row(data) and stacks_rows(weight) and weight.shape[0] >= STACKED_TILE


def _one_int8_row(data: relax.Expr) -> bool:
    """Whether ``data`` is one row of int8 (the paired and the stacked MACs' calls take one)."""
    return str(data.ty.dtype) == "int8" and getattr(data.ty.shape[0], "value", None) == 1


LOWERING = Lowering(frozenset({"FULLY_CONNECTED"}), ends_float_operator, match)
