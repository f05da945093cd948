"""The multiply-accumulate kernels (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) as one record."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

import numpy as np
from tvm import relax, te
from tvm.ir.expr import Constant
from tvm.relax.dpl import is_op

from ...kernels import OutputStage, Rounding, WeightLayout
from ...kernels.dense import pair_weights, stack_rows, tile_rows, widen_rows
from ...kernels.fixed_point import (INT32_MAX, fits_small_input, high_mul_16x8_multipliers, largest_centered,
                                    reduce_16x8_multipliers, shifts_right_only)
from ...kernels.quant_params import ActivationRange
from ...kernels.requantize import Multipliers16x8
from ...kernels.zero_point_fold import fold_zero_point_into_bias
from ...layers import MACS_ATTR
from ...tir.kernel_names import WINDOW_ATTR
from .lowering import KernelCall, LoweringContext
from .patterns import (BiasPattern, DequantizedActivation, Int8Input, Int8Weight, QuantizedOutput, QuantizedResult,
                       WeightPattern, bias_constant, extract, with_bias)


@dataclass(frozen=True)
class Conv2DGeometry:
    """Strides, padding (top, left, bottom, right) and dilation of a 2-D convolution, in elements."""

    strides: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]

    def params(self) -> dict[str, list[int]]:
        return {"strides": list(self.strides), "padding": list(self.padding), "dilation": list(self.dilation)}


@dataclass(frozen=True, eq=False)
class MacKernel:
    """A matched MAC operator: int8 data x int8 weight + int32 bias -> int8, or 16x8 (int16 data x int8
    weight + int64 bias -> int16, zero points 0), requantized per output channel.

    ``multipliers``/``shifts`` are TFLite's fixed-point requantization per output channel (one entry when
    per-tensor); ``activation`` the clamp (in the output type) of the fused activation; ``geometry`` None for
    FULLY_CONNECTED; ``channel_axis`` the output-channel axis of ``weight``; ``weight_layout`` the axis
    order the CONV_2D kernel is given its HWIO ``weight`` in (None for the kernels without that parameter).
    """

    kind: str
    core: relax.Call
    kernel: Callable[..., te.Tensor]
    data: relax.Expr
    input_zero_point: int
    weight: np.ndarray  # int8, as matched (CONV_2D: HWIO, re-laid out per weight_layout in kernel_call)
    bias: Optional[Constant]
    multipliers: np.ndarray
    shifts: np.ndarray
    output_zero_point: int
    activation: ActivationRange
    rounding: Rounding
    geometry: Optional[Conv2DGeometry] = None
    channel_axis: int = -1
    weight_layout: Optional[WeightLayout] = None
    # Whether the kernel takes ``zero_point_in_bias``: true only where every output sums every tap of its
    # window, a padded tap holding the zero point (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED; not
    # TRANSPOSE_CONV, whose border outputs sum fewer taps than the rest).
    folds_zero_point: bool = False
    # FULLY_CONNECTED and CONV_2D only: the kernel takes ``weight`` as `pair_weights`' int32 words
    # (`LoweringContext`).
    paired_weights: bool = False
    # FULLY_CONNECTED only: the kernel takes ``weight`` as `stack_rows`' bytes where it multiplies raw int8 inputs
    # (the zero point folded into the bias, or 0) (`LoweringContext.stacked_rows`).
    stacked_rows: bool = False
    # FULLY_CONNECTED only: the kernel takes ``weight`` as `widen_rows`' int16 halves where it multiplies raw int8
    # inputs, as ``stacked_rows`` (`LoweringContext.widened_rows`; the flash budget granted their extra bytes).
    widened_rows: bool = False
    # FULLY_CONNECTED and CONV_2D: the kernel takes ``weight`` as `tile_rows`' bytes, each tile of eight channels
    # input after input (`LoweringContext.tiled_rows`; a CONV_2D's OHWI window as one row).
    tiled_rows: bool = False
    # CONV_2D with ``weight_layout`` OHWI_PADDED only: each output channel's weights, zeros after its window
    # (`LoweringContext.conv_weight_length`).
    weight_length: Optional[int] = None
    # FULLY_CONNECTED and CONV_2D: the output channels padded with zero weight rows to this many (a multiple of
    # the backend's MAC tile, `LoweringContext.dense_unit_tile`: `padded_channels`; None: not padded). The
    # kernel's `units` keeps the output's channels; the bias, multipliers and shifts stay one per output channel.
    padded_units: Optional[int] = None
    # The layer's MACs where its kernel may be one whose reduction the count and the kernel's name cannot see (a
    # backend's TE extern stage: `LoweringContext.few_channel_conv`): declared on the kernel with its window, added to
    # its other attributes (None: both read from its loops). Where the backend's kernel declines, the generic one's
    # loops give the same count and window, so it is kept (cortex-m4f, a 3x3 window and a RELU6 one: the bundle is
    # byte for byte the same without the declaration).
    macs: Optional[int] = None
    # The layer's MACs where its kernel's reduction guards every product, which `tvm_ext.plan.macs` does not count
    # as a MAC (TRANSPOSE_CONV's gather of the taps that reach each output): declared on the kernel alone (None:
    # read from its loops).
    guarded_macs: Optional[int] = None
    # The kernel takes its weights as int16 (the same values), which a DSP core's helpers read without widening
    # them: an int8 DEPTHWISE_CONV_2D's (`_widens` in tvm_ext.transform.int8.conv), a 16x8 CONV_2D's or
    # FULLY_CONNECTED's (`widened_16x8`).
    widened_weights: bool = False
    # int8 CONV_2D and DEPTHWISE_CONV_2D: the kernel takes one multiplier and shift per output channel even where
    # every channel's are the same (per-tensor weights), for the backend's helpers that requantize from per-channel
    # constants only (`LoweringContext.channel_requantization`).
    channel_constants: bool = False

    def kernel_call(self, activation: ActivationRange) -> KernelCall:
        """Per-tensor requantization is immediates in the kernel; per-channel adds an int32 multiplier
        and an int8 shift constant per output channel. The input zero point is folded into the bias
        where the folded bias fits the bias's storage, and a layer whose accumulators plus bias are provably
        small takes the cheaper requantization (`OutputStage.small_accumulator`)."""
        right_shift_only = shifts_right_only(self.multipliers, self.shifts)
        reach = self._accumulator_reach()
        bias_values = None if self.bias is None else self.bias.value.numpy().reshape(-1)
        sixteen_by_eight = self.data.ty.dtype == "int16"
        small = reach is not None and not sixteen_by_eight and fits_small_accumulator(reach, bias_values)
        # 16x8 sums within int32 accumulate in int32; the int64 bias is added after (OutputStage.int32_sums_16x8).
        int32_sums = sixteen_by_eight and reach is not None and int(reach.max(initial=0)) <= INT32_MAX
        multipliers, shifts, form = self.multipliers, self.shifts, Multipliers16x8.TFLITE
        if sixteen_by_eight and self.output_zero_point == 0:
            multipliers, shifts, form = _prepare_16x8(self.multipliers, self.shifts, bias_values,
                                                      reach if int32_sums else None)
        uniform = np.all(multipliers == multipliers[0]) and np.all(shifts == shifts[0])
        if uniform and (sixteen_by_eight or not self.channel_constants):
            multiplier, shift, channel_tensors = int(multipliers[0]), int(shifts[0]), {}
        else:
            channels = int(self.core.ty.shape[-1])  # a per-tensor layer's one entry, repeated per output channel
            multipliers, shifts = (np.broadcast_to(values, (channels,)) if uniform else values
                                   for values in (multipliers, shifts))
            multiplier, shift = 0, 0
            channel_tensors = {"multiplier": relax.const(multipliers.astype(np.int32))}
            if form is not Multipliers16x8.HIGH_MUL:
                channel_tensors["shift"] = relax.const(shifts.astype(np.int8))
        stage = OutputStage(multiplier, shift, self.output_zero_point, activation, self.rounding, right_shift_only,
                            small, int32_sums, form)
        geometry = self.geometry.params() if self.geometry is not None else {}
        layout = {"weight_layout": self.weight_layout} if self.weight_layout is not None else {}
        # The fold widens an int16-stored bias to int32 (2 bytes per channel) rather than give it up: the
        # dual MAC (backends.cortex_m.schedules.dual_mac) multiplies raw int8 values only.
        folded = self.folded_bias()
        bias = self.bias if folded is None else bias_constant(folded)
        if form is Multipliers16x8.HIGH_MUL and bias is not None:  # within int32 (_prepare_16x8)
            bias = bias_constant(bias.value.numpy().astype(np.int32))
        ohwi = self.weight_layout in (WeightLayout.OHWI, WeightLayout.OHWI_PADDED)
        weight = self.weight.transpose(3, 0, 1, 2) if ohwi else self.weight
        units, func_attrs = {}, {}
        if self.padded_units is not None:  # [O, ...] with zero rows up to the padded channels
            units = {"units": int(weight.shape[0])}
            # the layer's MACs, not the zero rows' (tvm_ext.plan.macs.with_mac_count keeps this count): each output
            # element sums one row of weights
            outputs = int(np.prod([int(d) for d in self.core.ty.shape]))
            func_attrs = {MACS_ATTR: outputs * int(np.prod(weight.shape[1:]))}
            weight = np.pad(weight, ((0, self.padded_units - weight.shape[0]),) + ((0, 0),) * (weight.ndim - 1))
        if self.macs is not None and self.geometry is not None:
            window = [list(self.weight.shape[:2]), list(self.geometry.strides), list(self.geometry.dilation)]
            func_attrs = {**func_attrs, MACS_ATTR: self.macs,
                          WINDOW_ATTR: [[int(v) for v in column] for column in window]}
        if self.guarded_macs is not None:
            func_attrs = {**func_attrs, MACS_ATTR: self.guarded_macs}
        if self.weight_length is not None:  # [O, K] then zeros up to the length
            rows = weight.reshape(weight.shape[0], -1)
            weight_constant = relax.const(np.pad(rows, ((0, 0), (0, self.weight_length - rows.shape[1]))))
            layout["kernel_size"] = list(weight.shape[1:3])
        elif self.paired_weights:  # [O, ...] as [O, K]: a FULLY_CONNECTED's, or a CONV_2D's OHWI weights
            words = pair_weights(weight.reshape(weight.shape[0], -1))
            weight_constant = relax.const(words.reshape(words.shape[0], *weight.shape[1:], words.shape[-1]))
            layout = {"paired_weights": True}
        elif self.widened_rows and (folded is not None or self.input_zero_point == 0):
            weight_constant = relax.const(widen_rows(weight))
            layout = {"widened_rows": True}
        elif self.stacked_rows and (folded is not None or self.input_zero_point == 0):
            weight_constant = relax.const(stack_rows(weight))
            layout = {"stacked_rows": True}
        elif self.tiled_rows:  # [O, ...] as [O, K]: a FULLY_CONNECTED's, or a CONV_2D's OHWI weights
            tiles = tile_rows(weight.reshape(weight.shape[0], -1))
            weight_constant = relax.const(tiles.reshape(tiles.shape[0], *weight.shape[1:], tiles.shape[-1]))
            layout = {"tiled_rows": True}
        elif self.widened_weights:
            weight_constant = relax.const(np.ascontiguousarray(weight.astype(np.int16)))
        else:
            weight_constant = relax.const(np.ascontiguousarray(weight))
        return KernelCall(self.kind, self.core, self.kernel, (self.data, weight_constant, bias),
                          {"input_zero_point": self.input_zero_point, "output": stage, **geometry, **layout, **units,
                           **channel_tensors, **({"zero_point_in_bias": folded is not None} if self.folds_zero_point else {})},
                          func_attrs=func_attrs)

    def folded_bias(self) -> Optional[np.ndarray]:
        """The bias (at least int32) with the input zero point folded in, as `kernel_call` gives the kernel (before
        `bias_constant` narrows its storage), or None where the kernel does not fold it (no bias, not
        ``folds_zero_point``, or a folded value beyond the bias's type)."""
        if self.bias is None or not self.folds_zero_point:
            return None
        return fold_zero_point_into_bias(_at_least_int32(self.bias.value.numpy().reshape(-1)), self.weight,
                                         self.input_zero_point, self.channel_axis)

    def _accumulator_reach(self) -> Optional[np.ndarray]:
        """The largest |accumulator| of each output channel before its bias (int64): int8 or int16 data (16x8,
        zero point 0) with int8 weights, else None. Each output sums each of its channel's weights at most
        once, times an input (x - zero point, or x with the zero point folded into the bias, or a padded zero
        point), so |sum| <= (sum of the channel's |w|) * (largest |input|); so is every partial sum, in any
        order."""
        data_dtype = str(self.data.ty.dtype)
        if self.weight.dtype != np.int8 or data_dtype not in ("int8", "int16"):
            return None
        axes = tuple(axis for axis in range(self.weight.ndim) if axis != self.channel_axis % self.weight.ndim)
        weight_l1 = np.abs(self.weight.astype(np.int64)).sum(axis=axes)
        # int8: >= 128 * weight_l1, the raw values' (folded zero point) reach; int16: 32768 * weight_l1
        return weight_l1 * largest_centered(data_dtype, self.input_zero_point)


def widened_16x8(mac: MacKernel, ctx: LoweringContext) -> MacKernel:
    """``mac`` with its int8 weights widened to int16 (``widened_weights``) where it is a 16x8 CONV_2D or
    FULLY_CONNECTED (int16 data) whose sums stay within int32 (``MacKernel._accumulator_reach``: the int16 dual MAC's
    calls then take its tiles), the backend reads such weights (``LoweringContext.widened_16x8_weights``) and the
    flash holds their byte more per weight, the padded channels' too (``LoweringContext.flash_budget``, asked for
    the layer's weight operand); else ``mac`` itself. Measured on cortex-m4f: unseen ds_cnn_w33_45x13_16x8's 1x1
    convolutions of 33 channels 2.6 -> 2.2 instructions per MAC (the dual MAC over int8 weights widens each weight
    word by two SXTB16 and packs the inputs, about 28 instructions per 16 MACs; over int16 ones 22)."""
    reach = mac._accumulator_reach()
    if not ctx.widened_16x8_weights or str(mac.data.ty.dtype) != "int16" or mac.weight.dtype != np.int8 \
            or reach is None or int(reach.max(initial=0)) > INT32_MAX:
        return mac
    rows = mac.padded_units if mac.padded_units is not None else int(mac.weight.shape[mac.channel_axis])
    extra = rows * int(mac.weight.size) // int(mac.weight.shape[mac.channel_axis])
    return replace(mac, widened_weights=True) if ctx.flash_budget.grants(mac.core.args[1], extra) else mac


def padded_channels(weight: np.ndarray, data: relax.Expr, tile: int) -> Optional[int]:
    """The output channels (``weight``'s first axis, int8) of a MAC layer over int8 or int16 (16x8) ``data`` padded
    to whole tiles of ``tile`` (the backend's MAC tile: ``LoweringContext.dense_unit_tile``), or None where O is a
    multiple of it (or no tile): the kernel then tiles every channel for the backend's MAC helper, the zero rows'
    sums computed and never read, instead of keeping a scalar loop for them all. A 16x8 layer's tiles call the int16
    dual MAC (``backends.cortex_m.schedules.dual_mac``): cortex-m4f, unseen ds_cnn_w33_45x13_16x8's 1x1
    convolutions of 33 channels 5.5 -> 2.6 instructions per MAC."""
    if tile <= 1 or weight.dtype != np.int8 or str(data.ty.dtype) not in ("int8", "int16") \
            or weight.shape[0] % tile == 0:
        return None
    return -(-int(weight.shape[0]) // tile) * tile


def _prepare_16x8(multipliers: np.ndarray, shifts: np.ndarray, bias: Optional[np.ndarray],
                  reach: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray, Multipliers16x8]:
    """A 16x8 layer's requantization constants (`Multipliers16x8`), prepared at compile time: the "16x8" helper's
    multipliers (HIGH_MUL, shifts all 0) where its int32 sums (``reach``, None when not int32) plus its bias are
    bounded within int32 and every channel's total shift allows them, else the reduced multipliers and total
    shifts (REDUCED; TFLITE where a total shift is outside [1, 127])."""
    reduced, total_shift = reduce_16x8_multipliers(multipliers, shifts)
    if np.any(total_shift < 1) or np.any(total_shift > 127):
        return multipliers, shifts, Multipliers16x8.TFLITE
    high = high_mul_16x8_multipliers(reduced, total_shift)
    largest = None if reach is None else reach + (0 if bias is None else np.abs(bias.astype(np.int64)))
    if high is not None and largest is not None and int(largest.max(initial=0)) <= INT32_MAX:
        return high, np.zeros_like(total_shift), Multipliers16x8.HIGH_MUL
    return reduced, total_shift, Multipliers16x8.REDUCED


def fits_small_accumulator(reach: np.ndarray, bias: Optional[np.ndarray]) -> bool:
    """Whether every accumulator (|acc| <= reach) plus its channel's bias is small (`OutputStage.small_accumulator`)."""
    largest = reach + (0 if bias is None else np.abs(bias.astype(np.int64)))
    return fits_small_input(-int(largest.max(initial=0)), int(largest.max(initial=0)))


def _at_least_int32(bias: np.ndarray) -> np.ndarray:
    """A bias stored narrower than int32 widened to int32 (the same values)."""
    return bias.astype(np.int32) if bias.dtype.itemsize < 4 else bias


@dataclass(frozen=True)
class MacOperands:
    """What a MAC pattern matched: the core call and its operands as quantization facts."""

    core: relax.Call
    data: Int8Input
    weight: Int8Weight
    bias: Optional[Constant]
    out: QuantizedOutput


@dataclass(frozen=True)
class _MacTypes:
    """What one MAC variant TFLite Micro runs requires beyond its data and output types: the bias type when
    there is one (None: int32) and whether its activations are symmetric (zero points 0)."""

    bias: Optional[str]
    symmetric: bool

    def admits(self, operands: "MacOperands", bias_dtype: Optional[str]) -> bool:
        zero_points = (operands.data.quant.zero_point, operands.out.quant.zero_point)
        return bias_dtype in (None, self.bias or "int32") and (
            not self.symmetric or zero_points == (0, 0))


_MAC_TYPES = {  # (data, output) -> the variant
    ("int8", "int8"): _MacTypes(None, symmetric=False),
    ("int16", "int16"): _MacTypes("int64", symmetric=True),  # 16x8, with the int64 bias TFLite's converter writes
}


class MacPattern:
    """``q([act](add(op(dq(x), weight), dq(b))))``, the bias optional, for the Relax MAC op ``op_name``: an
    int8 operator, or a 16x8 one (``_MAC_TYPES``)."""

    def __init__(self, op_name: str) -> None:
        self._input, self._weight, self._bias = DequantizedActivation(), WeightPattern(), BiasPattern()
        self._core = is_op(op_name)(self._input.pattern, self._weight.pattern)
        self._result = QuantizedResult(with_bias(self._core, self._bias))

    def read(self, quantize: relax.Call, ctx: LoweringContext) -> Optional[MacOperands]:
        """The operands, or None when the pattern or one of its quantization facts does not fit."""
        matched = extract(self._result.pattern, quantize, ctx)
        if matched is None:
            return None
        data, weight, out = (part.read(matched, ctx) for part in (self._input, self._weight, self._result))
        has_bias = self._bias.pattern in matched
        bias = self._bias.read(matched, ctx) if has_bias else None
        if data is None or weight is None or out is None or (has_bias and bias is None):
            return None
        operands = MacOperands(matched[self._core], data, weight, bias, out)
        types = _MAC_TYPES.get((str(data.tensor.ty.dtype), str(matched[self._result.pattern].ty.dtype)))
        bias_dtype = self._bias.stored_dtype(matched, ctx) if has_bias else None
        return operands if types is not None and types.admits(operands, bias_dtype) else None
