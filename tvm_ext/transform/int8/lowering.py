"""What an int8 operator lowering is: the records a match returns and the entry of the registration table.

A lowering recognises, in the frontend's QDQ graph, the Relax expressions of one (or a family of) TFLite
operators with a pattern of ``tvm.relax.dpl`` and returns a record of the integer kernel call that
replaces them. It never emits anything itself: the driver (``lower_quantized_to_integer``) emits the
record's ``KernelCall`` and folds a following int8 clip into the record's activation range.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Union

import numpy as np
from tvm import relax, te

from ...kernels import Rounding
from ...kernels.quant_params import ActivationRange
from .graph import Graph


class FlashBudget:
    """The flash (bytes) a lowering's choices that add constant bytes to the model's (a depthwise layer's taps or a
    recurrent cell's interleaved weights widened to int16, an int8 ADD's lookup tables) may still take: the profile's
    flash less the model's constants (``tvm_ext.layers.constant_bytes``), granted layer by layer in the order they
    ask; None: no limit."""

    def __init__(self, spare_bytes: Optional[int] = None) -> None:
        self.spare_bytes = spare_bytes
        self._granted: dict[relax.Expr, bool] = {}  # a layer's call -> whether its bytes were granted

    def grants(self, layer: relax.Expr, nbytes: int) -> bool:
        """Whether the layer (its Relax call: asking again gives the first answer, the bytes taken once) may store
        ``nbytes`` more bytes of flash; if so they are taken from the budget."""
        if layer not in self._granted and not self.grants_all([layer], nbytes):
            self._granted[layer] = False  # alone, a refusal is the layer's answer from now on
        return self._granted[layer]

    def grants_all(self, layers: Sequence[relax.Expr], nbytes: int) -> bool:
        """Whether every one of ``layers`` (a kernel's tables: one choice) may store ``nbytes`` more bytes each:
        ``grants_each`` with the same bytes for each."""
        return self.grants_each([(layer, nbytes) for layer in layers])

    def granted(self, key: relax.Expr) -> bool:
        """Whether ``key`` (a constant or layer) was granted its bytes before: asking for it again takes none."""
        return self._granted.get(key, False)

    def grants_each(self, choice: Sequence[tuple[relax.Expr, int]]) -> bool:
        """Whether every (constant or layer, bytes) of ``choice`` (a kernel's tables and constant operands: one
        choice) may store its bytes: all taken together or none (a refusal takes nothing, so no byte stays charged
        to a choice not made); one granted before counts as taken, one refused before refuses the whole."""
        fresh = {key: nbytes for key, nbytes in choice if key not in self._granted}
        if not all(self._granted[key] for key, _ in choice if key in self._granted):
            return False
        total = sum(fresh.values())
        if self.spare_bytes is not None:
            if total > self.spare_bytes:
                return False
            self.spare_bytes -= total
        self._granted.update(dict.fromkeys(fresh, True))
        return True


@dataclass(frozen=True)
class LoweringContext:
    """What a lowering reads: the original graph, the lowered Var of each original Var lowered so far
    (int8 tensors of the new graph), the rounding mode of the kernels, and whether int8 FULLY_CONNECTED
    kernels take paired weights (``tvm_ext.kernels.dense.pair_weights``) where they can, whether int8
    MAX_POOL_2D kernels are written as runs (``tvm_ext.kernels.copy_runs.max_pool2d_runs``) where they can, whether
    PAD and TRANSPOSE kernels are (``tvm_ext.kernels.copy_runs.pad_runs``, ``transpose_runs``), the backend's own
    kernel of int8 ADD (``backends.backend.KernelSchedules.int8_add``; None: none) and of int8 SOFTMAX
    (``int8_softmax``), and whether recurrent cells (an LSTM's gates, an SVDF's feature product) take their weights
    interleaved per tile of four units (``backends.backend.KernelSchedules.interleaved_gate_weights``).
    ``LowerQuantizedToInteger`` fills each field named as one of ``KernelSchedules`` from the backend's record."""

    graph: Graph
    lowered: dict[relax.Var, relax.Expr]
    rounding: Rounding
    paired_weights: bool = False
    padded_pairs_pay: Optional[Callable[[int, int, int, int], bool]] = None
    """Whether a CONV_2D whose output channels PAIRED_TILE does not divide pads them to whole tiles of it and takes
    paired weights too, given its channels, window taps and inputs, and MACs (``backends.backend.KernelSchedules.padded_pairs_pay``)."""
    max_pool_runs: bool = False
    int8_add: Optional[Callable[..., Optional[te.Tensor]]] = None
    int8_add_pays: Optional[Callable[[Sequence[Any]], bool]] = None
    """Whether ``int8_add`` pays in the model, given each of its int8 ADDs of two computed operands of one shape as a
    ``tvm_ext.transform.int8.add.ComputedAdd`` (output elements, whether both operands are elementwise kernels'
    results, multipliers, rounding) (``backends.backend.KernelSchedules.int8_add_pays``; None: wherever it fits)."""
    int8_add_values: Optional[Callable[..., te.Tensor]] = None
    """The backend's own kernel of int8 ADD and SUB from the operands' doubled rescaled values
    (``backends.backend.KernelSchedules.int8_add_values``; None: none)."""
    int8_add_values_pays: Optional[Callable[[Any], bool]] = None
    """Whether ``int8_add_values`` pays for one ADD or SUB, given its ``backends.backend.AddValuesChoice`` (output elements,
    whether the generic kernel would table an operand, the flash bytes it adds beyond the generic kernel's)
    (``backends.backend.KernelSchedules.int8_add_values_pays``; None: wherever it fits)."""
    int8_add_values_first: Optional[Callable[[Sequence[Any]], bool]] = None
    """Whether ``int8_add_values`` is tried before ``int8_add`` where both apply, given the model's ADDs as
    ``int8_add_pays`` takes them (``backends.backend.KernelSchedules.int8_add_values_first``; None: never)."""
    stacked_rows: bool = False
    """Whether int8 FULLY_CONNECTED kernels of one input row take stacked weights (``tvm_ext.kernels.dense.stack_rows``)
    where the weights allow it."""
    tiled_rows: bool = False
    """Whether int8 FULLY_CONNECTED kernels of several int8 input rows, and int8 CONV_2D kernels whose output channels
    are padded to whole tiles of eight, take their weights in tiles of eight channels input after input
    (``tvm_ext.kernels.dense.tile_rows``; ``backends.backend.KernelSchedules.tiled_rows``)."""
    tiled_convs_pay: Optional[Callable[[tuple[tuple[int, int], ...]], frozenset[int]]] = None
    """Which of the model's CONV_2D kernels ``tiled_rows`` takes, given each one's (window inputs, channel tiles'
    calls per inference) (``backends.backend.KernelSchedules.tiled_convs_pay``; None: every one)."""
    widened_rows_pay: Optional[Callable[[int, bool], bool]] = None
    """Whether int8 FULLY_CONNECTED kernels of one input row take their weights widened to int16
    (``tvm_ext.kernels.dense.widen_rows``) where the weights allow it and ``flash_budget`` grants each layer's extra
    byte per weight, given the MACs of the model's layers the layout may take and whether stacked rows stay beside
    them (``backends.backend.KernelSchedules.widened_rows_pay``; None: never)."""
    conv_weight_length: Optional[Callable[[int, int, int, bool], int]] = None
    """Each output channel's int8 CONV_2D weight length for a window (KH, KW, I), padded or not
    (``backends.backend.KernelSchedules.conv_weight_length``; None: KH * KW * I)."""
    interleaved_gate_weights: bool = False
    whole_gate_rows: bool = False
    """Whether a recurrent cell's products (an LSTM's gates, an SVDF's feature product) run over all of its units in
    one block over TFLite's rows where they do not take interleaved weights
    (``backends.backend.KernelSchedules.whole_gate_rows``)."""
    gate_loop_bytes: int = 0
    """The code of one LSTM gate's loop, saved for each gate rolled into a loop with others of its form where that pays
    (``backends.backend.KernelSchedules.gate_loop_bytes``; 0: never)."""
    svdf_unit_rows: tuple[str, ...] = ()
    """The SVDF state types whose time product and requantization are one TE extern stage, unit after unit
    (``backends.backend.KernelSchedules.svdf_unit_rows``)."""
    svdf_unit_rows_max_macs: Optional[int] = None
    """The most time-product MACs of one call at which an SVDF takes the unit rows; None: any
    (``backends.backend.KernelSchedules.svdf_unit_rows_max_macs``)."""
    widened_gate_weights: bool = False
    """Whether a recurrent cell's interleaved weights are widened to int16 where ``flash_budget`` grants their extra
    byte per weight (``widen_gate_weights``; ``backends.backend.KernelSchedules.widened_gate_weights``)."""
    pad_runs: bool = False
    word_runs: bool = False
    """Whether CONCATENATION's runs of 3 bytes more than whole words copy one byte more, as whole words
    (``backends.backend.KernelSchedules.word_runs``)."""
    int8_softmax: Optional[Callable[..., Optional[te.Tensor]]] = None
    """The backend's own kernel of int8 SOFTMAX (``backends.backend.KernelSchedules.int8_softmax``; None: none)."""
    int8_batch_matmul: Optional[Callable[..., Optional[te.Tensor]]] = None
    """The backend's own kernel of int8 BATCH_MATMUL (``backends.backend.KernelSchedules.int8_batch_matmul``; None:
    none)."""
    int8_window_sums: Optional[tuple[str, str, str, str, str, str, str]] = None
    """The backend's word ops of int8 window sums (``backends.backend.KernelSchedules.int8_window_sums``; None: none)."""
    few_channel_conv: Optional[Callable[..., Optional[te.Tensor]]] = None
    """The backend's own kernel of an int8 CONV_2D whose window reads few input channels
    (``backends.backend.KernelSchedules.few_channel_conv``; None: none)."""
    few_channel_depthwise: Optional[Callable[..., Optional[te.Tensor]]] = None
    """The backend's own kernel of an int8 DEPTHWISE_CONV_2D whose channels are not whole tiles of four
    (``backends.backend.KernelSchedules.few_channel_depthwise``; None: none)."""
    depthwise_pixel_tiles: Optional[Callable[..., bool]] = None
    """Whether ``few_channel_depthwise`` takes a layer of these shapes with the tiles that read int16 weights
    (``backends.backend.KernelSchedules.depthwise_pixel_tiles``; None: never)."""
    depthwise_rows_take: Optional[Callable[..., bool]] = None
    """Whether ``few_channel_depthwise`` takes a layer of these shapes with a kernel reading its weights as int8
    (``backends.backend.KernelSchedules.depthwise_rows_take``; None: never)."""
    dense_unit_tile: int = 0
    """The channel tile int8 and 16x8 FULLY_CONNECTED and CONV_2D kernels pad their output channels to with zero
    weight rows (``backends.backend.KernelSchedules.dense_unit_tile``; 0: none)."""
    one_pixel_rows_pay: Optional[Callable[[int, int, tuple[tuple[int, int], ...]], bool]] = None
    """Whether an int8 CONV_2D of one pixel's 1x1 window runs as a FULLY_CONNECTED's stacked rows, given its row
    length, its channels (whole tiles) and those of every such convolution of the model
    (``backends.backend.KernelSchedules.one_pixel_rows_pay``; None: never)."""
    one_row_padding_pays: Optional[Callable[[int, int, int, int], bool]] = None
    """Whether an int8 CONV_2D of one output pixel, or a FULLY_CONNECTED of one int8 row (whatever its channels), pads
    its output channels to ``dense_unit_tile`` too, given each channel's MACs, its channels, their padded count and
    its kernel's calls per inference (``backends.backend.KernelSchedules.one_row_padding_pays``; None: never)."""
    qlinear_conv: Optional[Callable[..., Optional[te.Tensor]]] = None
    """The backend's own kernel of an NCHW int8 QLinearConv (``backends.backend.KernelSchedules.qlinear_conv``;
    None: the generic kernel), for the QLinearConvs ``qlinear_conv_fits`` accepts."""
    qlinear_conv_fits: Optional[Callable[[Any, bool, int], bool]] = None
    qlinear_unrolled_taps: int = 0
    """The most window taps of a depthwise QLinearConv over an unpadded input whose generic kernel sums its window
    unrolled (``backends.backend.KernelSchedules.qlinear_unrolled_taps``; 0: never)."""
    widened_depthwise_taps: int = 0
    """The most window taps of an int8 DEPTHWISE_CONV_2D whose weights are widened to int16
    (``backends.backend.KernelSchedules.widened_depthwise_taps``; 0: never), where ``flash_budget`` grants their
    bytes."""
    channel_requantization: bool = False
    """Whether an int8 CONV_2D or DEPTHWISE_CONV_2D requantizes from per-channel constants even where its channels'
    are all the same (``backends.backend.KernelSchedules.channel_requantization``; ``MacKernel.channel_constants``)."""
    widened_16x8_weights: bool = False
    """Whether a 16x8 CONV_2D's or FULLY_CONNECTED's int8 weights are widened to int16 where its sums stay within
    int32 (``backends.backend.KernelSchedules.widened_16x8_weights``; ``mac.widened_16x8``), where ``flash_budget``
    grants their bytes."""
    flash_budget: FlashBudget = field(default_factory=FlashBudget)
    """What the profile's flash still holds beyond the model's constants, for the choices that store weights in
    more bytes (``FlashBudget``; unlimited unless ``LowerQuantizedToInteger`` has the profile's flash)."""
    integer_requantization: bool = False
    """Whether onnxruntime's QLinearConv and QLinearMatMul kernels requantize in integers (the bundle's helper of
    the float operations' bits: cores without a floating-point unit)."""


def widen_gate_weights(ctx: LoweringContext, layer: relax.Expr, *weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """A recurrent cell's interleaved int8 ``weights`` (an LSTM's gates', an SVDF's feature weights) as int16 where the
    backend asks (``LoweringContext.widened_gate_weights``) and ``ctx.flash_budget`` grants ``layer`` their extra
    byte per weight (all of them or none), else as they are: the same values, which the backend's interleaved MAC
    then reads without widening them in its loop."""
    if ctx.widened_gate_weights and ctx.flash_budget.grants(layer, sum(int(w.size) for w in weights)):
        return tuple(w.astype(np.int16) for w in weights)
    return weights


@dataclass(frozen=True)
class KernelCall:
    """One call of a TE kernel of ``tvm_ext.kernels``: what replaces one TFLite operator.

    ``kwargs`` values that are Relax expressions are tensor operands of the kernel; the others are its
    compile-time parameters (they become immediates in the C).
    """

    kind: str  # TFLite operator name, e.g. "CONV_2D"
    core: relax.Call  # the Relax call computing the operator in the original graph (gives its index)
    kernel: Callable[..., te.Tensor]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    func_attrs: dict[str, Any] = field(default_factory=dict)  # set on the kernel's PrimFunc (e.g. SVDF's state)


class OperatorMatch(Protocol):
    """A matched operator, as data. ``activation`` is the kernel's clamp range, or None when the kernel
    has no activation stage (a following int8 clip is then not folded into it)."""

    activation: Optional[ActivationRange]

    def kernel_call(self, activation: Optional[ActivationRange]) -> KernelCall:
        """The kernel call, clamping to ``activation`` (``self.activation`` narrowed by a fused clip)."""


@dataclass(frozen=True)
class Mismatch:
    """The expression ends an operator of this lowering but is not one it can lower exactly;
    ``found`` names what was found instead (the operator named in UnsupportedOperatorError)."""

    found: str


class Site(enum.Enum):
    """Where a lowering's operator ends: at a binding of main, or at one of main's outputs."""

    BINDING = "binding"
    MODEL_OUTPUT = "model output"


@dataclass(frozen=True)
class Lowering:
    """One entry of the registration table (``tvm_ext.transform.int8.LOWERINGS``).

    ``completes(value, ctx)``: whether ``value`` (a binding's value, or the producer of a model output)
    ends an operator this lowering is responsible for; cheap, and true for at most one family of
    lowerings. ``match(value, ctx)``: the operator as a record, or the Mismatch that sends it to the
    float fallback.
    """

    operators: frozenset[str]  # TFLite operator names this lowering emits
    completes: Callable[[relax.Expr, LoweringContext], bool]
    match: Callable[[relax.Call, LoweringContext], Union[OperatorMatch, Mismatch]]
    site: Site = Site.BINDING


@dataclass(frozen=True)
class FixedCall:
    """A matched operator without an activation stage (SOFTMAX, RESHAPE, the QUANTIZE/DEQUANTIZE edges)."""

    call: KernelCall
    activation: None = None

    def kernel_call(self, activation: None) -> KernelCall:
        return self.call


@dataclass(frozen=True)
class ClampedCall:
    """A matched operator whose kernel takes its int8 clamp as the keyword ``activation`` (ADD, pools)."""

    call: KernelCall  # without ``activation``
    activation: ActivationRange

    def kernel_call(self, activation: ActivationRange) -> KernelCall:
        return dataclasses.replace(self.call, kwargs={**self.call.kwargs, "activation": activation})
