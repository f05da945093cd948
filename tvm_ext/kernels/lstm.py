"""TE definition of TFLite Micro's integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 activations and weights, int16 cell
state, int32 biases; no CIFG, peephole, projection or layer norm: TFLM refuses those), as lstm_eval computes it.

Per batch row and time step (rows are independent, so TFLM's time-major order over whole batches gives the
same numbers), each gate g of (input, forget, cell, output):

    in  = clamp16(MBQM(sum_k (Wg[u, k] - wzp) * (x[k] - input_zp) + bias_g[u], M_in_g))
    rec = clamp16(MBQM(sum_k (Rg[u, k] - rzp) * (h[k] - hidden_zp), M_rec_g))
    gate_g[u] = sigmoid16(clamp16(in + rec))      (tanh16 for the cell gate: TFLM takes no other)

the gate inputs in Q3.12 and the gates in Q0.15 (scales 2^-12 and 2^-15, fixed by TFLM); then

    c = clamp16(MBQM(forget * c, M_fc)) +sat clamp16(MBQM(input * cell, M_ic)), clipped to +-cell_clip if set
    h = clamp8(MBQM(tanh16(c) * output, M_h) + hidden_zp),  output[t, b] = h

sigmoid16 / tanh16 are TFLite's int16 LOGISTIC / TANH (reference_integer_ops), which interpolate TFLite's
256-entry table of sigmoid(i / 24) in 0.16 fixed point (``SIGMOID_TABLE``); the kernel's constant operand is that
table laid out once at compile time over signed inputs (``signed_sigmoid_table``), so that a gate's activation is one
interpolation with no absolute value nor reflection.
The kernel rewrites its hidden and cell state operands in place: they are the bundle's state.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .extern_mac import (INTERLEAVED_TILE, ZeroPaddedRow, accumulate_interleaved, accumulate_products,
                         accumulate_rows, interleave_weights, over_tiles, padded_to_tiles)
from .fixed_point import (Rounding, clamp_to_int8, fits_small_input, largest_centered,
                          multiply_by_constant_quantized_multiplier, multiply_by_quantized_multiplier, saturate_int16,
                          shifts_right_only)
from .quant_params import checked_log2, fully_connected_multiplier, quantize_multiplier
from .sigmoid_int16 import SIGMOID_TABLE
from .zero_point_fold import fold_zero_point_into_bias

GATES = ("input", "forget", "cell", "output")  # TFLite's order of the weights and biases
GATE_INPUT_SCALE = np.float32(2.0**-12)  # Q3.12: the fully connected outputs, the nonlinearities' input
GATE_OUTPUT_SCALE = 2.0**-15  # Q0.15: the gates



@dataclass(frozen=True)
class Requantization:
    """A TFLite (multiplier, shift) pair: real = multiplier * 2^(shift - 31)."""

    multiplier: int
    shift: int


@dataclass(frozen=True)
class GateParams:
    """One gate's two fully connected products into Q3.12, and its weights' zero points."""

    input_fc: Requantization
    recurrent_fc: Requantization
    input_weights_zero_point: int
    recurrent_weights_zero_point: int


@dataclass(frozen=True)
class TanhScaling:
    """TFLite's int16 TANH input scaling: x * multiplier, then a rounding arithmetic right shift."""

    multiplier: int
    right_shift: int


GATE_INPUT_TANH = TanhScaling(3, 0)  # tanh of a Q3.12 gate input (TFLM's cell_state_scale_power -12)


@dataclass(frozen=True)
class LstmParams:
    """Everything the integer LSTM computes with besides its tensors (``lstm_params`` derives it as TFLM does)."""

    gates: tuple[GateParams, ...]  # in GATES order
    input_zero_point: int
    hidden_zero_point: int
    forget_times_cell: Requantization  # Q0.15 x cell -> cell
    input_times_cell_gate: Requantization  # Q0.15 x Q0.15 -> cell
    tanh_cell_times_output: Requantization  # Q0.15 x Q0.15 -> hidden state
    cell_tanh: TanhScaling  # the cell state (its scale a power of two) into tanh's Q3.12
    quantized_cell_clip: int  # 0: no clipping
    time_major: bool
    rounding: Rounding


def _inter_gate_mul(scale1: float, scale2: float, output_scale: float, rounding: Rounding) -> Requantization:
    """TFLM's CreateInterGateMulParams: the scales' product and quotient in double."""
    return Requantization(*quantize_multiplier(float(scale1) * float(scale2) / float(output_scale), rounding))


def cell_scale_power(cell_scale: float) -> int:
    """TFLite's CheckedLog2 of the cell state's scale: log2 in float32, rounded half away from zero."""
    return checked_log2(cell_scale)[0]


def cell_tanh_scaling(cell_scale: float) -> TanhScaling:
    """TFLM's lstm_internal::Tanh input scaling for a cell state of scale 2^p: Q(15 + p - 3) into Q3.12."""
    left_shift = 15 + cell_scale_power(cell_scale) - 3
    return TanhScaling(3 << left_shift, 0) if left_shift >= 0 else TanhScaling(3, -left_shift)


def quantized_cell_clip(cell_clip: float, cell_scale: float) -> int:
    """TFLM's quantized_cell_clip: clip / scale in double, bounded to int16, truncated toward zero."""
    if not cell_clip > 0:
        return 0
    return int(min(max(float(np.float32(cell_clip)) / float(np.float32(cell_scale)), -32768.0), 32767.0))


@dataclass(frozen=True)
class LstmQuantization:
    """The operator's scales and zero points as the model gives them (float32 scales)."""

    input_scale: float
    input_zero_point: int
    input_weight_scales: tuple[float, ...]  # per gate, GATES order
    input_weight_zero_points: tuple[int, ...]
    recurrent_weight_scales: tuple[float, ...]
    recurrent_weight_zero_points: tuple[int, ...]
    hidden_scale: float
    hidden_zero_point: int
    cell_scale: float


def lstm_params(quant: LstmQuantization, *, cell_clip: float, time_major: bool, rounding: Rounding) -> LstmParams:
    """TFLM's PrepareGateParametersInteger and CreateLstmCellStateInfo for ``quant``."""
    gates = tuple(
        GateParams(
            Requantization(*fully_connected_multiplier(np.float32(quant.input_scale), np.float32(in_scale),
                                                       GATE_INPUT_SCALE, rounding)),
            Requantization(*fully_connected_multiplier(np.float32(quant.hidden_scale), np.float32(rec_scale),
                                                       GATE_INPUT_SCALE, rounding)),
            in_zero_point, rec_zero_point)
        for in_scale, rec_scale, in_zero_point, rec_zero_point in zip(
            quant.input_weight_scales, quant.recurrent_weight_scales, quant.input_weight_zero_points,
            quant.recurrent_weight_zero_points, strict=True)
    )
    cell = float(np.float32(quant.cell_scale))
    return LstmParams(
        gates=gates,
        input_zero_point=quant.input_zero_point,
        hidden_zero_point=quant.hidden_zero_point,
        forget_times_cell=_inter_gate_mul(GATE_OUTPUT_SCALE, cell, cell, rounding),
        input_times_cell_gate=_inter_gate_mul(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, cell, rounding),
        tanh_cell_times_output=_inter_gate_mul(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE,
                                               float(np.float32(quant.hidden_scale)), rounding),
        cell_tanh=cell_tanh_scaling(cell),
        quantized_cell_clip=quantized_cell_clip(cell_clip, cell),
        time_major=time_major,
        rounding=rounding,
    )


class _Temps:
    """Named int32 intermediates, each stored into a small local array and read back (see softmax.Lets: the
    C is a sequence of assignments, and TVM's analyses never substitute one value into the next)."""

    SLOTS = 4

    def __init__(self) -> None:
        self.buffer = tirx.decl_buffer((self.SLOTS,), "int32", name="lstm_temps")

    def __getitem__(self, slot: int) -> PrimExpr:
        return self.buffer[slot]

    def store(self, slot: int, value: PrimExpr) -> tirx.Stmt:
        return tirx.BufferStore(self.buffer, value, [slot])


SIGNED_TABLE_ZERO = 256
"""The index of input 0 in ``signed_sigmoid_table``: its entries are those of inputs -256 .. 256."""


def signed_sigmoid_table() -> np.ndarray:
    """uint16 (513,): entry SIGNED_TABLE_ZERO + j is SIGMOID_TABLE[j] for j in 0 .. 255 (and 65535 for 256,
    never weighted) and 65536 - SIGMOID_TABLE[-j] for j in -255 .. -1 (and 1 for -256, never read), built at
    compile time: sigmoid(-y) = 1 - sigmoid(y) laid out on the negative side, so that one interpolation of
    the signed input gives what TFLite's interpolation of |input| and its reflection give (``_interpolated``)."""
    table = np.empty(2 * SIGNED_TABLE_ZERO + 1, np.uint16)
    table[SIGNED_TABLE_ZERO:2 * SIGNED_TABLE_ZERO] = SIGMOID_TABLE
    table[2 * SIGNED_TABLE_ZERO] = SIGMOID_TABLE[-1]
    table[SIGNED_TABLE_ZERO - 255:SIGNED_TABLE_ZERO] = 65536 - SIGMOID_TABLE[255:0:-1].astype(np.int32)
    table[0] = 65536 - int(SIGMOID_TABLE[-1])
    return table


def _interpolated(temps: _Temps, table: tirx.Buffer, value: PrimExpr, fraction_bits: int, largest: int,
                  saturated: int) -> list[tirx.Stmt]:
    """temps[1] = TFLite's interpolation of ``value`` (|value| <= ``largest``) in ``signed_sigmoid_table``
    over ``fraction_bits`` low bits, temps[0] = ``value``.

    TFLite's int16 LOGISTIC and TANH interpolate |value| in SIGMOID_TABLE (v: the index's entry << bits plus
    the fraction times the step to the next), ``saturated`` from index 255 on, and reflect a negative value's
    result (2^(16 + bits) - v). Interpolating the signed value itself, its floor's entry and the next in the
    signed table, gives v for a value >= 0 and 2^(16 + bits) - v for a negative one, bit for bit: with
    |value| = i * 2^bits + f, f > 0, the floor is -(i + 1) with fraction 2^bits - f, and
    (2^16 - T[i + 1]) * 2^bits + (2^bits - f) * (T[i + 1] - T[i])
    = 2^(16 + bits) - (T[i] * 2^bits + f * (T[i + 1] - T[i])).
    Saturation: where |value| may reach 255 * 2^bits, the value is clamped there, whose interpolation is
    T[255] * 2^bits (its reflection likewise); that must be ``saturated`` (TANH's is; LOGISTIC's input from an
    int16 gate never gets there: a ValueError otherwise)."""
    limit = 255 << fraction_bits
    stmts = [temps.store(0, value)]
    if largest >= limit:
        if saturated != int(SIGMOID_TABLE[255]) << fraction_bits:
            raise ValueError(f"an interpolated input of up to {largest} saturates to {saturated}, not the table's last "
                             "entry: the signed table cannot give it")
        # Selects, not min and max: TVM's C code generation names a min or max in a variable that a later
        # statement of the loop body reuses when it prints the same text, though temps[0] changed between.
        stmts.append(temps.store(0, tirx.Select(temps[0] > limit, tirx.const(limit, "int32"),
                                                tirx.Select(temps[0] < -limit, tirx.const(-limit, "int32"),
                                                            temps[0]))))
    index = (temps[0] >> fraction_bits) + SIGNED_TABLE_ZERO
    low = table[index].astype("int32")
    high = table[index + 1].astype("int32")
    fraction = temps[0] & ((1 << fraction_bits) - 1)
    return [*stmts, temps.store(1, (low << fraction_bits) + fraction * (high - low))]


def _sigmoid16(temps: _Temps, table: tirx.Buffer, x: PrimExpr, largest: int) -> tuple[list[tirx.Stmt], PrimExpr]:
    """TFLite's int16 LOGISTIC of a Q3.12 ``x`` (|x| <= ``largest``; input multiplier 3, no shift) -> Q0.15:
    (v + 2^9) >> 10 for x >= 0, (2^25 - v + 2^9 - 1) >> 10 otherwise; the reflected v of ``_interpolated``
    makes both one expression, the sign's -1 (``x >> 31``) the rounding's difference."""
    stmts = _interpolated(temps, table, x * 3, 9, 3 * largest, 0x7FFF << 10)
    return stmts, (temps[1] + (1 << 9) + (temps[0] >> 31)) >> 10


def _tanh16(temps: _Temps, table: tirx.Buffer, x: PrimExpr, largest: int,
            scaling: TanhScaling) -> tuple[list[tirx.Stmt], PrimExpr]:
    """TFLite's int16 TANH of ``x`` (|x| <= ``largest``) scaled by ``scaling`` into Q3.12 -> Q0.15:
    (v - 2^23 + 2^7) >> 8 for a scaled input >= 0, (2^23 - v + 2^7 - 1) >> 8 otherwise, one expression as in
    ``_sigmoid16``."""
    scaled = x * scaling.multiplier
    scaled_largest = largest * scaling.multiplier
    if scaling.right_shift:
        scaled = (scaled + (1 << (scaling.right_shift - 1))) >> scaling.right_shift
        scaled_largest = (scaled_largest >> scaling.right_shift) + 1
    stmts = _interpolated(temps, table, scaled, 8, scaled_largest, 0xFFFF << 8)
    return stmts, (temps[1] - (1 << 23) + (1 << 7) + (temps[0] >> 31)) >> 8


def _mbqm(x: PrimExpr, requantization: Requantization, rounding: Rounding, largest: int) -> PrimExpr:
    """MultiplyByQuantizedMultiplier of an ``x`` with |x| <= ``largest`` (the cheapest exact helper)."""
    return multiply_by_constant_quantized_multiplier(x, requantization.multiplier, requantization.shift, rounding,
                                                     largest)


def _gate_mbqm(x: PrimExpr, params: LstmParams, members: tuple[int, ...], index: Union[int, tirx.Var], product: str,
               largest: tuple[int, ...], offsets: tirx.Buffer) -> PrimExpr:
    """Gate ``index``'s requantization ``product`` ("input_fc" or "recurrent_fc") of its sum ``x`` (|x| <= the
    gate's ``largest``, GATES order): its own constants for a gate alone; in a loop over the gates ``members`` (one
    form: ``gate_groups``, so one shift and one helper), the multiplier its row of ``offsets`` ends in
    (``with_gate_multipliers``), read at run time: one register for the loop, where constants selected by the gate
    would be branches in every unit's step."""
    requantizations = [getattr(params.gates[member], product) for member in members]
    if len(members) == 1:
        return _mbqm(x, requantizations[0], params.rounding, largest[members[0]])
    bound = max(largest[member] for member in members)
    return multiply_by_quantized_multiplier(
        x, offsets[index, int(offsets.shape[1]) - 1], requantizations[0].shift, params.rounding,
        shifts_right_only([r.multiplier for r in requantizations], [r.shift for r in requantizations]),
        fits_small_input(-bound, bound))


def with_gate_multipliers(offsets: np.ndarray, params: LstmParams, product: str) -> np.ndarray:
    """A kernel's offsets of ``product`` ("input_fc" or "recurrent_fc"), int32 (4, U'), each gate's row followed by
    the multiplier of its requantization: (4, U' + 1), what a kernel whose gates of one form run in one loop reads
    (``_gate_mbqm``)."""
    multipliers = np.array([getattr(gate, product).multiplier for gate in params.gates], np.int32)
    return np.concatenate([offsets.astype(np.int32), multipliers.reshape(-1, 1)], axis=1)


def _gate_form(params: LstmParams, products: "GateProducts", index: int) -> tuple:
    """What gate ``index``'s loop computes besides its multipliers: its activation, its products' shifts and
    weights' zero points, and which requantization helper each product's bound and constants take."""
    gate = params.gates[index]
    return (GATES[index] == "cell", gate.input_fc.shift, gate.recurrent_fc.shift, gate.input_weights_zero_point,
            gate.recurrent_weights_zero_point,
            *(shifts_right_only(r.multiplier, r.shift) for r in (gate.input_fc, gate.recurrent_fc)),
            *(fits_small_input(-bound[index], bound[index])
              for bound in (products.input_largest, products.recurrent_largest)))


def gate_groups(params: LstmParams, products: "GateProducts") -> tuple[tuple[int, ...], ...]:
    """The kernel's gate loops in the order it runs them, each as the gates it computes (indices in GATES order):
    with ``products.rolled`` the gates of one form (``_gate_form``: TFLM's input, forget and output gates, sigmoids,
    usually share one) in one loop over them, their multipliers selected by the gate (one copy of the loop's code,
    not one per gate); else each gate alone, in GATES order. Each gate's loop is independent of the others' (its
    own accumulators' pass, its own row of gates): the order does not change a value."""
    if not products.rolled:
        return tuple((index,) for index in range(len(params.gates)))
    forms: dict[tuple, list[int]] = {}
    for index in range(len(params.gates)):
        forms.setdefault(_gate_form(params, products, index), []).append(index)
    return tuple(tuple(members) for members in forms.values())


GATE_TILE = INTERLEAVED_TILE
"""Units whose gate products one pass over the input (or the hidden state) accumulates: the interleaved layout's
tile (one source of truth: ``extern_mac.INTERLEAVED_TILE``, the dual MAC's four channels); a remainder is one
shorter tile."""

INT16_LARGEST = 32768
"""The largest |x| of an int16 x: the gate inputs and the cell state."""

Q15_PRODUCT_LARGEST = 32767 * 32768
"""The largest |a * b| of a Q0.15 gate a in [0, 32767] (a sigmoid) and an int16 b: the inter-gate products."""


@dataclass(frozen=True)
class GateProducts:
    """How the kernel computes each gate's two products (``gate_products``): with the input (hidden) zero point
    folded into int32 per-unit offsets where they fit (the MACs then multiply raw int8 values: the dual MAC's
    form), else subtracted in the product; and a bound of each gate's |product + bias| (its requantization's
    cheapest exact helper); and whether both products' weights come interleaved (``interleave_gate_weights``), or
    in TFLite's rows padded to whole tiles (``tvm_ext.kernels.extern_mac.rows_padded``): then each gate's products
    run over all of its units at once (``lstm_int8``)."""

    input_zero_point_folded: bool
    hidden_zero_point_folded: bool
    input_largest: tuple[int, ...]  # per gate, GATES order
    recurrent_largest: tuple[int, ...]
    interleaved: bool = False
    rows: bool = False
    rolled: bool = False  # whole gates of one form in one loop (``gate_groups``)

    @property
    def whole_gates(self) -> bool:
        """Whether each gate's products run over all of its units at once (interleaved or rows)."""
        return self.interleaved or self.rows


def interleave_gate_weights(weights: np.ndarray) -> np.ndarray:
    """Gate weights (4, U, K) laid out (4, U' / GATE_TILE, K' / GATE_TILE, GATE_TILE, GATE_TILE) per gate
    (``tvm_ext.kernels.extern_mac.interleave_weights``: U and K padded to whole tiles and groups by zero weights;
    the kernel multiplies those by zero-padded copies of its input row and hidden state, ``lstm_int8``)."""
    return interleave_weights(weights)


def interleaves(units: int, depth: int, zero_points_folded: bool, weight_zero_points: tuple[int, ...]) -> bool:
    """Whether the products of an LSTM of ``depth`` inputs and ``units`` units take interleaved weights (or whole
    gates in rows) where a backend asks for them: raw int8 values multiplied (the input and hidden zero points folded
    into the offsets, every weight zero point 0); units and inputs that are not whole tiles and groups are padded to
    them (``interleave_gate_weights``; rows: the units only, ``tvm_ext.kernels.extern_mac.rows_padded``)."""
    return units > 0 and depth > 0 and zero_points_folded and not any(weight_zero_points)


def _offsets(bias: np.ndarray, weights: np.ndarray, weight_zero_points: tuple[int, ...],
             data_zero_point: int) -> Optional[np.ndarray]:
    """int32 (4, U): ``bias - data_zero_point * sum_k (weights[g, u, k] - weight_zero_point[g])``, None where an
    entry does not fit int32."""
    centred = weights.astype(np.int64) - np.array(weight_zero_points, np.int64).reshape(-1, 1, 1)
    folded = fold_zero_point_into_bias(bias.reshape(-1).astype(np.int32), centred.reshape(-1, weights.shape[2]),
                                       data_zero_point, channel_axis=0)
    return None if folded is None else folded.reshape(bias.shape)


def gate_products(bias: np.ndarray, input_weights: np.ndarray, recurrent_weights: np.ndarray,
                  params: LstmParams, interleave: bool = False,
                  rows: bool = False) -> tuple[np.ndarray, np.ndarray, GateProducts]:
    """The kernel's input and recurrent offsets (int32 (4, U) each, (4, U') where interleaved or rows: U rounded up
    to whole tiles, 0 beyond U; what each gate's accumulators start from) and its ``GateProducts``, for the stacked
    int32 ``bias`` (4, U) and int8 weights (4, U, I) and (4, U, U);
    with ``interleave`` (a backend's choice: ``backends.backend.KernelSchedules.interleaved_gate_weights``) both
    products take interleaved weights where the shapes and zero points allow (``interleaves``); else with ``rows``
    (``backends.backend.KernelSchedules.whole_gate_rows``) each gate's products run over all of its units in
    TFLite's rows where they allow the same."""
    input_zps = tuple(gate.input_weights_zero_point for gate in params.gates)
    recurrent_zps = tuple(gate.recurrent_weights_zero_point for gate in params.gates)
    input_offsets = _offsets(bias, input_weights, input_zps, params.input_zero_point)
    recurrent_offsets = _offsets(np.zeros(bias.shape, np.int32), recurrent_weights, recurrent_zps,
                                 params.hidden_zero_point)
    depth, units = input_weights.shape[2], recurrent_weights.shape[2]
    whole = interleaves(units, depth, input_offsets is not None and recurrent_offsets is not None,
                        input_zps + recurrent_zps)
    products = GateProducts(
        input_zero_point_folded=input_offsets is not None,
        hidden_zero_point_folded=recurrent_offsets is not None,
        input_largest=tuple(
            int(np.abs(bias[g].astype(np.int64)).max(initial=0))
            + depth * largest_centered("int8", params.input_zero_point) * largest_centered("int8", zp)
            for g, zp in enumerate(input_zps)),
        recurrent_largest=tuple(
            units * largest_centered("int8", params.hidden_zero_point) * largest_centered("int8", zp)
            for zp in recurrent_zps),
        interleaved=interleave and whole,
        rows=rows and not interleave and whole,
    )
    offsets = (bias.astype(np.int32) if input_offsets is None else input_offsets,
               np.zeros(bias.shape, np.int32) if recurrent_offsets is None else recurrent_offsets)
    if products.whole_gates:  # the padded units' sums start at 0 (their weights are 0: they stay there)
        offsets = tuple(np.pad(o, ((0, 0), (0, padded_to_tiles(units) - units))) for o in offsets)
    return offsets[0], offsets[1], products


def lstm_int8(data: te.Tensor, hidden: te.Tensor, cell: te.Tensor, input_weights: te.Tensor,
              recurrent_weights: te.Tensor, input_offsets: te.Tensor, recurrent_offsets: te.Tensor, table: te.Tensor,
              *, params: LstmParams, products: GateProducts) -> te.Tensor:
    """data int8 (T, B, I) time-major or (B, T, I), hidden int8 (B, U), cell int16 (B, U), input_weights int8
    (4, U, I), recurrent_weights int8 (4, U, U) (each ``interleave_gate_weights``' layout where ``products``
    says so, then int8 or int16: the products read either; (4, U', I) and (4, U', U), ``rows_padded``, where its
    ``rows`` does), input_offsets and recurrent_offsets int32 (4, U) (``gate_products``; each row followed by its
    gate's multiplier where ``products.rolled``: ``with_gate_multipliers``), table uint16 (513,)
    (``signed_sigmoid_table``) -> int8 output shaped like ``data`` with U for I. Rewrites ``hidden`` and ``cell`` in place (the state after the last step).

    A TE extern stage of serial loops: per batch row and step, per gate and tile of GATE_TILE units, the
    input and the recurrent product into GATE_TILE int32 accumulators each, from their offsets (each product
    a reduction block of ``tvm_ext.kernels.extern_mac``: the dual MAC on DSP cores; with interleaved weights
    one block over every tile of the gate into U accumulators each, one helper call on DSP cores; with rows one
    block over every row of the gate likewise, one helper call on Helium cores), then per unit both
    requantized into Q3.12, added and activated (the gates of one form in one loop over them where
    ``products.rolled``: ``gate_groups``); then per unit the cell and hidden state update."""
    first, second = int(data.shape[0]), int(data.shape[1])
    steps, batch = (first, second) if params.time_major else (second, first)
    depth = int(data.shape[2])
    units = int(hidden.shape[1])
    rounding = params.rounding
    input_zp = 0 if products.input_zero_point_folded else params.input_zero_point
    hidden_zp = 0 if products.hidden_zero_point_folded else params.hidden_zero_point

    def build(ins, outs):
        x, h, c, w_in, w_rec, in_offsets, rec_offsets, lut = ins
        out = outs[0]
        gates = tirx.decl_buffer((4, units), "int16", name="lstm_gates")
        # interleaved or rows: one pass per gate over all of its units (whole tiles); else per tile of GATE_TILE units
        accumulators = padded_to_tiles(units) if products.whole_gates else GATE_TILE
        acc_in = tirx.decl_buffer((accumulators,), "int32", name="lstm_input_acc")
        acc_rec = tirx.decl_buffer((accumulators,), "int32", name="lstm_recurrent_acc")
        temps = _Temps()
        b, t = tirx.Var("b", "int32"), tirx.Var("t", "int32")
        row = (t, b) if params.time_major else (b, t)
        # interleaved weights padded to whole groups read zero-padded copies of the input and hidden state
        x_padded = ZeroPaddedRow(x, row, depth, "lstm_input_padded") if products.interleaved else None
        h_padded = ZeroPaddedRow(h, [b], units, "lstm_hidden_padded") if products.interleaved else None

        def tile(members: tuple[int, ...], index: Union[int, tirx.Var], first_unit: PrimExpr,
                 count: int) -> tirx.Stmt:
            """Gate ``index`` (one of ``members``, gates of one form: ``gate_groups``) of units first_unit ..
            first_unit + count - 1 (all of them where whole gates)."""
            c_in, c_rec, c_out = (tirx.Var(name, "int32") for name in ("c_in", "c_rec", "c_out"))
            gate_params = params.gates[members[0]]
            row_index = tirx.const(index, "int32") if isinstance(index, int) else index

            def weight_row(unit: PrimExpr) -> list[PrimExpr]:
                return [row_index, first_unit + unit]

            def start(var: tirx.Var, accumulators: tirx.Buffer, offsets: tirx.Buffer) -> tirx.Stmt:
                return tirx.For(var, 0, count, tirx.ForKind.SERIAL,
                                tirx.BufferStore(accumulators, offsets[index, first_unit + var], [var]))

            gate_input = saturate_int16(
                saturate_int16(_gate_mbqm(acc_in[c_out], params, members, index, "input_fc", products.input_largest,
                                          in_offsets))
                + saturate_int16(_gate_mbqm(acc_rec[c_out], params, members, index, "recurrent_fc",
                                            products.recurrent_largest, rec_offsets)))
            if GATES[members[0]] == "cell":
                stmts, value = _tanh16(temps, lut, temps[3], INT16_LARGEST, GATE_INPUT_TANH)
            else:
                stmts, value = _sigmoid16(temps, lut, temps[3], INT16_LARGEST)
            if products.interleaved:  # every tile of the gate (count: all its units) from its offsets
                gate_row = [row_index]
                starts = []
                input_product = accumulate_interleaved(acc_in, in_offsets, gate_row, *x_padded.operand, w_in,
                                                       gate_row, "lstm_input_product")
                recurrent_product = accumulate_interleaved(acc_rec, rec_offsets, gate_row, *h_padded.operand, w_rec,
                                                           gate_row, "lstm_recurrent_product")
            elif products.rows:  # every row of the gate (count: all its units) from its offsets
                gate_row = [row_index]
                starts = []
                input_product = accumulate_rows(acc_in, in_offsets, gate_row, x, row, w_in, gate_row,
                                                "lstm_input_product")
                recurrent_product = accumulate_rows(acc_rec, rec_offsets, gate_row, h, [b], w_rec, gate_row,
                                                    "lstm_recurrent_product")
            else:
                starts = [start(c_in, acc_in, in_offsets), start(c_rec, acc_rec, rec_offsets)]
                input_product = accumulate_products(acc_in, x, row, w_in, weight_row, count, depth,
                                                    "lstm_input_product", input_zp,
                                                    gate_params.input_weights_zero_point)
                recurrent_product = accumulate_products(acc_rec, h, [b], w_rec, weight_row, count, units,
                                                        "lstm_recurrent_product", hidden_zp,
                                                        gate_params.recurrent_weights_zero_point)
            return tirx.SeqStmt([
                *starts,
                input_product,
                recurrent_product,
                tirx.For(c_out, 0, count, tirx.ForKind.SERIAL, tirx.SeqStmt([
                    temps.store(3, gate_input),
                    *stmts,
                    tirx.BufferStore(gates, tirx.Cast("int16", value), [index, first_unit + c_out]),
                ])),
            ])

        def gate(members: tuple[int, ...]) -> list[tirx.Stmt]:
            if len(members) > 1:  # whole gates of one form, one loop over them (gate_groups)
                index = tirx.Var("g", "int32")
                body = tile(members, index, tirx.const(0, "int32"), units)
                skipped = [other for other in range(members[0], members[-1]) if other not in members]
                if skipped:
                    body = tirx.IfThenElse(functools.reduce(tirx.And, [tirx.NE(index, other) for other in skipped]),
                                           body, None)
                return [tirx.For(index, members[0], members[-1] + 1 - members[0], tirx.ForKind.SERIAL, body)]
            if products.whole_gates:
                return [tile(members, members[0], tirx.const(0, "int32"), units)]
            return over_tiles(units, GATE_TILE, lambda first, count: tile(members, members[0], first, count), "v")

        u = tirx.Var("u", "int32")

        def gate_value(name: str) -> PrimExpr:
            return gates[GATES.index(name), u].astype("int32")

        clip = params.quantized_cell_clip
        cell_sum = saturate_int16(temps[0] + temps[1])
        if clip:
            cell_sum = tirx.max(tirx.min(cell_sum, clip), -clip)
        tanh_stmts, tanh_cell = _tanh16(temps, lut, temps[2], INT16_LARGEST, params.cell_tanh)
        hidden_value = tirx.Cast("int32", clamp_to_int8(
            _mbqm(temps[3] * gate_value("output"), params.tanh_cell_times_output, rounding, Q15_PRODUCT_LARGEST)
            + params.hidden_zero_point, -128, 127))
        update = tirx.For(u, 0, units, tirx.ForKind.SERIAL, tirx.SeqStmt([
            temps.store(0, saturate_int16(_mbqm(gate_value("forget") * c[b, u].astype("int32"),
                                                params.forget_times_cell, rounding, Q15_PRODUCT_LARGEST))),
            temps.store(1, saturate_int16(_mbqm(gate_value("input") * gate_value("cell"),
                                                params.input_times_cell_gate, rounding, Q15_PRODUCT_LARGEST))),
            temps.store(2, cell_sum),
            tirx.BufferStore(c, tirx.Cast("int16", temps[2]), [b, u]),
            *tanh_stmts,
            temps.store(3, tanh_cell),
            temps.store(3, hidden_value),
            tirx.BufferStore(h, tirx.Cast("int8", temps[3]), [b, u]),
            tirx.BufferStore(out, tirx.Cast("int8", temps[3]), [*row, u]),
        ]))
        padded = [copy for copy in (x_padded, h_padded) if copy is not None and copy.buffer is not None]
        step = tirx.SeqStmt([*(copy.fill() for copy in padded)]
                            + [loop for members in gate_groups(params, products) for loop in gate(members)]
                            + [update])
        loops = tirx.For(b, 0, batch, tirx.ForKind.SERIAL, tirx.For(t, 0, steps, tirx.ForKind.SERIAL, step))
        return tirx.SeqStmt([tirx.AllocBuffer(gates), tirx.AllocBuffer(acc_in), tirx.AllocBuffer(acc_rec),
                             tirx.AllocBuffer(temps.buffer), *(tirx.AllocBuffer(copy.buffer) for copy in padded),
                             *(copy.zero_tail() for copy in padded), loops])

    out_shape = (*data.shape[:2], units)
    return te.extern(out_shape, [data, hidden, cell, input_weights, recurrent_weights, input_offsets,
                                 recurrent_offsets, table], build, name="lstm", dtype="int8")
