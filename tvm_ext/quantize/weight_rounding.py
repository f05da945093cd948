"""Hessian-aware rounding of MAC weights to their int8 grid (GPTQ: Frantar et al. 2022, "GPTQ: Accurate
Post-Training Quantization for Generative Pre-trained Transformers", after Optimal Brain Quantization).

Contract: the scales stay the caller's (per output channel), the values stay in [-127, 127]; only which
grid point each weight goes to changes, chosen to make the layer's output error ||W X - W_q X||^2 on the
calibration inputs X small instead of each weight's own error (round to nearest). With H = X X^T over the
MAC's input columns (a conv's im2col patches: K = kh x kw x input channels per group), the weights of each
output channel are rounded one input column at a time, each column's rounding error spread onto the columns
not rounded yet through the Cholesky factor of H^-1 (H dampened by DAMPING x its mean diagonal), which
keeps the output error that the rest can still compensate. Rows (output channels) are independent, so the
per-channel scales factor out: the rounding works on the weights divided by their scale. A grouped conv
(depthwise) has one H per group over that group's own input channels. Closed form, no iterations.

Where H = c I (uncorrelated inputs of equal power) nothing propagates and the result is round to nearest.

H is taken from the float model's activations, all layers at once. Sequential GPTQ (each layer's H from its
inputs in the graph whose earlier layers are already int8, weights and activations) was measured and not
taken: pretrainedResnet, integer top-1 agreement on 800 selection crops (seeds 3-6), calibrated on the
bench's 200: 94.4 % sequential vs 94.6 % (both without bias correction; with it 93.75 % on 400 crops vs
94.25 %), at 30-50 s of extra compile time; its float-target variant (weights first fitted to W X_float
over the int8 inputs, then rounded) 80.1 %.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.kernels.quant_params import round_half_away
from tvm_ext.layers import bindings_of

from .ranges import each_sample_outputs, with_taps

DAMPING = 0.01  # of the mean diagonal of H, added to its diagonal (GPTQ's 1 %)
INT8_LIMIT = 127
WeightRounding = Callable[[np.ndarray], np.ndarray]  # a weight divided by its scales -> its int8 values


def round_to_int8_weight(values: np.ndarray) -> np.ndarray:
    """Round to nearest, halves away from zero (TFLite's rounding), then clamp to [-127, 127]."""
    return np.clip(round_half_away(values), -INT8_LIMIT, INT8_LIMIT)


def hessian_round(scaled: np.ndarray, hessian: np.ndarray) -> np.ndarray:
    """`scaled` (groups, rows, K): weights divided by their output channel's scale; `hessian` (groups, K, K):
    each group's sum of x x^T over its calibration input columns x. The int8 values (float64 array of
    whole numbers in [-127, 127]) GPTQ rounds them to, same shape."""
    width = scaled.shape[2]
    upper = np.linalg.cholesky(np.linalg.inv(_damped(hessian))).transpose(0, 2, 1)  # H^-1 = U^T U, U upper
    work = np.array(scaled, np.float64)
    values = np.empty_like(work)
    for column in range(width):
        values[:, :, column] = round_to_int8_weight(work[:, :, column])
        error = (work[:, :, column] - values[:, :, column]) / upper[:, None, column, column]
        work[:, :, column + 1:] -= error[:, :, None] * upper[:, None, column, column + 1:]
    return values


def _damped(hessian: np.ndarray) -> np.ndarray:
    """`hessian` (groups, K, K) with DAMPING x its mean diagonal added to the diagonal, and 1 on the diagonal
    of an input column that is always zero (its weight does not matter): positive definite."""
    h = np.array(hessian, np.float64)
    diagonal = np.arange(h.shape[1])
    h[:, diagonal, diagonal] = np.where(h[:, diagonal, diagonal] <= 0, 1.0, h[:, diagonal, diagonal])
    h[:, diagonal, diagonal] += DAMPING * h[:, diagonal, diagonal].mean(axis=1, keepdims=True)
    return h


@dataclass(frozen=True)
class MacGeometry:
    """How a MAC reads its input: a conv2d's (NHWC) kernel window, or a matmul as a 1x1 conv of one pixel.
    `layout` is its weight operand's: "HWIO", "HWOI" (depthwise) or "OI" (a matmul's weight as stored,
    before its permute_dims)."""

    layout: str
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def patches(self, data: np.ndarray) -> np.ndarray:
        """The input columns (groups, positions, K) of `data`, a conv's NHWC input or a matmul's (N, in)."""
        if data.ndim == 2:
            data = data[:, None, None, :]
        top, left, bottom, right = self.padding
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilation
        padded = np.pad(data, ((0, 0), (top, bottom), (left, right), (0, 0)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (dh * (kh - 1) + 1, dw * (kw - 1) + 1),
                                                           axis=(1, 2))[:, ::sh, ::sw, :, ::dh, ::dw]
        channels = data.shape[3]
        columns = windows.reshape(-1, self.groups, channels // self.groups, kh, kw).transpose(1, 0, 3, 4, 2)
        return columns.reshape(self.groups, -1, kh * kw * (channels // self.groups))

    def rows(self, weight: np.ndarray) -> np.ndarray:
        """`weight` (this MAC's layout) as (groups, output channels per group, K), K in `patches`' order."""
        if self.layout == "OI":
            return weight[None]
        per_channel = weight.transpose(3, 0, 1, 2) if self.layout == "HWIO" else weight.transpose(2, 0, 1, 3)
        return per_channel.reshape(self.groups, -1, per_channel[0].size)

    def weight(self, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """The inverse of `rows`: (groups, rows, K) back to the weight layout of `shape`."""
        if self.layout == "OI":
            return rows[0]
        kh, kw, third, fourth = shape
        if self.layout == "HWIO":
            return rows.reshape(fourth, kh, kw, third).transpose(1, 2, 3, 0)
        return rows.reshape(third, kh, kw, fourth).transpose(1, 2, 0, 3)


def geometry_of(call: relax.Call) -> MacGeometry | None:
    """The MacGeometry of a conv2d (NHWC, HWIO or HWOI) or matmul (of a matrix) call of main, or None for
    another (its weight is then rounded to nearest)."""
    if call.op.name == "relax.matmul":
        return MacGeometry("OI") if len(call.args[0].ty.shape) == 2 else None
    attrs = call.attrs
    if str(attrs.data_layout) != "NHWC" or str(attrs.kernel_layout) not in ("HWIO", "HWOI"):
        return None
    shape = call.args[1].value.shape
    return MacGeometry(str(attrs.kernel_layout), (int(shape[0]), int(shape[1])),
                       tuple(int(s) for s in attrs.strides), tuple(int(p) for p in attrs.padding),
                       tuple(int(d) for d in attrs.dilation), int(attrs.groups))


@dataclass(frozen=True)
class HessianRounding:
    """The rounding of one MAC's weight: its input geometry and H (groups, K, K) from calibration."""

    geometry: MacGeometry
    hessian: np.ndarray

    def __call__(self, scaled: np.ndarray) -> np.ndarray:
        """`scaled` (the weight divided by its per-channel scales, in the MAC's layout) -> int8 values."""
        values = hessian_round(self.geometry.rows(scaled), self.hessian)
        return self.geometry.weight(values, scaled.shape).astype(np.int8)


def hessian_roundings(float_mod: tvm.IRModule, samples: list[list[np.ndarray]]) -> dict[relax.Var, HessianRounding]:
    """Each conv2d and matmul of `float_mod`'s main with a constant weight -> its HessianRounding from its
    float inputs on `samples`, keyed by the var that holds its weight (the conv2d itself, the permute_dims
    of a matmul's stored weight), as qdq.quantize_graph takes them."""
    main = float_mod["main"]
    params = list(main.params)
    macs = _macs(main)
    tapped = list(dict.fromkeys(data for _, data, _ in macs if data not in params))
    hessians: dict[relax.Var, np.ndarray] = {}
    for sample, outputs in zip(samples, each_sample_outputs(with_taps(float_mod, tapped), samples)):
        values = {**dict(zip(params, sample)), **dict(zip(tapped, outputs[1:]))}
        for owner, data, geometry in macs:
            columns = geometry.patches(np.asarray(values[data], np.float64))
            gram = np.einsum("gpk,gpl->gkl", columns, columns)
            hessians[owner] = hessians[owner] + gram if owner in hessians else gram
    return {owner: HessianRounding(geometry, hessians[owner]) for owner, _, geometry in macs}


def _macs(main: relax.Function) -> list[tuple[relax.Var, relax.Expr, MacGeometry]]:
    """main's conv2d and matmul calls with a constant weight: (the var that holds the weight, the data
    operand, the geometry), in binding order."""
    value_of = {b.var: b.value for b in bindings_of(main)}
    macs = []
    for binding in bindings_of(main):
        call = binding.value
        if not isinstance(call, relax.Call) or call.op.name not in ("relax.nn.conv2d", "relax.matmul"):
            continue
        if call.op.name == "relax.nn.conv2d":
            owner, weight = binding.var, call.args[1]
        else:
            owner, permute = call.args[1], value_of.get(call.args[1])
            permuted = isinstance(permute, relax.Call) and permute.op.name == "relax.permute_dims"
            weight = permute.args[0] if permuted else None
        geometry = geometry_of(call)
        if isinstance(weight, Constant) and geometry is not None:
            macs.append((owner, call.args[0], geometry))
    return macs
