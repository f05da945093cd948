"""TE kernels of TFLite Micro's signal-library operators: each one TE extern stage calling the bundle's C
helper for the operator (`packager/templates/lp_signal_*.h`, bit-exact with TFLite Micro), with its
compile-time facts as arguments and constant operands (KISS FFT's twiddles and factors, the log table).

A helper call is an operator `tvm_ext.signal.<helper>` whose C lowering is the call of `lp_signal_<helper>`,
recorded while the bundle's C is generated (`calls_to_signal_helpers`) so that the internal header defines the
helpers called (`packager.signal_c`). Nothing else can lower it: a signal kernel exists only as bundle C.

Kernels of operators with state take it as operands that the kernel rewrites in place
(`STATE_OPERANDS_ATTR`, listed by `STATE_OPERANDS`); the frontend passes each state's value after a reset.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from typing import Optional, Union

import numpy as np
import tvm
from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from tvm_ext.model_check.signal_ops import kiss_factors

SIGNAL_OP_PREFIX = "tvm_ext.signal."
C_HELPER_PREFIX = "lp_signal_"

_USED: contextvars.ContextVar[Optional[set[str]]] = contextvars.ContextVar("tvm_ext_signal_helpers", default=None)


@contextlib.contextmanager
def calls_to_signal_helpers() -> Iterator[set[str]]:
    """Within this block, C code generation calls the signal helpers; yields the set of the C names called
    (filled in as code is generated)."""
    used: set[str] = set()
    token = _USED.set(used)
    try:
        yield used
    finally:
        _USED.reset(token)


def _register(helper: str) -> str:
    """Register the operator calling `lp_signal_<helper>`; returns its name."""
    op = f"{SIGNAL_OP_PREFIX}{helper}"
    c_name = f"{C_HELPER_PREFIX}{helper}"

    def to_c(call: tirx.Expr) -> tirx.Expr:
        used = _USED.get()
        if used is None:
            raise RuntimeError(f"{op} is C code of a tvm_ext bundle: generate it inside calls_to_signal_helpers")
        used.add(c_name)
        return tirx.call_extern("int32", c_name, *call.args)

    def elsewhere(call: tirx.Expr) -> tirx.Expr:
        raise RuntimeError(f"{op} is implemented only by the bundle's C helper {c_name}")

    tvm.ir.register_op_attr(op, "TCallEffectKind", tirx.CallEffectKind.UpdateState.value)
    tvm.ir.register_op_attr(op, "TScriptPrinterName", op.replace(".", "_"))
    tirx.register_intrin_lowering(op, "default", f=elsewhere)
    tirx.register_intrin_lowering(op, "c", f=to_c)
    return op


_HELPERS = ("window_s16", "fft_auto_scale_s16", "energy_s16", "filter_bank", "filter_bank_sqrt",
            "spectral_subtraction", "pcan", "filter_bank_log", "rfft_s16", "rfft_s32", "rfft_f32", "irfft_s16",
            "irfft_s32", "irfft_f32", "delay_s16", "overlap_add_s16", "overlap_add_f32", "framer_s16",
            "stacker_s16")
_OPS = {helper: _register(helper) for helper in _HELPERS}

Scalar = Union[int, PrimExpr]
Shape = Sequence[int]


def _address(buffer: tirx.Buffer) -> tirx.PrimExpr:
    """The address of the buffer's first element."""
    return tirx.address_of(tirx.BufferLoad(buffer, [tirx.const(0, "int32")] * len(buffer.shape)))


def _helper_stage(name: str, inputs: Sequence[te.Tensor], outputs: Sequence[tuple[Shape, str]], helper: str,
                  scalars: Sequence[Scalar] = (), work: Optional[tuple[str, int]] = None) -> list[te.Tensor]:
    """One TE extern stage `name` computing `outputs` ((shape, dtype) each) by one call of the helper:
    its arguments are the inputs' addresses, the outputs' addresses, then the work buffer's (`work`: dtype and
    elements, a local buffer code generation makes scratch), then `scalars` (int32)."""

    def build(ins, outs):
        pointers = [_address(buffer) for buffer in (*ins, *outs)]
        statements = []
        if work is not None:
            buffer = tirx.decl_buffer((work[1],), work[0], name="signal_work")
            statements.append(tirx.AllocBuffer(buffer))
            pointers.append(buffer.access_ptr("rw"))  # the whole buffer: no pass may shrink it to what TIR reads
        arguments = [*pointers, *(tirx.const(value, "int32") if isinstance(value, int) else value
                                  for value in scalars)]
        statements.append(tirx.Evaluate(tirx.call_intrin("int32", _OPS[helper], *arguments)))
        return tirx.SeqStmt(statements) if len(statements) > 1 else statements[0]

    result = te.extern([list(shape) for shape, _ in outputs], list(inputs), build, name=name,
                       dtype=[dtype for _, dtype in outputs])
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _elements(tensor: te.Tensor) -> int:
    return math.prod(int(d) for d in tensor.shape)


def _shape(tensor: te.Tensor) -> list[int]:
    return [int(d) for d in tensor.shape]


# --- frame to features --------------------------------------------------------------------------------------


def signal_window(data: te.Tensor, weights: te.Tensor, *, shift: int) -> te.Tensor:
    """SignalWindow: int16 data (any shape, its size a multiple of the weights'), int16 weights (1-D)."""
    return _helper_stage("signal_window", [data, weights], [(_shape(data), "int16")], "window_s16",
                         [_elements(data), _elements(weights), shift])[0]


def signal_fft_auto_scale(data: te.Tensor) -> list[te.Tensor]:
    """SignalFftAutoScale: int16 [n] -> (int16 [n] scaled up, int32 [] its scale in bits)."""
    return _helper_stage("signal_fft_auto_scale", [data], [(_shape(data), "int16"), ((), "int32")],
                         "fft_auto_scale_s16", [_elements(data)])


def signal_energy(spectrum: te.Tensor, *, start_index: int, end_index: int) -> te.Tensor:
    """SignalEnergy: complex int16 [2n] -> uint32 [n], bins start_index <= i < end_index."""
    count = _elements(spectrum) // 2
    return _helper_stage("signal_energy", [spectrum], [((count,), "uint32")], "energy_s16",
                         [count, start_index, end_index])[0]


def signal_filter_bank(data: te.Tensor, weights: te.Tensor, unweights: te.Tensor, frequency_starts: te.Tensor,
                       weight_starts: te.Tensor, widths: te.Tensor, *, num_channels: int) -> te.Tensor:
    """SignalFilterBank: uint32 energies and the int16 tables -> uint64 [num_channels]."""
    return _helper_stage("signal_filter_bank", [data, weights, unweights, frequency_starts, weight_starts, widths],
                         [((num_channels,), "uint64")], "filter_bank", [num_channels])[0]


def signal_filter_bank_square_root(data: te.Tensor, scale_bits: te.Tensor) -> te.Tensor:
    """SignalFilterBankSquareRoot: uint64 [n], int32 [] -> uint32 [n]."""
    return _helper_stage("signal_filter_bank_square_root", [data, scale_bits], [(_shape(data), "uint32")],
                         "filter_bank_sqrt", [_elements(data)])[0]


def signal_spectral_subtraction(data: te.Tensor, noise_estimate: te.Tensor, *, smoothing: int,
                                one_minus_smoothing: int, alternate_smoothing: int,
                                alternate_one_minus_smoothing: int, min_signal_remaining: int, smoothing_bits: int,
                                spectral_subtraction_bits: int, clamping: bool) -> list[te.Tensor]:
    """SignalFilterBankSpectralSubtraction: uint32 [n] and its state, the noise estimate uint32 [n] (rewritten
    in place) -> (uint32 [n] output, uint32 [n] the new noise estimate)."""
    return _helper_stage(
        "signal_spectral_subtraction", [data, noise_estimate], [(_shape(data), "uint32"), (_shape(data), "uint32")],
        "spectral_subtraction",
        [_elements(data), smoothing, one_minus_smoothing, alternate_smoothing, alternate_one_minus_smoothing,
         min_signal_remaining, smoothing_bits, spectral_subtraction_bits, int(clamping)])


def signal_pcan(data: te.Tensor, noise_estimate: te.Tensor, gain_lut: te.Tensor, *, snr_shift: int) -> te.Tensor:
    """SignalPCAN: uint32 [n], uint32 noise estimate [n], int16 gain table [125] -> uint32 [n]."""
    return _helper_stage("signal_pcan", [data, noise_estimate, gain_lut], [(_shape(data), "uint32")], "pcan",
                         [_elements(data), snr_shift])[0]


LOG_LUT_ENTRIES = 130


def log_lut() -> np.ndarray:
    """The table of TFLite Micro's Log32: uint16 round(2^16 (log2(1 + i/128) - i/128)) for i <= 128, then 0."""
    values = [round(65536 * (math.log2(1 + i / 128) - i / 128)) for i in range(LOG_LUT_ENTRIES - 1)]
    return np.array([*values, 0], dtype=np.uint16)


def signal_filter_bank_log(data: te.Tensor, table: te.Tensor, *, output_scale: int,
                           input_correction_bits: int) -> te.Tensor:
    """SignalFilterBankLog: uint32 [n], the `log_lut()` table -> int16 [n]."""
    return _helper_stage("signal_filter_bank_log", [data, table], [(_shape(data), "int16")], "filter_bank_log",
                         [_elements(data), output_scale, input_correction_bits])[0]


# --- FFT ------------------------------------------------------------------------------------------------------

_FFT_SUFFIX = {"int16": "s16", "int32": "s32", "float32": "f32"}
_FFT_SCALE = {"int16": 32767, "int32": 2147483647}
_PI_KISS_SUPER = 3.14159265358979323846264338327  # kiss_fftr's literal (the double nearest pi)


def _twiddle(phase: float, dtype: str) -> tuple[float, float]:
    """KISS FFT's kf_cexp for the scalar type: floor(0.5 + SAMP_MAX cos) for the fixed ones, (float) cos."""
    if dtype == "float32":
        return float(np.float32(math.cos(phase))), float(np.float32(math.sin(phase)))
    scale = _FFT_SCALE[dtype]
    return math.floor(0.5 + scale * math.cos(phase)), math.floor(0.5 + scale * math.sin(phase))


def _twiddle_array(values: list[tuple[float, float]], dtype: str) -> np.ndarray:
    return np.array(values, dtype="float32" if dtype == "float32" else "int32").reshape(-1)


def kiss_twiddles(fft_length: int, dtype: str, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """kiss_fftr_alloc's tables for a real FFT of fft_length: the complex FFT's n = fft_length / 2 twiddles
    and the n / 2 super twiddles, interleaved, int32 (the fixed-point values) or float32."""
    n = fft_length // 2
    sign = -1.0 if inverse else 1.0
    pi = math.pi  # kiss_fft_alloc's pi literal rounds to the same double
    twiddles = [_twiddle(sign * (-2 * pi * i / n), dtype) for i in range(n)]
    supers = [_twiddle(sign * (-_PI_KISS_SUPER * ((i + 1) / n + 0.5)), dtype) for i in range(n // 2)]
    return _twiddle_array(twiddles, dtype), _twiddle_array(supers, dtype)


def fft_factors(fft_length: int) -> np.ndarray:
    """int32 `kiss_factors` of the complex FFT of a real FFT of fft_length."""
    return np.array(kiss_factors(fft_length // 2), dtype="int32")


def signal_rfft(data: te.Tensor, twiddles: te.Tensor, super_twiddles: te.Tensor, factors: te.Tensor, *,
                fft_length: int) -> te.Tensor:
    """SignalRfft: rows of input_length <= fft_length samples (int16, int32 or float32) -> rows of
    fft_length / 2 + 1 complex values of the same type (interleaved)."""
    dtype = str(data.dtype)
    shape = _shape(data)
    input_length = shape[-1]
    rows = _elements(data) // input_length
    work = ("float32", 2 * fft_length) if dtype == "float32" else ("int32", 3 * fft_length + 2)
    return _helper_stage("signal_rfft", [data, twiddles, super_twiddles, factors],
                         [([*shape[:-1], fft_length + 2], dtype)], f"rfft_{_FFT_SUFFIX[dtype]}",
                         [rows, input_length, fft_length, int(factors.shape[0]) // 2], work)[0]


def signal_irfft(data: te.Tensor, twiddles: te.Tensor, super_twiddles: te.Tensor, factors: te.Tensor, *,
                 fft_length: int) -> te.Tensor:
    """SignalIrfft: rows of fft_length / 2 + 1 complex values -> rows of fft_length samples, same type."""
    dtype = str(data.dtype)
    shape = _shape(data)
    rows = _elements(data) // (fft_length + 2)
    work = ("float32", fft_length) if dtype == "float32" else ("int32", 3 * fft_length + 2)
    return _helper_stage("signal_irfft", [data, twiddles, super_twiddles, factors],
                         [([*shape[:-1], fft_length], dtype)], f"irfft_{_FFT_SUFFIX[dtype]}",
                         [rows, fft_length, int(factors.shape[0]) // 2], work)[0]


# --- streams (state) ------------------------------------------------------------------------------------------


def signal_delay(data: te.Tensor, state: te.Tensor, *, delay_length: int) -> te.Tensor:
    """SignalDelay: int16 rows delayed by delay_length samples; state int16 [rows * delay_length]."""
    frame = _shape(data)[-1]
    return _helper_stage("signal_delay", [data, state], [(_shape(data), "int16")], "delay_s16",
                         [_elements(data) // frame, frame, delay_length])[0]


def signal_overlap_add(data: te.Tensor, state: te.Tensor, *, frame_step: int) -> te.Tensor:
    """SignalOverlapAdd: [..., frames, frame_size] (int16 or float32) -> [..., frames * frame_step]; state
    [rows * frame_size] of the same type."""
    shape = _shape(data)
    frames, frame_size = shape[-2], shape[-1]
    rows = _elements(data) // (frames * frame_size)
    suffix = _FFT_SUFFIX[str(data.dtype)]
    return _helper_stage("signal_overlap_add", [data, state], [([*shape[:-2], frames * frame_step], str(data.dtype))],
                         f"overlap_add_{suffix}", [rows, frames, frame_size, frame_step])[0]


def framer_capacity(frame_size: int, frame_step: int) -> int:
    """Samples a Framer row's FIFO holds: frame_size rounded up to whole steps (TFLite Micro's capacity)."""
    return -(-frame_size // frame_step) * frame_step


def signal_framer(data: te.Tensor, state: te.Tensor, counts: te.Tensor, *, frame_size: int,
                  frame_step: int) -> list[te.Tensor]:
    """SignalFramer: int16 [..., frames * frame_step] -> (int16 [..., frames, frame_size], bool [] valid);
    state int16 [rows * framer_capacity], counts int32 [1] (samples held per row)."""
    shape = _shape(data)
    frames = shape[-1] // frame_step
    rows = _elements(data) // shape[-1]
    return _helper_stage("signal_framer", [data, state, counts],
                         [([*shape[:-1], frames, frame_size], "int16"), ((), "bool")], "framer_s16",
                         [rows, frames, frame_size, frame_step, framer_capacity(frame_size, frame_step)])


def signal_stacker(data: te.Tensor, state: te.Tensor, counts: te.Tensor, *, num_channels: int,
                   stacker_left_context: int, stacker_right_context: int, stacker_step: int) -> list[te.Tensor]:
    """SignalStacker: int16 [num_channels] -> (int16 [num_channels * (left + right + 1)], bool [] valid);
    state int16 [that size], counts int32 [2] (samples held, whether a frame came)."""
    size = num_channels * (stacker_left_context + stacker_right_context + 1)
    return _helper_stage("signal_stacker", [data, state, counts], [((size,), "int16"), ((), "bool")],
                         "stacker_s16", [num_channels, stacker_left_context, size, num_channels * stacker_step])


STATE_OPERANDS = {signal_spectral_subtraction: (1,), signal_delay: (1,), signal_overlap_add: (1,),
                  signal_framer: (1, 2), signal_stacker: (1, 2)}
"""The operands each stateful kernel rewrites in place (its state), by position."""
